package riverqueue

import (
	"context"
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
)

// Store is what the queue needs of the studio's PostgreSQL store: the pool
// River runs on, transactions it shares, and the two run writes that must
// commit with a job change.
type Store interface {
	DB
	WithTx(ctx context.Context, fn func(pgx.Tx) error) error
	CreateRunTx(ctx context.Context, tx pgx.Tx, r store.Run) error
	CancelQueuedTx(ctx context.Context, tx pgx.Tx, runID string) (bool, error)
	ClaimInterruptTx(ctx context.Context, tx pgx.Tx, runID string) (string, error)
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
	// CancelCheck is how often an executing run's job is checked for a
	// cancel, in case River's notification was lost; default 500ms.
	CancelCheck time.Duration
}

// Queue runs the studio's runs as River jobs: it is the run service's
// runs.Dispatcher, and its workers call the service's Execute.
type Queue struct {
	db     Store
	client *river.Client[pgx.Tx]
	svc    atomic.Pointer[runs.Service]
	log    *slog.Logger
	check  time.Duration
	work   bool
}

// New builds the River client on db's pool. Call Start with the run service
// to begin working jobs.
func New(db Store, opts Options) (*Queue, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CancelCheck <= 0 {
		opts.CancelCheck = 500 * time.Millisecond
	}
	q := &Queue{db: db, log: opts.Logger, check: opts.CancelCheck, work: opts.Workers > 0}
	cfg := &river.Config{
		Logger: opts.Logger,
		// A run lasts as long as its chain says (its own timeout); River's
		// default of one minute would cancel long runs.
		JobTimeout:           -1,
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

// Start begins working jobs on svc (a no-op for an insert-only queue).
func (q *Queue) Start(ctx context.Context, svc *runs.Service) error {
	q.svc.Store(svc)
	if !q.work {
		return nil
	}
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("river: start: %w", err)
	}
	return nil
}

// Stop stops fetching jobs and waits for the running ones (cancel them
// through the run service's Shutdown).
func (q *Queue) Stop(ctx context.Context) error {
	if !q.work {
		return nil
	}
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

// Dispatch implements runs.Dispatcher.
func (q *Queue) Dispatch(ctx context.Context, t runs.Task) error {
	return q.db.WithTx(ctx, func(tx pgx.Tx) error {
		if _, err := q.client.InsertTx(ctx, tx, RunArgs{t}, insertOpts); err != nil {
			return fmt.Errorf("river: insert job of run %s: %w", t.RunID, err)
		}
		return nil
	})
}

// Claim implements runs.Dispatcher: the interrupt's claim and the job that
// continues the run commit together, so a claimed pause always has its
// continuation and a job never continues an unclaimed one.
func (q *Queue) Claim(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error) {
	var node string
	err := q.db.WithTx(ctx, func(tx pgx.Tx) error {
		var err error
		if node, err = q.db.ClaimInterruptTx(ctx, tx, runID); err != nil {
			return err
		}
		rec.NodeID = node
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
// run no worker started, its cancelled status, in one transaction. A
// running job hears it through River's notifier, or the worker's periodic
// check.
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
		_, err = q.db.CancelQueuedTx(ctx, tx, runID)
		return err
	})
	return found, err
}

// runWorker executes a run job through the run service.
type runWorker struct {
	river.WorkerDefaults[RunArgs]
	q *Queue
}

func (w *runWorker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	svc := w.q.svc.Load()
	if svc == nil {
		return river.JobSnooze(time.Second)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go w.q.watchCancel(ctx, cancel, job.ID)
	err := svc.Execute(ctx, job.Args.Task)
	if errors.Is(err, runs.ErrShutdown) {
		// This process is stopping: another worker takes it.
		return river.JobSnooze(time.Second)
	}
	return err
}

// watchCancel cancels a run whose job was cancelled from another process,
// checking the job's row every period in case River's notification was
// lost.
func (q *Queue) watchCancel(ctx context.Context, cancel context.CancelCauseFunc, jobID int64) {
	t := time.NewTicker(q.check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var asked bool
		err := q.db.Pool().QueryRow(ctx, `SELECT metadata ? 'cancel_attempted_at' FROM river_job WHERE id = $1`, jobID).Scan(&asked)
		if err == nil && asked {
			cancel(errors.New("cancelled by a user"))
			return
		}
	}
}
