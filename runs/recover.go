package runs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chainstudio/studio/engine"
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
// A run whose chain version cannot be read ends failed, saying why. With
// a Dispatcher it does nothing: jobs outlive the process there.
func (s *Service) Requeue(ctx context.Context, st RequeueStore) (int, error) {
	if s.disp != nil {
		return 0, nil
	}
	var queued []store.Run
	f := store.RunFilter{Status: engine.StatusQueued, Limit: 1000}
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
			return s.eng.Run(ctx, doc, input, engine.RunOptions{RunID: id})
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
	return s.endRunAs(ctx, runID, engine.StatusFailed, e)
}

func (s *Service) endRunAs(ctx context.Context, runID string, status engine.RunStatus, e *engine.RunError) error {
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
