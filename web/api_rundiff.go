package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// Comparing two runs: GET /v1/runs/{id}/diff/{other} and the page
// /runs/{id}/diff/{other} share compareRuns. Run id is "a" (the baseline),
// other is "b".

// runDiffRun names one of the two runs compared.
type runDiffRun struct {
	RunID        string           `json:"run_id"`
	ChainID      string           `json:"chain_id,omitempty"`
	ChainVersion int              `json:"chain_version,omitempty"`
	ChainName    string           `json:"chain_name,omitempty"`
	Kind         string           `json:"kind"`
	Status       engine.RunStatus `json:"status"`
	Started      time.Time        `json:"started"`
	DurationMS   int64            `json:"duration_ms"`
}

// runDiffJSON is the answer of GET /v1/runs/{id}/diff/{other}: the two runs,
// whether they ran the same document, the edges each run fired, and the
// engine's comparison.
type runDiffJSON struct {
	A           runDiffRun `json:"a"`
	B           runDiffRun `json:"b"`
	SameVersion bool       `json:"same_version"`
	// FiredA and FiredB are every edge each run fired, sorted: only the
	// checkpoint logs know them, and a drawing of the comparison marks the
	// edges fired in both runs as well as those fired in one.
	FiredA []string `json:"fired_a"`
	FiredB []string `json:"fired_b"`
	*inspect.RunDiff
}

func toRunDiffRun(r *store.Run) runDiffRun {
	return runDiffRun{RunID: r.ID, ChainID: r.ChainID, ChainVersion: r.ChainVersion, ChainName: r.ChainName,
		Kind: r.Kind, Status: r.Status, Started: r.Started, DurationMS: r.DurationMS}
}

// runComparison is a comparison with what the page draws besides it.
type runComparison struct {
	json         runDiffJSON
	runA, runB   *store.Run
	sideA, sideB *inspect.RunSide
}

// compareRuns reads both runs and compares them. Runs of different chains
// are refused: node ids mean something only within one chain (ad-hoc runs,
// which have no saved chain, compare when their chains have the same name).
func (s *Server) compareRuns(ctx context.Context, aID, bID string) (*runComparison, error) {
	ra, sa, err := s.runSide(ctx, aID)
	if err != nil {
		return nil, err
	}
	rb, sb, err := s.runSide(ctx, bID)
	if err != nil {
		return nil, err
	}
	if ra.ChainID != rb.ChainID || (ra.ChainID == "" && ra.ChainName != rb.ChainName) {
		name := func(r *store.Run) string {
			if r.ChainID == "" {
				return fmt.Sprintf("the ad-hoc chain %q", r.ChainName)
			}
			return fmt.Sprintf("chain %q (%s)", r.ChainName, r.ChainID)
		}
		return nil, apiError(EINVALID, "different_chains",
			fmt.Sprintf("runs of different chains cannot be compared: run %q is of %s, run %q of %s", ra.ID, name(ra), rb.ID, name(rb)),
			map[string]any{"a": map[string]any{"run_id": ra.ID, "chain_id": ra.ChainID, "chain_name": ra.ChainName},
				"b": map[string]any{"run_id": rb.ID, "chain_id": rb.ChainID, "chain_name": rb.ChainName}})
	}
	if ra.ChainID != "" && ra.ChainVersion == rb.ChainVersion && ra.ChainVersion > 0 && sa.Chain != nil {
		sb.Chain = sa.Chain // one immutable version: the engine then reads it once
	}
	d := inspect.CompareRuns(sa, sb, inspect.RunDiffLimits{})
	same := ra.ChainVersion == rb.ChainVersion && ra.ChainID != ""
	if ra.ChainID == "" { // ad-hoc: the same document, or not
		same = len(d.NodesAdded) == 0 && len(d.NodesRemoved) == 0 && inspect.Diff(sa.Chain, sb.Chain).Empty()
	}
	return &runComparison{
		json: runDiffJSON{A: toRunDiffRun(ra), B: toRunDiffRun(rb), SameVersion: same, FiredA: allFired(sa), FiredB: allFired(sb), RunDiff: d},
		runA: ra, runB: rb, sideA: sa, sideB: sb,
	}, nil
}

// runSide reads what a comparison needs of one run: its row, and from its
// checkpoint log the chain it ran, its node results and the edges each
// node fired. A run that has logged nothing yet (queued, just started) has
// no node results.
func (s *Server) runSide(ctx context.Context, id string) (*store.Run, *inspect.RunSide, error) {
	r, err := s.db.GetRunInfo(ctx, id)
	if err != nil {
		return nil, nil, storeErr(err, fmt.Sprintf("run %q", id))
	}
	side := &inspect.RunSide{Input: r.Input, Status: r.Status, Error: r.Error, FinalOutput: r.FinalOutput, DurationMS: r.DurationMS}
	log, err := s.db.Load(ctx, id)
	var none *engine.ChainCheckpointError
	switch {
	case err == nil:
		if side.Nodes, err = engine.FoldNodeResults(log); err != nil {
			return nil, nil, fmt.Errorf("run %s: %w", id, err)
		}
		side.Fired = inspect.FiredEdges(log)
		for _, cp := range log {
			if cp.Kind == engine.CheckpointStart && cp.Start != nil {
				side.Chain = cp.Start.Chain
				break
			}
		}
	case errors.As(err, &none) && (r.Status == engine.StatusQueued || r.Status == engine.StatusRunning):
	default:
		return nil, nil, fmt.Errorf("run %s: %w", id, err)
	}
	if side.Chain == nil && r.ChainID != "" && r.ChainVersion > 0 {
		v, err := s.db.GetVersion(ctx, r.ChainID, r.ChainVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: its chain: %w", id, err)
		}
		side.Chain = v.Doc
	}
	if err := s.attachedResults(ctx, id, side); err != nil {
		return nil, nil, err
	}
	return r, side, nil
}

// attachedResults adds what the nodes run inside a map or parallel node did:
// they keep no checkpoint entry of their own, so, as in the run page's node
// drawer, it is folded from their events (at most maxPageEvents of them).
func (s *Server) attachedResults(ctx context.Context, id string, side *inspect.RunSide) error {
	if side.Chain == nil {
		return nil
	}
	have := make(map[string]bool, len(side.Nodes))
	for _, nr := range side.Nodes {
		have[nr.NodeID] = true
	}
	want := map[string]bool{}
	for _, n := range side.Chain.Nodes {
		for _, inner := range append([]string{n.MapNode}, n.Branches...) {
			if inner != "" && !have[inner] {
				want[inner] = true
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	if err := s.runs.Flush(ctx); err != nil {
		return err
	}
	events, err := s.db.EventsAfter(ctx, id, 0, maxPageEvents)
	if err != nil {
		return fmt.Errorf("run %s: events: %w", id, err)
	}
	byNode := map[string][]engine.Event{}
	for _, e := range events {
		if want[e.NodeID] {
			byNode[e.NodeID] = append(byNode[e.NodeID], e)
		}
	}
	for _, n := range side.Chain.Nodes { // chain order: deterministic
		if evs := byNode[n.ID]; len(evs) > 0 && want[n.ID] {
			if nr := nodeFromEvents(evs, n.ID); nr != nil {
				side.Nodes = append(side.Nodes, *nr)
			}
		}
	}
	return nil
}

// GET /v1/runs/{id}/diff/{other}
func (s *Server) diffRuns(c echo.Context) error {
	cmp, err := s.compareRuns(c.Request().Context(), pageParam(c, "id"), pageParam(c, "other"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cmp.json)
}
