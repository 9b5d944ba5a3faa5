package runs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/google/uuid"
)

// The distributed executor: runs are jobs that a worker in any process
// sharing the database takes (River on PostgreSQL, runs/riverqueue), under
// a lease that fences out any other executor of the run.

// Dispatcher hands recorded runs to workers that may live in other
// processes (River on PostgreSQL). The executor records a run and its job
// in one step through it, so that no worker can pick up a job whose run is
// not committed, and no committed run lacks its job.
type Dispatcher interface {
	// Create records run (status queued) and inserts t's job, in one
	// transaction.
	Create(ctx context.Context, run store.Run, t Task) error
	// Claim claims a run for a resume and inserts the job that continues
	// it (rec, with the claimed node, in its task), in one transaction,
	// and returns the claimed node: with a value (rec.HasValue) the paused
	// run's interrupt, of concurrent claims one winning and the others
	// getting *engine.AlreadyResumedError; without one, a failed or
	// cancelled run itself (its status back to running), the others
	// getting *engine.ChainResumeError.
	Claim(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error)
	// Cancel cancels a run's job wherever it is: a job still waiting is
	// cancelled and its run marked cancelled in one transaction; a running
	// one is told to stop. It reports whether the run had a live job.
	Cancel(ctx context.Context, runID string) (bool, error)
}

// RemoteStore is what the distributed executor reads besides the service's
// Store: the chain version a job runs, and the events of runs executing
// elsewhere.
type RemoteStore interface {
	GetVersion(ctx context.Context, id string, v int) (*store.ChainVersion, error)
	EventsAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error)
}

// SharedStore is the store of a database several processes share: what
// they read of each other's runs, and the leases that make one of them a
// run's executor.
type SharedStore interface {
	RemoteStore
	store.LeaseStore
}

// DefaultLeaseTTL is how long a run's lease lasts without a heartbeat.
const DefaultLeaseTTL = 15 * time.Second

// DistributedOptions configure NewDistributed. Dispatcher and Store are
// required.
type DistributedOptions struct {
	// Dispatcher records runs with their jobs, claims resumes and cancels
	// jobs in any process.
	Dispatcher Dispatcher
	// Store reads what the jobs run and the events of runs executing
	// elsewhere, and keeps the runs' leases (the same database as the
	// service's Store).
	Store SharedStore
	// RemotePoll is how often the events of a run executing in another
	// process are read for this process's watchers; default 1s.
	RemotePoll time.Duration
	// LeaseTTL is how long a run executing here stays this process's
	// without a heartbeat; default DefaultLeaseTTL. Another process takes
	// the run over once it passed.
	LeaseTTL time.Duration
	// LeaseHeartbeat is how often the lease is renewed and the run's cancel
	// flag read; default LeaseTTL/3. It must be at most half the TTL.
	LeaseHeartbeat time.Duration
	// Owner names this process in the runs it owns; default host, pid and
	// a random suffix.
	Owner string
	// EventHints, when set, says that some process stored new events
	// (PostgreSQL's LISTEN/NOTIFY): the watched remote runs are read at
	// once rather than at the next poll.
	EventHints <-chan struct{}
}

// Distributed is the Executor of processes that share a database: saved
// runs, re-runs and resumes are recorded with a job (Dispatcher) that a
// worker in any of them executes (Execute), a run is active while its row
// says queued or running, and the watchers of a run executing elsewhere
// read its events from the store.
type Distributed struct {
	s      *Service
	disp   Dispatcher
	remote SharedStore
	ttl    time.Duration
	beat   time.Duration
	owner  string
	poll   time.Duration
	hints  <-chan struct{}

	running atomic.Int64 // runs executing here (Execute)
	mu      sync.Mutex
	pollers map[string]struct{} // runs whose events are polled for watchers here
	hintMu  sync.Mutex
	hintC   chan struct{} // closed (and replaced) at each event hint
}

