package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Task is a recorded run as a worker in any process executes it: what to
// run, never the closure. It travels as a job's arguments, so it holds ids
// and small values only (a run's input stays in its row).
type Task struct {
	RunID        string         `json:"run_id"`
	Kind         string         `json:"kind"` // run, rerun, resume
	ChainID      string         `json:"chain_id,omitempty"`
	ChainVersion int            `json:"chain_version,omitempty"`
	ParentRunID  string         `json:"parent_run_id,omitempty"` // rerun: the run re-run
	FromNode     string         `json:"from_node,omitempty"`
	Modified     map[string]any `json:"modified,omitempty"`   // rerun: the state patch; node: the state given
	PatchedBy    string         `json:"patched_by,omitempty"` // rerun: who sent the state patch
	// NodeID and Pinned: a node run alone (kind node), its upstream outputs
	// given explicitly; ParentRunID is then the run the rest comes from.
	NodeID string         `json:"node_id,omitempty"`
	Pinned map[string]any `json:"pinned,omitempty"`
	// Resume is an accepted resume with a value, its interrupt claimed in
	// the transaction that inserted this job; the worker writes its entry.
	Resume *engine.ResumeRecord `json:"resume,omitempty"`
	// Takeover: the run's previous executor stopped without ending it (its
	// lease expired); the worker continues the run from its stored log, or
	// starts it as above when nothing was logged.
	Takeover bool `json:"takeover,omitempty"`
	// TraceParent is the W3C trace context of the request that started the
	// run, which its trace continues (tracing on).
	TraceParent string `json:"traceparent,omitempty"`
}

// Dispatcher hands recorded runs to workers that may live in other
// processes (River on PostgreSQL). The service records a run and its job
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

// RemoteStore is what a service with a Dispatcher reads besides Store: the
// chain version a job runs, and the events of runs executing elsewhere.
type RemoteStore interface {
	GetVersion(ctx context.Context, id string, v int) (*store.ChainVersion, error)
	EventsAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error)
}

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
func (s *Service) Execute(jobCtx context.Context, t Task) error {
	if s.disp == nil {
		return errors.New("runs: Execute needs a Dispatcher")
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
	lost := func() {
		s.log.Warn("lease lost: a write of the run was refused, another process took it over; stopping it here without writing", "run_id", t.RunID)
		cancel(ErrLeaseLost)
	}
	lease, err := s.leases.TakeRun(jobCtx, t.RunID, s.owner, s.ttl, lost)
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
		if err := s.leases.ReleaseRun(rctx, t.RunID, lease.Epoch); err != nil {
			s.log.Warn("release the run's lease", "run_id", t.RunID, "err", err)
		}
	}()
	hbCtx, hbStop := context.WithCancel(context.Background())
	defer hbStop()
	go s.heartbeat(hbCtx, t.RunID, lease.Epoch, cancel)
	if lease.CancelRequested {
		cancel(errCancelledByUser)
	}
	fn, err := s.taskFunc(ctx, t)
	if err != nil {
		cancel(nil)
		s.untrack(t.RunID)
		s.hub.End(t.RunID)
		return fmt.Errorf("%w: %w", ErrNotExecuted, err)
	}
	t0 := &ticket{done: make(chan struct{})}
	s.running.Add(1)
	defer s.running.Add(-1)
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

// taskFunc builds what executes a task, read after the run was taken (so
// that a takeover sees every event and entry the previous owner stored).
func (s *Service) taskFunc(ctx context.Context, t Task) (func(context.Context) (*engine.Result, error), error) {
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
	case store.KindRun:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		cv, err := s.remote.GetVersion(ctx, t.ChainID, t.ChainVersion)
		if err != nil {
			return nil, fmt.Errorf("run %s: chain %s version %d: %w", t.RunID, t.ChainID, t.ChainVersion, err)
		}
		input := info.Input
		if input == nil {
			input = map[string]any{}
		}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, cv.Doc, input, engine.RunOptions{RunID: t.RunID})
		}, nil
	case store.KindRerun:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		var doc *engine.Chain // the run's own version, unless one was chosen
		if t.ChainID != "" && t.ChainVersion > 0 {
			cv, err := s.remote.GetVersion(ctx, t.ChainID, t.ChainVersion)
			if err != nil {
				return nil, fmt.Errorf("run %s: chain %s version %d: %w", t.RunID, t.ChainID, t.ChainVersion, err)
			}
			doc = cv.Doc
		}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.RerunOn(ctx, t.ParentRunID, t.FromNode, doc, info.Input, engine.RunOptions{RunID: t.RunID, ParentRunID: t.ParentRunID, ModifiedState: t.Modified, PatchedBy: t.PatchedBy})
		}, nil
	case store.KindNode:
		info, err := s.store.GetRunInfo(ctx, t.RunID)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", t.RunID, err)
		}
		cv, err := s.remote.GetVersion(ctx, t.ChainID, t.ChainVersion)
		if err != nil {
			return nil, fmt.Errorf("run %s: chain %s version %d: %w", t.RunID, t.ChainID, t.ChainVersion, err)
		}
		src := engine.NodeRunSource{FromRun: t.ParentRunID, Pinned: t.Pinned, Input: info.Input, State: t.Modified}
		return func(ctx context.Context) (*engine.Result, error) {
			return s.eng.RunNode(ctx, cv.Doc, t.NodeID, src, engine.RunOptions{RunID: t.RunID})
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
func (s *Service) heartbeat(ctx context.Context, runID string, epoch int64, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(s.beat)
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, s.beat)
		asked, err := s.leases.RenewRun(rctx, runID, epoch, s.ttl)
		rcancel()
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			s.log.Warn("lease lost: another process took the run over; stopping it here without writing", "run_id", runID, "epoch", epoch)
			cancel(ErrLeaseLost)
			return
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if time.Since(renewed) >= s.ttl {
				s.log.Warn("lease lost: it could not be renewed within its TTL; stopping the run here", "run_id", runID, "epoch", epoch, "err", err)
				cancel(ErrLeaseLost)
				return
			}
			s.log.Warn("lease renewal failed; retrying", "run_id", runID, "err", err)
		default:
			renewed = time.Now()
			if asked {
				cancel(errCancelledByUser)
			}
		}
	}
}

// dispatchCreate records a run and its job through the dispatcher.
func (s *Service) dispatchCreate(ctx context.Context, run store.Run, t Task) error {
	defer s.storeCall("create_run", time.Now())
	run.Status = engine.StatusQueued
	t.TraceParent = s.capture(ctx)
	if err := s.disp.Create(ctx, run, t); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}
