package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// RunDiffRun names one of the two runs compared.
type RunDiffRun struct {
	RunID        string          `json:"run_id"`
	ChainID      string          `json:"chain_id,omitempty"`
	ChainVersion int             `json:"chain_version,omitempty"`
	ChainName    string          `json:"chain_name,omitempty"`
	Kind         string          `json:"kind"`
	Status       chain.RunStatus `json:"status"`
	Started      time.Time       `json:"started"`
	DurationMS   int64           `json:"duration_ms"`
}

// RunDiffJSON is the answer of GET /v1/runs/{id}/diff/{other}: the two runs,
// whether they ran the same document, the edges each run fired, and the
// engine's comparison.
type RunDiffJSON struct {
	A           RunDiffRun `json:"a"`
	B           RunDiffRun `json:"b"`
	SameVersion bool       `json:"same_version"`
	// FiredA and FiredB are every edge each run fired, sorted: only the
	// checkpoint logs know them, and a drawing of the comparison marks the
	// edges fired in both runs as well as those fired in one.
	FiredA []string `json:"fired_a"`
	FiredB []string `json:"fired_b"`
	*inspect.RunDiff
}

func ToRunDiffRun(r *store.Run) RunDiffRun {
	return RunDiffRun{RunID: r.ID, ChainID: r.ChainID, ChainVersion: r.ChainVersion, ChainName: r.ChainName,
		Kind: r.Kind, Status: r.Status, Started: r.Started, DurationMS: r.DurationMS}
}

// RunComparison is a comparison with what the page draws besides it.
type RunComparison struct {
	JSON         RunDiffJSON
	RunA, RunB   *store.Run
	SideA, SideB *inspect.RunSide
}

// CompareRuns reads both runs and compares them. Runs of different chains
// are refused: node ids mean something only within one chain (ad-hoc runs,
// which have no saved chain, compare when their chains have the same name).
func (s *Env) CompareRuns(ctx context.Context, aID, bID string, withhold bool) (*RunComparison, error) {
	ra, sa, err := s.RunSide(ctx, aID)
	if err != nil {
		return nil, err
	}
	rb, sb, err := s.RunSide(ctx, bID)
	if err != nil {
		return nil, err
	}
	if withhold { // before comparing: a difference would show what is withheld
		sa.Nodes, sa.FinalOutput, _ = WithheldResults(sa.Nodes, sa.FinalOutput)
		sb.Nodes, sb.FinalOutput, _ = WithheldResults(sb.Nodes, sb.FinalOutput)
	}
	if ra.ChainID != rb.ChainID || (ra.ChainID == "" && ra.ChainName != rb.ChainName) {
		name := func(r *store.Run) string {
			if r.ChainID == "" {
				return fmt.Sprintf("the ad-hoc chain %q", r.ChainName)
			}
			return fmt.Sprintf("chain %q (%s)", r.ChainName, r.ChainID)
		}
		return nil, httpcore.Error(httpcore.EINVALID, "different_chains",
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
	return &RunComparison{
		JSON: RunDiffJSON{A: ToRunDiffRun(ra), B: ToRunDiffRun(rb), SameVersion: same, FiredA: AllFired(sa), FiredB: AllFired(sb), RunDiff: d},
		RunA: ra, RunB: rb, SideA: sa, SideB: sb,
	}, nil
}

// RunSide reads what a comparison needs of one run: its row, and from its
// checkpoint log the chain it ran, its node results and the edges each
// node fired. A run that has logged nothing yet (queued, just started) has
// no node results.
func (s *Env) RunSide(ctx context.Context, id string) (*store.Run, *inspect.RunSide, error) {
	r, err := s.DB.GetRunInfo(ctx, id)
	if err != nil {
		return nil, nil, httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	side := &inspect.RunSide{Input: r.Input, Status: r.Status, Error: r.Error, FinalOutput: r.FinalOutput, DurationMS: r.DurationMS}
	log, err := s.DB.Load(ctx, id)
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
	case errors.As(err, &none) && (r.Status == chain.StatusQueued || r.Status == chain.StatusRunning):
	default:
		return nil, nil, fmt.Errorf("run %s: %w", id, err)
	}
	if side.Chain == nil && r.ChainID != "" && r.ChainVersion > 0 {
		v, err := s.DB.GetVersion(ctx, r.ChainID, r.ChainVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("run %s: its chain: %w", id, err)
		}
		side.Chain = v.Doc
	}
	if err := s.AttachedResults(ctx, id, side); err != nil {
		return nil, nil, err
	}
	return r, side, nil
}

// AttachedResults adds what the nodes run inside a map or parallel node did:
// they keep no checkpoint entry of their own, so, as in the run page's node
// drawer, it is folded from their events (at most MaxPageEvents of them).
func (s *Env) AttachedResults(ctx context.Context, id string, side *inspect.RunSide) error {
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
	events, err := s.Runs.Events(ctx, id, 0, MaxPageEvents, 0)
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
			if nr := NodeFromEvents(evs, n.ID); nr != nil {
				side.Nodes = append(side.Nodes, *nr)
			}
		}
	}
	return nil
}

// AllFired is every edge a run fired, sorted (each node's list holds its
// own outgoing edges, so no id is in two lists).
func AllFired(s *inspect.RunSide) []string {
	out := []string{}
	for _, ids := range s.Fired {
		out = append(out, ids...)
	}
	slices.Sort(out)
	return out
}
