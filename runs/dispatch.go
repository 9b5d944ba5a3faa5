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
	Modified     map[string]any `json:"modified,omitempty"` // rerun: the state patch
	// Resume is an accepted resume with a value, its interrupt claimed in
	// the transaction that inserted this job; the worker writes its entry.
	Resume *engine.ResumeRecord `json:"resume,omitempty"`
}

// Dispatcher hands recorded runs to workers that may live in other
// processes (River on PostgreSQL). The service records a run and its job
// in one step through it, so that no worker can pick up a job whose run is
// not committed, and no committed run lacks its job.
type Dispatcher interface {
	// Create records run (status queued) and inserts t's job, in one
	// transaction.
	Create(ctx context.Context, run store.Run, t Task) error
	// Dispatch inserts the job of a run already recorded (an accepted
	// resume).
	Dispatch(ctx context.Context, t Task) error
	// Claim claims a paused run's interrupt and inserts the job that
	// continues it (rec, with the claimed node, in its task), in one
	// transaction, and returns the claimed node. Of concurrent claims one
	// wins; the others get *engine.AlreadyResumedError.
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

// Execute runs a dispatched task in this process and returns when the run
// stops (a worker's job). jobCtx ending (the job cancelled from another
// process, the worker stopping) cancels the run.
func (s *Service) Execute(jobCtx context.Context, t Task) error {
	if s.disp == nil {
		return errors.New("runs: Execute needs a Dispatcher")
	}
	var fn func(context.Context) (*engine.Result, error)
	switch t.Kind {
	case store.KindRun:
		info, err := s.store.GetRunInfo(jobCtx, t.RunID)
		if err != nil {
			return fmt.Errorf("run %s: %w", t.RunID, err)
		}
		cv, err := s.remote.GetVersion(jobCtx, t.ChainID, t.ChainVersion)
		if err != nil {
			return fmt.Errorf("run %s: chain %s version %d: %w", t.RunID, t.ChainID, t.ChainVersion, err)
		}
		input := info.Input
		if input == nil {
			input = map[string]any{}
		}
		fn = func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, cv.Doc, input, engine.RunOptions{RunID: t.RunID})
		}
	case store.KindRerun:
		info, err := s.store.GetRunInfo(jobCtx, t.RunID)
		if err != nil {
			return fmt.Errorf("run %s: %w", t.RunID, err)
		}
		fn = func(ctx context.Context) (*engine.Result, error) {
			return s.eng.RerunFrom(ctx, t.ParentRunID, t.FromNode, info.Input, engine.RunOptions{RunID: t.RunID, ParentRunID: t.ParentRunID, ModifiedState: t.Modified})
		}
	case store.KindResume:
		maxSeq, err := s.store.MaxSeq(jobCtx, t.RunID)
		if err != nil {
			return fmt.Errorf("run %s: %w", t.RunID, err)
		}
		fn = func(ctx context.Context) (*engine.Result, error) {
			return s.eng.ContinueResume(ctx, t.RunID, t.Resume, engine.ResumeOptions{NextSeq: maxSeq + 1})
		}
	default:
		return fmt.Errorf("run %s: unknown task kind %q", t.RunID, t.Kind)
	}
	ctx, cancel := context.WithCancelCause(s.base)
	stop := context.AfterFunc(jobCtx, func() { cancel(context.Cause(jobCtx)) })
	defer stop()
	if !s.track(t.RunID, cancel) {
		cancel(nil)
		return ErrShutdown
	}
	t0 := &ticket{done: make(chan struct{})}
	s.running.Add(1)
	defer s.running.Add(-1)
	s.execute(t.RunID, t.Kind, ctx, cancel, fn, t0)
	return t0.err
}

// dispatchCreate records a run and its job through the dispatcher.
func (s *Service) dispatchCreate(ctx context.Context, run store.Run, t Task) error {
	defer s.storeCall("create_run", time.Now())
	run.Status = engine.StatusQueued
	if err := s.disp.Create(ctx, run, t); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	return nil
}

// remoteActive reports whether a run is queued or executing somewhere,
// as its row says.
func (s *Service) remoteActive(runID string) bool {
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	r, err := s.store.GetRunInfo(ctx, runID)
	return err == nil && (r.Status == engine.StatusQueued || r.Status == engine.StatusRunning)
}

// watchRemote feeds the hub, for the watchers of a run executing in another
// process, with the run's new events from the store every poll period, and
// ends the topic once the run has stopped and every event was read. One
// poller per run, whatever its number of watchers; it stops when the last
// watcher leaves or the run starts executing here.
func (s *Service) watchRemote(runID string) {
	s.mu.Lock()
	if _, on := s.pollers[runID]; on {
		s.mu.Unlock()
		return
	}
	s.pollers[runID] = struct{}{}
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.pollers, runID)
			s.mu.Unlock()
		}()
		ctx := s.base
		// Taken before the first read, as before every read below: a batch
		// stored after that read wakes the reader.
		hint := s.hint()
		last, err := s.store.MaxSeq(ctx, runID)
		if err != nil {
			last = 0 // the watchers skip what they already sent
		}
		finalSeq, waited := int64(-1), 0
		tick := time.NewTicker(s.poll)
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
			hint = s.hint()
			if s.localActive(runID) || s.hub.WatchersOf(runID) == 0 {
				return
			}
			// The status first: a run that stopped before this read has
			// all its events stored by the time they are read below.
			info, err := s.store.GetRunInfo(ctx, runID)
			if err != nil {
				continue
			}
			stopped := info.Status != engine.StatusQueued && info.Status != engine.StatusRunning
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
				evs, err := s.remote.EventsAfter(ctx, runID, last, 1000)
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
func (s *Service) hint() <-chan struct{} {
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	return s.hintC
}

// relayHints wakes every remote poller on each hint.
func (s *Service) relayHints(hints <-chan struct{}) {
	for {
		select {
		case <-s.base.Done():
			return
		case <-hints:
		}
		s.hintMu.Lock()
		close(s.hintC)
		s.hintC = make(chan struct{})
		s.hintMu.Unlock()
	}
}