// NewDistributed returns the executor over opts; give it to runs.New
// (Options.Executor), and have the Dispatcher's workers call its Execute.
func NewDistributed(opts DistributedOptions) *Distributed {
	d := &Distributed{disp: opts.Dispatcher, remote: opts.Store, ttl: opts.LeaseTTL, beat: opts.LeaseHeartbeat,
		owner: opts.Owner, poll: opts.RemotePoll, hints: opts.EventHints, pollers: map[string]struct{}{}, hintC: make(chan struct{})}
	if d.poll <= 0 {
		d.poll = time.Second
	}
	if d.ttl <= 0 {
		d.ttl = DefaultLeaseTTL
	}
	if d.beat <= 0 {
		d.beat = d.ttl / 3
	}
	if d.owner == "" {
		host, _ := os.Hostname()
		d.owner = fmt.Sprintf("%s pid %d %s", host, os.Getpid(), uuid.NewString()[:8])
	}
	return d
}

func (d *Distributed) bind(s *Service) error {
	switch {
	case d.s != nil:
		return errors.New("runs: an Executor serves one Service")
	case d.disp == nil:
		return errors.New("runs: DistributedOptions.Dispatcher is required")
	case d.remote == nil:
		return errors.New("runs: DistributedOptions.Store is required")
	case d.beat*2 > d.ttl:
		return fmt.Errorf("runs: a lease heartbeat of %v is too slow for a lease TTL of %v (at most half of it)", d.beat, d.ttl)
	}
	d.s = s
	if d.hints != nil {
		go d.relayHints(d.hints)
	}
	return nil
}

// start records the run and its job through the dispatcher.
func (d *Distributed) start(ctx context.Context, run store.Run, t Task, _ runFunc) error {
	s := d.s
	defer s.storeCall("create_run", time.Now())
	run.Status = chain.StatusQueued
	t.TraceParent = s.capture(ctx)
	if err := d.disp.Create(ctx, run, t); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}

// resume has the claim (a pause's interrupt, a failed run's status) and the
// job that continues the run commit together; the worker that takes the
// job writes the resume entry.
func (d *Distributed) resume(ctx context.Context, runID string, value *engine.ResumeValue, modified map[string]any, ropts engine.ResumeOptions) error {
	ropts.Claim = func(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error) {
		return d.disp.Claim(ctx, runID, rec)
	}
	rs, err := d.s.eng.StartResume(ctx, runID, value, modified, ropts)
	if err != nil {
		return err
	}
	if rs.Delivered() {
		return nil // the run executing here took the answer
	}
	rs.Release()
	return nil // handed on with the claim
}

// cancel cancels the run's job wherever it is.
func (d *Distributed) cancel(runID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := d.disp.Cancel(ctx, runID)
	if err != nil {
		d.s.log.Warn("cancel: the run's job could not be cancelled", "run_id", runID, "err", err)
	}
	return ok
}

// active reports whether a run is queued or executing somewhere, as its row
// says.
func (d *Distributed) active(runID string) bool {
	s := d.s
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	r, err := s.store.GetRunInfo(ctx, runID)
	return err == nil && (r.Status == chain.StatusQueued || r.Status == chain.StatusRunning)
}

// subscribed starts feeding the hub from the store when the run may
// execute in another process.
func (d *Distributed) subscribed(runID string) {
	if !d.s.localActive(runID) {
		d.watchRemote(runID)
	}
}

// stranded leaves a run whose end the store refused to its job: the job is
// retried, and its worker takes the run over.
func (d *Distributed) stranded(string, error, *ticket) bool { return false }

// requeue does nothing: jobs outlive the process.
func (d *Distributed) requeue(context.Context, RequeueStore) (int, error) { return 0, nil }

func (d *Distributed) executing() int { return int(d.running.Load()) }

// ErrLeaseLost is the cause a run executing here is cancelled with when
// another process took it over (this process's lease expired: it was
// paused, or cut off from the database). The run stops without writing
// anything more: its new owner continues it.
var ErrLeaseLost = store.Errorf(store.ELEASELOST, "another process took the run over (this process's lease on it expired); it stopped here without writing")

