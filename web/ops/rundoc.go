package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// MaxPageEvents bounds the events a node's details and a comparison fold
// from; MaxPageEvents and MaxPageEventBytes (of stored events) bound the
// timeline a run page renders at first. The page's stream replays the whole
// run, and the page fetches the rest of the timeline (fragTimeline).
const (
	MaxPageEvents     = 20_000
	MaxPageEventBytes = 16 << 20
)

// PageRunDoc is the chain a run ran, for a page's labels (nil when it cannot
// be read: the page then names nodes by id).
func (s *Env) PageRunDoc(c echo.Context, r *store.Run) *chain.Chain {
	if r.ChainID == "" || r.ChainVersion == 0 {
		doc, _ := s.AdHocDoc(c.Request().Context(), r.ID)
		return doc
	}
	v, err := s.DB.GetVersion(c.Request().Context(), r.ChainID, r.ChainVersion)
	if err != nil {
		return nil
	}
	return v.Doc
}

// AdHocDoc is the chain an ad-hoc run ran (A2E, an agent's compiled chain),
// which no saved version holds: its start checkpoint's (runs.RunChain). A
// run that has logged nothing yet has none.
func (s *Env) AdHocDoc(ctx context.Context, id string) (*chain.Chain, error) {
	doc, err := s.Runs.RunChain(ctx, id)
	var none *engine.ChainCheckpointError
	if errors.As(err, &none) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: its chain: %w", id, err)
	}
	return doc, nil
}

// NodeFromEvents folds what a node did from its events (the last run of it
// wins; a map body's items fold into one line per phase): nil when it has
// none.
func NodeFromEvents(events []engine.Event, nodeID string) *engine.NodeResult {
	var nr *engine.NodeResult
	for _, e := range events {
		if e.NodeID != nodeID {
			continue
		}
		if nr == nil {
			nr = &engine.NodeResult{NodeID: nodeID}
		}
		switch e.Phase {
		case engine.PhaseStart:
			if e.Item == nil || nr.Started.IsZero() {
				nr.Started = e.Time
			}
			nr.Status = engine.PhaseStart
			nr.Reused, nr.Pinned = e.Reused, e.Pinned
			if e.Iteration > 0 {
				nr.Iteration = e.Iteration
			}
		case engine.PhaseDone, engine.PhaseError, engine.PhaseSkip:
			nr.Status, nr.Ended = e.Phase, e.Time
			nr.Output, nr.Error, nr.Reason, nr.Matched = e.Output, e.Error, e.Reason, e.Matched
			nr.Credentialed = nr.Credentialed || e.Credentialed
			if e.Attempt > 0 {
				nr.Attempts = e.Attempt
			}
			nr.Reused, nr.Pinned = e.Reused, e.Pinned
		case engine.PhasePaused:
			nr.Status, nr.Prompt = engine.PhasePaused, e.Prompt
		}
	}
	return nr
}

// RunForControls reads what the run controls show: the run's row, and the
// node results (folded from the log) only when it is paused, for each
// waiting node's prompt, or when they say whether a caller who may not see
// credentialed outputs may see its final output (withheld.go).
func (s *Env) RunForControls(c echo.Context, id string) (*store.Run, error) {
	withhold := !s.SeesCredentialed(c)
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err == nil && (r.Status == chain.StatusPaused || (withhold && r.FinalOutput != nil)) {
		r, err = s.DB.GetRun(c.Request().Context(), id)
	}
	if err == nil && withhold {
		r = WithheldRun(r)
	}
	return r, err
}
