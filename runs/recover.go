package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// RequeueStore is what Requeue reads: the runs left queued and the chain
// versions they run.
type RequeueStore interface {
	ListRunsPage(ctx context.Context, f store.RunFilter) (store.RunPage, error)
	GetVersion(ctx context.Context, id string, v int) (*store.ChainVersion, error)
}

// Requeue queues again, oldest first, the runs a previous process accepted
// and never started: start-up recovery (store.Housekeeping's
// RecoverInterrupted) leaves a saved chain's run that has no start entry
// queued, and its row holds what it runs (the chain version, the input).
// Call it once at start-up, after recovery and before serving. They are
// queued whatever the queue's limit (they were admitted before the stop).
// A run whose chain version cannot be read ends failed, saying why. It is
// the Executor's to do: where jobs outlive the process, it does nothing.
func (s *Service) Requeue(ctx context.Context, st RequeueStore) (int, error) {
	return s.exec.requeue(ctx, st)
}

// requeueQueued is Requeue for the embedded executor: this process's queue
// is the only place the runs were waiting.
func (s *Service) requeueQueued(ctx context.Context, st RequeueStore) (int, error) {
	var queued []store.Run
	f := store.RunFilter{Status: chain.StatusQueued, Limit: 1000}
	for {
		page, err := st.ListRunsPage(ctx, f)
		if err != nil {
			return 0, fmt.Errorf("requeue runs: %w", err)
		}
		queued = append(queued, page.Runs...)
		if page.Older == "" {
			break
		}
		f.Before = page.Older
	}
	slices.Reverse(queued) // the list is newest first
	n := 0
	for _, r := range queued {
		if r.Kind != store.KindRun || r.ChainID == "" || r.ChainVersion <= 0 {
			continue // what recovery did not leave queued
		}
		cv, err := st.GetVersion(ctx, r.ChainID, r.ChainVersion)
		if err != nil {
			s.log.Warn("a run accepted before the last stop cannot be queued again: its chain version cannot be read", "run_id", r.ID, "chain_id", r.ChainID, "version", r.ChainVersion, "err", err)
			if eerr := s.endRun(ctx, r.ID, &engine.RunError{Code: store.CodeInterruptedBeforeStart,
				Message: fmt.Sprintf("the studio stopped before this run started, and its chain version %d cannot be read (%v); start it again", r.ChainVersion, err)}); eerr != nil {
				// It stays queued: the next start tries again.
				s.log.Warn("the run could not be ended", "run_id", r.ID, "err", eerr)
			}
			continue
		}
		info, err := s.store.GetRunInfo(ctx, r.ID) // a list's rows leave the input out
		if err != nil {
			return n, fmt.Errorf("requeue run %s: %w", r.ID, err)
		}
		id, doc, input := r.ID, cv.Doc, info.Input
		if input == nil {
			input = map[string]any{}
		}
		_, err = s.launchOn(ctx, id, store.KindRun, func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, s.compileStarted(ctx, r.ChainID, r.ChainVersion, doc), input, engine.RunOptions{RunID: id})
		}, s.enqueueOver)
		if err != nil {
			return n, fmt.Errorf("requeue run %s: %w", id, err)
		}
		n++
	}
	return n, nil
}

// enqueueOver queues a job past the queue's waiting limit when the queue
// allows it (FIFO does), for runs admitted before a restart.
func (s *Service) enqueueOver(j Job) error {
	if q, ok := s.queue.(interface{ EnqueueOver(Job) error }); ok {
		return q.EnqueueOver(j)
	}
	return s.queue.Enqueue(j)
}

// endRun ends a run that no executor will end (failed, with e) by an end
// entry after its stored events, unless it has ended already.
func (s *Service) endRun(ctx context.Context, runID string, e *engine.RunError) error {
	return s.endRunAs(ctx, runID, chain.StatusFailed, e)
}

func (s *Service) endRunAs(ctx context.Context, runID string, status chain.RunStatus, e *engine.RunError) error {
	r, err := s.store.GetRunInfo(ctx, runID)
	if err != nil {
		return fmt.Errorf("end run %s: %w", runID, err)
	}
	if r.Status != chain.StatusRunning && r.Status != chain.StatusQueued {
		return nil // it ended meanwhile
	}
	seq, err := s.store.MaxSeq(ctx, runID)
	if err != nil {
		return fmt.Errorf("end run %s: %w", runID, err)
	}
	cp := engine.Checkpoint{RunID: runID, Kind: engine.CheckpointEnd, EventSeq: seq, Time: time.Now().UTC(),
		End: &engine.EndRecord{Status: status, Error: e}}
	if err := s.store.Append(ctx, runID, []engine.Checkpoint{cp}); err != nil {
		return fmt.Errorf("end run %s: %w", runID, err)
	}
	return nil
}