// ErrStillHere: Execute was handed a run that is still executing (or
// stopping) in this process: a takeover of a run this process lost but has
// not stopped yet. The job should be retried shortly; nothing was taken.
var ErrStillHere = store.Errorf(store.EUNAVAILABLE, "the run is still stopping in this process; try again shortly")

// ErrNotExecuted wraps an error that stopped Execute before the run
// executed (taking it, reading its task): nothing of the run was written,
// so the job may be tried again when the error is passing (the database
// unreachable).
var ErrNotExecuted = errors.New("the run was not executed")

// errCancelledByUser is the cause of a cancel from any process.
var errCancelledByUser = errors.New("cancelled by a user")

// Execute runs a dispatched task in this process and returns when the run
// stops (a worker's job). jobCtx ending (the job cancelled from another
// process, the worker stopping) cancels the run.
//
// The run is taken first: its lease (store.LeaseStore) makes this process
// its owner at a new epoch, which fences out any previous owner's writes,
// and a heartbeat apart from node work extends it every LeaseHeartbeat
// (a third of the TTL by default) and reads the run's cancel flag. When the lease is lost the run is cancelled
// here with ErrLeaseLost and writes nothing more.
func (d *Distributed) Execute(jobCtx context.Context, t Task) error {
	s := d.s
	if s == nil {
		return errors.New("runs: Execute before the executor was given to runs.New")
	}
	ctx, cancel := context.WithCancelCause(s.base)
	stop := context.AfterFunc(jobCtx, func() { cancel(context.Cause(jobCtx)) })
	defer stop()
	if err := s.trackOnce(t.RunID, cancel); err != nil {
		// ErrStillHere: taking the run now would hand its old execution
		// here the new epoch.
		cancel(nil)
		return err
	}
	// Counted before the lease marks the run running in the database: a
	// reader who sees it running sees it counted here too (/metrics).
	d.running.Add(1)
	defer d.running.Add(-1)
	lost := func() {
		s.log.Warn("lease lost: a write of the run was refused, another process took it over; stopping it here without writing", "run_id", t.RunID)
		cancel(ErrLeaseLost)
	}
	lease, err := d.remote.TakeRun(jobCtx, t.RunID, d.owner, d.ttl, lost)
	if err != nil || lease == nil {
		cancel(nil)
		s.untrack(t.RunID)
		if err != nil {
			return fmt.Errorf("run %s: %w: %w", t.RunID, ErrNotExecuted, err)
		}
		s.log.Info("run not executed: it is no longer queued or running", "run_id", t.RunID, "kind", t.Kind)
		return nil
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		if err := d.remote.ReleaseRun(rctx, t.RunID, lease.Epoch); err != nil {
			s.log.Warn("release the run's lease", "run_id", t.RunID, "err", err)
		}
	}()
	hbCtx, hbStop := context.WithCancel(context.Background())
	defer hbStop()
	go d.heartbeat(hbCtx, t.RunID, lease.Epoch, cancel)
	if lease.CancelRequested {
		cancel(errCancelledByUser)
	}
	// What the run needs is read under the job's context, not the run's: a
	// cancel that arrives now must end the run as cancelled (the engine
	// sees it at once), not leave it "running" with nothing executing it.
	fn, err := d.taskFunc(jobCtx, t)
	if err != nil {
		cancel(nil)
		s.untrack(t.RunID)
		s.hub.End(t.RunID)
		return fmt.Errorf("%w: %w", ErrNotExecuted, err)
	}
	t0 := &ticket{done: make(chan struct{})}
	kind := t.Kind
	if t.Takeover {
		kind = kindTakeover
	}
	s.execute(t.RunID, kind, t.TraceParent, ctx, cancel, fn, t0)
	if errors.Is(context.Cause(ctx), ErrLeaseLost) {
		// Not a failure of the run: its new owner goes on with it.
		return nil
	}
	return t0.err
}

