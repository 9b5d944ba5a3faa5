package riverqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
)

// Store is what the queue needs of the studio's PostgreSQL store: the pool
// River runs on, transactions it shares, and the two run writes that must
// commit with a job change.
type Store interface {
	DB
	WithTx(ctx context.Context, fn func(pgx.Tx) error) error
	CreateRunTx(ctx context.Context, tx pgx.Tx, r store.Run) error
	CancelQueuedTx(ctx context.Context, tx pgx.Tx, runID string) (bool, error)
	ClaimInterruptTx(ctx context.Context, tx pgx.Tx, runID, pauseID string) (string, error)
	// The lease's transactional parts (store/postgres/lease.go).
	RequestCancelTx(ctx context.Context, tx pgx.Tx, runID string) error
	ClaimFailedTx(ctx context.Context, tx pgx.Tx, runID string) error
	TakeoverTx(ctx context.Context, tx pgx.Tx, runID string) error
	ExpiredRunsTx(ctx context.Context, tx pgx.Tx, jobKind string, grace time.Duration, limit int) ([]postgres.ExpiredRun, error)
}

// JobKind is the River kind of a studio run's job.
const JobKind = "studio_run"

// RunArgs are a run job's arguments: the run's task.
type RunArgs struct {
	runs.Task
}

// Kind implements river.JobArgs.
func (RunArgs) Kind() string { return JobKind }

// Options configure New.
type Options struct {
	// Workers is how many runs this process executes at once; 0 makes an
	// insert-only queue (no worker here).
	Workers int
	Logger  *slog.Logger
	// LeaseTTL is the runs' lease TTL (runs.DistributedOptions.LeaseTTL;
	// default runs.DefaultLeaseTTL): a job started longer ago than this
	// whose run has no live lease lost its worker.
	LeaseTTL time.Duration
	// ReapEvery is how often a worker process looks for runs whose lease
	// expired, to take them over (default 5s). Of all the processes, one
	// reaps per period.
	ReapEvery time.Duration
}

// reaperLock is the first key of the advisory lock one reaper per period
// holds; the second is the hash of the schema, because advisory locks are
// database-wide and two studios in two schemas of one database are two
// clusters whose reapers must not skip each other's rounds.
const reaperLock int32 = 0x5354_5245 // "STRE"

// reaperLockSQL takes the reaper's lock for this schema, if it is free.
const reaperLockSQL = `SELECT pg_try_advisory_xact_lock($1::int4, hashtext(current_schema()))`

// Queue runs the studio's runs as River jobs: it is the runs.Dispatcher of
// the run service's distributed executor (runs.Distributed), and its
// workers call the executor's Execute.
type Queue struct {
	db     Store
	client *river.Client[pgx.Tx]
	exec   atomic.Pointer[runs.Distributed]
	log    *slog.Logger
	ttl    time.Duration
	reap   time.Duration
	work   bool
	done   chan struct{} // closed when the reaper stopped
	halt   context.CancelFunc

	// beforeInsert, in tests, fails a claim between the claim and its
	// job's insert (a process dying there).
	beforeInsert func(runID string) error
}

