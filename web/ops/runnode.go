package ops

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// SourceRunsChecked bounds how many of a chain's latest runs are tried when
// no source run is named (each costs one read of its log).
const SourceRunsChecked = 10

// ChainAt reads a chain at a version (0: the current one) as the run
// service takes it.
func (s *Env) ChainAt(ctx context.Context, id string, version int) (*store.Chain, error) {
	if version == 0 {
		ch, err := s.DB.GetChain(ctx, id)
		if err != nil {
			return nil, httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
		}
		return ch, nil
	}
	cv, err := s.DB.GetVersion(ctx, id, version)
	if err != nil {
		return nil, httpcore.StoreErr(err, fmt.Sprintf("version %d of chain %q", version, id))
	}
	return &store.Chain{ID: id, Name: cv.Name, Version: cv.Version, NodeCount: cv.NodeCount, Doc: cv.Doc}, nil
}

// NodeSourceRun is one of a chain's runs as a source of a node's upstream
// data: Err says what it lacks (nil: it has all of it).
type NodeSourceRun struct {
	Run store.Run
	Err error
}

// NodeSources is one page of candidate source runs for running a node
// alone: Older is the cursor of the next page of runs that reached the node
// ("" when there is none), Searched says the page came from that search.
type NodeSources struct {
	Runs     []NodeSourceRun
	Older    string
	Searched bool
	Latest   int // how many of Runs are the chain's latest runs
}

// NodeSourceRuns finds source runs for running node alone. With no cursor
// it checks the chain's latest runs, newest first; when none of them has
// what the node needs, it goes on to the older runs that reached the node
// (a store query over the runs' node results, however far back they are).
// With a cursor it reads the next page of that search. Each page checks at
// most SourceRunsChecked runs: each check costs one read of a run's log.
func (s *Env) NodeSourceRuns(ctx context.Context, ch *store.Chain, node, before string) (NodeSources, error) {
	var out NodeSources
	if before == "" {
		rs, next, err := s.DB.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: SourceRunsChecked, Brief: true})
		if err != nil {
			return out, err
		}
		if out.Runs, err = s.CheckSources(ctx, ch, node, rs); err != nil {
			return out, err
		}
		out.Latest = len(out.Runs)
		if next == "" || UsableSource(out.Runs) != "" {
			return out, nil
		}
		before = next
	}
	p, err := s.DB.ListRunsPage(ctx, store.RunFilter{ChainID: ch.ID, NodeID: node, Limit: SourceRunsChecked, Before: before, Brief: true})
	if errors.Is(err, store.ErrInvalid) {
		return out, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "before: "+err.Error(), map[string]any{"path": "before"})
	}
	if err != nil {
		return out, err
	}
	found, err := s.CheckSources(ctx, ch, node, p.Runs)
	if err != nil {
		return out, err
	}
	out.Runs = append(out.Runs, found...)
	out.Older, out.Searched = p.Older, true
	return out, nil
}

// CheckSources checks each run as a source of node's upstream data.
func (s *Env) CheckSources(ctx context.Context, ch *store.Chain, node string, rs []store.Run) ([]NodeSourceRun, error) {
	out := make([]NodeSourceRun, 0, len(rs))
	for _, r := range rs {
		_, err := s.Runs.PlanNodeRun(ctx, ch, node, engine.NodeRunSource{FromRun: r.ID})
		var nre *engine.NodeRunError
		var cpe *engine.ChainCheckpointError
		if err != nil && !errors.As(err, &nre) && !errors.As(err, &cpe) {
			return nil, err
		}
		out = append(out, NodeSourceRun{Run: r, Err: err})
	}
	return out, nil
}

// UsableSource is the first run that has everything ("" when none has).
func UsableSource(cands []NodeSourceRun) string {
	for _, c := range cands {
		if c.Err == nil {
			return c.Run.ID
		}
	}
	return ""
}

// RerunVersion reads a re-run's version choice: "run" (or absent: the
// run's own version, nil), "current", or a version number.
func (s *Env) RerunVersion(ctx context.Context, orig *store.Run, choice string) (*store.ChainVersion, error) {
	if choice == "" || choice == "run" {
		return nil, nil
	}
	if orig.ChainID == "" {
		return nil, httpcore.Error(httpcore.EINVALID, "no_saved_chain", fmt.Sprintf("run %s is not a run of a saved chain: it can only be re-run on its own version", orig.ID), map[string]any{"path": "version"})
	}
	var v int
	if choice == "current" {
		ch, err := s.DB.GetChain(ctx, orig.ChainID)
		if err != nil {
			return nil, httpcore.StoreErr(err, fmt.Sprintf("chain %q", orig.ChainID))
		}
		if ch.Version == orig.ChainVersion {
			return nil, nil
		}
		return &store.ChainVersion{ChainID: ch.ID, Version: ch.Version, Name: ch.Name, Doc: ch.Doc}, nil
	}
	v, err := strconv.Atoi(choice)
	if err != nil || v < 1 {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf(`version must be "run", "current" or a version number, got %q`, choice), map[string]any{"path": "version"})
	}
	if v == orig.ChainVersion {
		return nil, nil
	}
	cv, err := s.DB.GetVersion(ctx, orig.ChainID, v)
	if err != nil {
		return nil, httpcore.StoreErr(err, fmt.Sprintf("version %d of chain %q", v, orig.ChainID))
	}
	return cv, nil
}