// trackOnce tracks a dispatched run unless it is tracked already.
func (s *Service) trackOnce(id string, cancel context.CancelCauseFunc) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base.Err() != nil {
		return ErrShutdown
	}
	if _, busy := s.active[id]; busy {
		return ErrStillHere
	}
	s.active[id] = cancel
	s.wg.Add(1)
	return nil
}

// versionPlan reads the chain version a task names and compiles it, once,
// before the run starts.
func (d *Distributed) versionPlan(ctx context.Context, t Task) (*chain.Plan, error) {
	cv, err := d.remote.GetVersion(ctx, t.ChainID, t.ChainVersion)
	if err != nil {
		return nil, fmt.Errorf("run %s: chain %s version %d: %w", t.RunID, t.ChainID, t.ChainVersion, err)
	}
	return d.s.compileStarted(ctx, t.ChainID, t.ChainVersion, cv.Doc), nil
}

// taskFunc builds what executes a task, read after the run was taken (so
// that a takeover sees every event and entry the previous owner stored).
func (d *Distributed) taskFunc(ctx context.Context, t Task) (runFunc, error) {
	s := d.s
	if t.Takeover {
		log, err := s.store.Load(ctx, t.RunID)
		if err == nil {
			maxSeq, err := s.store.MaxSeq(ctx, t.RunID)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", t.RunID, err)
			}
			s.log.Info("taking the run over from its log", "run_id", t.RunID, "entries", len(log), "events", maxSeq)
			return func(ctx context.Context) (*engine.Result, error) {
				return s.eng.Takeover(ctx, t.RunID, log, t.Resume, engine.ResumeOptions{NextSeq: maxSeq + 1})
			}, nil
		}
		var ce *engine.ChainCheckpointError
		if !errors.As(err, &ce) || t.Kind == store.KindResume {
			return nil, fmt.Errorf("run %s: take over: %w", t.RunID, err)
		}
		// Nothing logged: the previous owner died before the run's start
		// entry; it starts as the job said.
	}
	switch t.Kind {
	case store.KindRun, store.KindPinned:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		plan, err := d.versionPlan(ctx, t)
		if err != nil {
			return nil, err
		}
		input := info.Input
		if input == nil {
			input = map[string]any{}
		}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, plan, input, engine.RunOptions{RunID: t.RunID, UsePins: t.Kind == store.KindPinned})
		}, nil
	case store.KindRerun:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		var plan *chain.Plan // the run's own version, unless one was chosen
		if t.ChainID != "" && t.ChainVersion > 0 {
			if plan, err = d.versionPlan(ctx, t); err != nil {
				return nil, err
			}
		}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.RerunOn(ctx, t.ParentRunID, t.FromNode, plan, info.Input, engine.RunOptions{RunID: t.RunID, ParentRunID: t.ParentRunID, ModifiedState: t.Modified, PatchedBy: t.PatchedBy})
		}, nil
	case store.KindNode:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		plan, err := d.versionPlan(ctx, t)
		if err != nil {
			return nil, err
		}
		src := engine.NodeRunSource{FromRun: t.ParentRunID, Pinned: t.Pinned, Input: info.Input, State: t.Modified}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.RunNode(ctx, plan, t.NodeID, src, engine.RunOptions{RunID: t.RunID})
		}, nil
	case store.KindResume:
		maxSeq, err := s.store.MaxSeq(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.ContinueResume(ctx, t.RunID, t.Resume, engine.ResumeOptions{NextSeq: maxSeq + 1})
		}, nil
	}
	return nil, fmt.Errorf("run %s: unknown task kind %q", t.RunID, t.Kind)
}