// strandedRetryMax bounds the wait between two attempts to end a run whose
// end the store refused.
const strandedRetryMax = 30 * time.Second

// endStranded ends a run the engine stopped without storing its end (cause:
// the store refused a write, or events of the run were lost). It tries at
// once; when the store still refuses, the run stays active (Active, Cancel
// see it) and is ended in the background as soon as a write succeeds,
// cancelled if a cancel came meanwhile, and t.done closes now. It reports
// whether it took the run's untrack and hub end over.
func (s *Service) endStranded(id string, cause error, t *ticket) bool {
	// A cancel from now on is heard here (the run's context is done).
	asked := make(chan struct{})
	var once sync.Once
	s.mu.Lock()
	s.active[id] = func(error) { once.Do(func() { close(asked) }) }
	s.mu.Unlock()
	cancelled := func() bool {
		select {
		case <-asked:
			return true
		default:
			return false
		}
	}
	err := s.endAfterWriteFailure(id, cause, cancelled())
	if err == nil {
		return false
	}
	if s.base.Err() != nil {
		// Stopping: start-up recovery ends it (interrupted_by_restart).
		s.log.Warn("the run's end could not be stored", "run_id", id, "err", err)
		return false
	}
	s.log.Warn("the run's end could not be stored; trying again until the store takes writes", "run_id", id, "err", err)
	close(t.done)
	go func() {
		defer func() {
			s.untrack(id)
			s.hub.End(id)
		}()
		wait, wake := 100*time.Millisecond, (<-chan struct{})(asked)
		timer := time.NewTimer(wait)
		defer timer.Stop()
		for {
			select {
			case <-s.base.Done():
				return
			case <-wake:
				wake = nil // heard once: try now, as cancelled
			case <-timer.C:
				wait = min(2*wait, strandedRetryMax)
			}
			if err := s.endAfterWriteFailure(id, cause, cancelled()); err == nil {
				return
			}
			timer.Reset(wait)
		}
	}()
	return true
}

// endAfterWriteFailure stores a stranded run's end: failed (cancelled when
// a user asked meanwhile) with code storage_unavailable, and a message that
// offers a resume only when its log has a start entry to resume from.
func (s *Service) endAfterWriteFailure(id string, cause error, cancelled bool) error {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	next := "start it again"
	if log, err := s.store.Load(ctx, id); err == nil && len(log) > 0 {
		next = "resume it to continue from its last stored checkpoint"
	}
	var msg string
	var lost *store.EventsLostError
	if errors.As(cause, &lost) {
		msg = fmt.Sprintf("the run stopped: %d of its events could not be stored (%v), so its history is incomplete; %s", lost.Events, lost.Err, next)
	} else {
		msg = fmt.Sprintf("the run stopped: its state could not be stored (%v); %s once the store accepts writes again", cause, next)
	}
	status := chain.StatusFailed
	if cancelled {
		status, msg = chain.StatusCancelled, "cancelled by a user while its end could not be stored; "+msg
	}
	return s.endRunAs(ctx, id, status, &engine.RunError{Code: store.CodeStorageUnavailable, Message: msg})
}

// cancelOrphan ends, cancelled, a run whose row says queued or running
// while nothing in this process executes it (the only process on this
// store: a FIFO studio holds its lock), and reports whether it did.
func (s *Service) cancelOrphan(runID string) bool {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	r, err := s.store.GetRunInfo(ctx, runID)
	if err != nil || (r.Status != chain.StatusRunning && r.Status != chain.StatusQueued) {
		return false
	}
	if s.cancelRun(runID, errCancelledByUser) {
		return true // launched meanwhile
	}
	err = s.endRunAs(ctx, runID, chain.StatusCancelled, &engine.RunError{Code: engine.CodeCancelled,
		Message: "cancelled by a user; nothing was executing it (its executor had stopped without ending it)"})
	if err != nil {
		s.log.Warn("cancel: the run could not be ended", "run_id", runID, "err", err)
		return false
	}
	s.hub.End(runID)
	return true
}