// New builds the River client on db's pool. Call Start with the run
// service's executor to begin working jobs.
func New(db Store, opts Options) (*Queue, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = runs.DefaultLeaseTTL
	}
	if opts.ReapEvery <= 0 {
		opts.ReapEvery = 5 * time.Second
	}
	q := &Queue{db: db, log: opts.Logger, ttl: opts.LeaseTTL, reap: opts.ReapEvery, work: opts.Workers > 0}
	cfg := &river.Config{
		Logger: opts.Logger,
		// A run lasts as long as its chain says (its own timeout); River's
		// default of one minute would cancel long runs.
		JobTimeout: -1,
		// River's rescue re-runs a job that has been running "too long",
		// from scratch: every checkpoint and event of the run would be
		// written again, and a run that is merely long (a chain may run for
		// hours) would get a second executor. Runs whose worker died are
		// taken over by the lease's reaper instead, from their log; River's
		// rescue is kept a year away.
		RescueStuckJobsAfter: 365 * 24 * time.Hour,
		// A run waits for River's fetch, not for the studio: River fetches
		// at most once per FetchCooldown, and an inserting client sends at
		// most one insert notification per FetchCooldown, so a job inserted
		// right after another waits for a freed slot or the next poll.
		// River's 100 ms and 1 s made a run's queue-to-start p95 ~200 ms
		// at a tenth of the cluster's capacity (docs/benchmarks.md).
		FetchCooldown:     FetchCooldown,
		FetchPollInterval: FetchPollInterval,
	}
	if q.work {
		workers := river.NewWorkers()
		if err := river.AddWorkerSafely(workers, &runWorker{q: q}); err != nil {
			return nil, fmt.Errorf("river: %w", err)
		}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.Workers}}
	}
	c, err := river.NewClient(riverpgxv5.New(db.Pool()), cfg)
	if err != nil {
		return nil, fmt.Errorf("river: client: %w", err)
	}
	q.client = c
	return q, nil
}

// Start begins working jobs on exec, once the run service it was given to
// is built (a no-op for an insert-only queue).
func (q *Queue) Start(ctx context.Context, exec *runs.Distributed) error {
	q.exec.Store(exec)
	if !q.work {
		return nil
	}
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("river: start: %w", err)
	}
	rctx, halt := context.WithCancel(context.WithoutCancel(ctx))
	q.halt, q.done = halt, make(chan struct{})
	go q.reaper(rctx)
	return nil
}

// Stop stops fetching jobs and waits for the running ones (cancel them
// through the run service's Shutdown), and stops the reaper.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.work {
		return nil
	}
	q.halt()
	<-q.done
	return q.client.Stop(ctx)
}

// River's fetch pacing (see New); a fetch is one indexed query.
const (
	FetchCooldown     = 20 * time.Millisecond
	FetchPollInterval = 250 * time.Millisecond
)

// insertOpts: one attempt. A run that could not execute is not retried
// from scratch: its events and checkpoints would be written twice.
var insertOpts = &river.InsertOpts{MaxAttempts: 1}

// Create implements runs.Dispatcher: the run row and its job commit
// together.
func (q *Queue) Create(ctx context.Context, run store.Run, t runs.Task) error {
	return q.db.WithTx(ctx, func(tx pgx.Tx) error {
		if err := q.db.CreateRunTx(ctx, tx, run); err != nil {
			return err
		}
		if _, err := q.client.InsertTx(ctx, tx, RunArgs{t}, insertOpts); err != nil {
			return fmt.Errorf("river: insert job of run %s: %w", run.ID, err)
		}
		return nil
	})
}

// Claim implements runs.Dispatcher: the claim (a pause's interrupt, or a
// failed run's status), the run's new epoch and the job that continues the
// run commit together, so a claimed run always has its continuation and a
// job never continues an unclaimed one.
func (q *Queue) Claim(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error) {
	var node string
	err := q.db.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		if rec.HasValue {
			node, err = q.db.ClaimInterruptTx(ctx, tx, runID, rec.PauseID)
		} else {
			err = q.db.ClaimFailedTx(ctx, tx, runID)
		}
		if err != nil {
			return err
		}
		if rec.HasValue {
			rec.PauseID = node // the engine chose it; the claim confirms it
		}
		if q.beforeInsert != nil {
			if err := q.beforeInsert(runID); err != nil {
				return err
			}
		}
		if _, err := q.client.InsertTx(ctx, tx, RunArgs{runs.Task{RunID: runID, Kind: store.KindResume, Resume: &rec}}, insertOpts); err != nil {
			return fmt.Errorf("river: insert job of run %s: %w", runID, err)
		}
		return nil
	})
	return node, err
}