// heartbeat extends a run's lease every LeaseHeartbeat until ctx ends, apart
// from node work, and cancels the run when the lease is lost (another
// process took it over), when it could not be renewed for a whole TTL (the
// reaper may have given the run to another process: stop writing rather
// than race it), or when a cancel was requested (the flag is read here, so
// a cancel lands even when River's notification is lost).
func (d *Distributed) heartbeat(ctx context.Context, runID string, epoch int64, cancel context.CancelCauseFunc) {
	log := d.s.log
	tick := time.NewTicker(d.beat)
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, d.beat)
		asked, err := d.remote.RenewRun(rctx, runID, epoch, d.ttl)
		rcancel()
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			log.Warn("lease lost: another process took the run over; stopping it here without writing", "run_id", runID, "epoch", epoch)
			cancel(ErrLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if time.Since(renewed) >= d.ttl {
				log.Warn("lease lost: it could not be renewed within its TTL; stopping the run here", "run_id", runID, "epoch", epoch, "err", err)
				cancel(ErrLeaseLost)
				return
			}
			log.Warn("lease renewal failed; retrying", "run_id", runID, "err", err)
		default:
			renewed = time.Now()
			if asked {
				cancel(errCancelledByUser)
			}
		}
	}
}

// watchRemote feeds the hub, for the watchers of a run executing in another
// process, with the run's new events from the store every poll period, and
// ends the topic once the run has stopped and every event was read. One
// poller per run, whatever its number of watchers; it stops when the last
// watcher leaves or the run starts executing here.
func (d *Distributed) watchRemote(runID string) {
	s := d.s
	d.mu.Lock()
	if _, on := d.pollers[runID]; on {
		d.mu.Unlock()
		return
	}
	d.pollers[runID] = struct{}{}
	d.mu.Unlock()
	go func() {
		defer func() {
			d.mu.Lock()
			delete(d.pollers, runID)
			d.mu.Unlock()
		}()
		ctx := s.base
		// Taken before the first read, as before every read below: a batch
		// stored after that read wakes the reader.
		hint := d.hint()
		last, err := s.store.MaxSeq(ctx, runID)
		if err != nil {
			last = 0 // the watchers skip what they already sent
		}
		finalSeq, waited := int64(-1), 0
		tick := time.NewTicker(d.poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-hint:
			}
			// The next hint's channel, taken before this round reads: a
			// batch committed after the read's snapshot wakes the next
			// round at once instead of waiting for the poll.
			hint = d.hint()
			if s.localActive(runID) || s.hub.WatchersOf(runID) == 0 {
				return
			}
			// The status first: a run that stopped before this read has
			// all its events stored by the time they are read below.
			info, err := s.store.GetRunInfo(ctx, runID)
			if err != nil {
				continue
			}
			stopped := info.Status != chain.StatusQueued && info.Status != chain.StatusRunning
			if stopped && finalSeq < 0 {
				// The end entry names the run's last event seq; the
				// executing process may store those events a moment after
				// the status, so the topic ends only once they are read.
				finalSeq = 0
				if log, err := s.store.Load(ctx, runID); err == nil && len(log) > 0 {
					finalSeq = log[len(log)-1].EventSeq
				}
			}
			for {
				evs, err := d.remote.EventsAfter(ctx, runID, last, 1000)
				if err != nil {
					break
				}
				for _, ev := range evs {
					s.hub.Emit(ev)
					last = ev.Seq
				}
				if len(evs) < 1000 {
					break
				}
			}
			if stopped {
				waited++
				// Ten periods without the last events: they were lost
				// (the executing process died); the store holds the rest.
				if last >= finalSeq || waited > 10 {
					s.hub.End(runID)
					return
				}
			}
		}
	}()
}

// hint returns a channel closed at the next event hint.
func (d *Distributed) hint() <-chan struct{} {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	return d.hintC
}

// relayHints wakes every remote poller on each hint.
func (d *Distributed) relayHints(hints <-chan struct{}) {
	for {
		select {
		case <-d.s.base.Done():
			return
		case <-hints:
		}
		d.hintMu.Lock()
		close(d.hintC)
		d.hintC = make(chan struct{})
		d.hintMu.Unlock()
	}
}