// liveJob finds a run's newest job that has not finished, locked for the
// rest of tx.
func liveJob(ctx context.Context, tx pgx.Tx, runID string) (int64, bool, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM river_job
WHERE kind = $1 AND args->>'run_id' = $2 AND state NOT IN ('completed', 'cancelled', 'discarded')
ORDER BY id DESC LIMIT 1 FOR UPDATE`, JobKind, runID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// Cancel implements runs.Dispatcher: River's cancel of the job and, for a
// run no worker started, its cancelled status, else its cancel flag, in one
// transaction. A running job hears it through River's notifier, or the
// lease's heartbeat reads the flag (notifications lost, or the job
// replaced by a takeover).
func (q *Queue) Cancel(ctx context.Context, runID string) (bool, error) {
	found := false
	err := q.db.WithTx(ctx, func(tx pgx.Tx) error {
		id, ok, err := liveJob(ctx, tx, runID)
		if err != nil || !ok {
			return err
		}
		found = true
		if _, err := q.client.JobCancelTx(ctx, tx, id); err != nil {
			return fmt.Errorf("river: cancel job %d of run %s: %w", id, runID, err)
		}
		queued, err := q.db.CancelQueuedTx(ctx, tx, runID)
		if err != nil || queued {
			return err
		}
		return q.db.RequestCancelTx(ctx, tx, runID)
	})
	return found, err
}

// runWorker executes a run job through the run service's executor.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
}

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	exec := w.q.exec.Load()
	if exec == nil {
		return river.JobSnooze(time.Second)
	}
	err := exec.Execute(ctx, job.Args.Task)
	switch {
	case errors.Is(err, runs.ErrShutdown):
		// This process is stopping: another worker takes it.
		return river.JobSnooze(time.Second)
	case errors.Is(err, runs.ErrStillHere):
		// A takeover of a run still stopping here: once it stopped.
		return river.JobSnooze(time.Second)
	case errors.Is(err, runs.ErrNotExecuted) && store.ErrorCode(err) == store.EUNAVAILABLE:
		// The database could not be reached before anything was written:
		// the job is tried again rather than lost (one attempt each).
		w.q.log.Warn("run not executed, the database is unreachable; trying again in 5s", "run_id", job.Args.RunID, "err", err)
		return river.JobSnooze(5 * time.Second)
	}
	return err
}

// reaper takes over, every ReapEvery, the runs whose lease expired.
func (q *Queue) reaper(ctx context.Context) {
	defer close(q.done)
	t := time.NewTicker(q.reap)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := q.reapOnce(ctx); err != nil && ctx.Err() == nil {
			q.log.Warn("reaper: taking over runs whose lease expired failed", "err", err)
		} else if n > 0 {
			q.log.Info("reaper: took over runs whose lease expired", "runs", n)
		}
	}
}

// reapOnce takes over the runs whose lease expired, when this process wins
// this period's advisory lock (one reaper per period in the cluster, and no
// leader to wait for when a process dies). Each run's epoch bump (its last
// owner can no longer write) and its takeover job commit together.
func (q *Queue) reapOnce(ctx context.Context) (int, error) {
	n := 0
	err := q.db.WithTx(ctx, func(tx pgx.Tx) error {
		n = 0
		var won bool
		if err := tx.QueryRow(ctx, reaperLockSQL, reaperLock).Scan(&won); err != nil || !won {
			return err
		}
		expired, err := q.db.ExpiredRunsTx(ctx, tx, JobKind, q.ttl, 100)
		if err != nil {
			return err
		}
		for _, r := range expired {
			var args RunArgs
			if err := json.Unmarshal(r.JobArgs, &args); err != nil {
				return fmt.Errorf("run %s: its job's arguments: %w", r.ID, err)
			}
			args.Takeover = true
			if err := q.db.TakeoverTx(ctx, tx, r.ID); err != nil {
				return err
			}
			if _, err := q.client.InsertTx(ctx, tx, args, insertOpts); err != nil {
				return fmt.Errorf("river: insert the takeover job of run %s: %w", r.ID, err)
			}
			q.log.Info("reaper: the run's lease expired; another worker takes it over from its log", "run_id", r.ID)
			n++
		}
		return nil
	})
	return n, err
}
