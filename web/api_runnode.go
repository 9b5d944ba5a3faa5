package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// Running one node alone with pinned data, and choosing the version a
// re-run runs. The engine resolves and checks the data
// (engine.PlanNodeRun); these handlers find the chain version and the
// source run and map the answers.

// sourceRunsChecked bounds how many of a chain's latest runs are tried when
// no source run is named (each costs one read of its log).
const sourceRunsChecked = 10

// runNodeRequest is the body of POST /v1/chains/{id}/nodes/{node}/run.
type runNodeRequest struct {
	FromRun string         `json:"from_run"`
	Pinned  map[string]any `json:"pinned"`
	Input   map[string]any `json:"input"`
	State   map[string]any `json:"state"`
	Version int            `json:"version"`
}

// chainAt reads a chain at a version (0: the current one) as the run
// service takes it.
func (s *Server) chainAt(ctx context.Context, id string, version int) (*store.Chain, error) {
	if version == 0 {
		ch, err := s.db.GetChain(ctx, id)
		if err != nil {
			return nil, storeErr(err, fmt.Sprintf("chain %q", id))
		}
		return ch, nil
	}
	cv, err := s.db.GetVersion(ctx, id, version)
	if err != nil {
		return nil, storeErr(err, fmt.Sprintf("version %d of chain %q", version, id))
	}
	return &store.Chain{ID: id, Name: cv.Name, Version: cv.Version, NodeCount: cv.NodeCount, Doc: cv.Doc}, nil
}

// sourceRun checks that a named source run exists and is a run of ch.
func (s *Server) sourceRun(ctx context.Context, ch *store.Chain, runID string) error {
	r, err := s.db.GetRunInfo(ctx, runID)
	if err != nil {
		return storeErr(err, fmt.Sprintf("run %q", runID))
	}
	if r.ChainID != ch.ID {
		return apiError(EINVALID, "wrong_run", fmt.Sprintf("run %s is not a run of chain %q: its data cannot be pinned here", runID, ch.ID),
			map[string]any{"path": "from_run", "run_id": runID})
	}
	return nil
}

// NodeSourceRun is one of a chain's runs as a source of a node's upstream
// data: Err says what it lacks (nil: it has all of it).
type NodeSourceRun struct {
	Run store.Run
	Err error
}

// nodeSources is one page of candidate source runs for running a node
// alone: Older is the cursor of the next page of runs that reached the node
// ("" when there is none), Searched says the page came from that search.
type nodeSources struct {
	Runs     []NodeSourceRun
	Older    string
	Searched bool
	Latest   int // how many of Runs are the chain's latest runs
}

// nodeSourceRuns finds source runs for running node alone. With no cursor
// it checks the chain's latest runs, newest first; when none of them has
// what the node needs, it goes on to the older runs that reached the node
// (a store query over the runs' node results, however far back they are).
// With a cursor it reads the next page of that search. Each page checks at
// most sourceRunsChecked runs: each check costs one read of a run's log.
func (s *Server) nodeSourceRuns(ctx context.Context, ch *store.Chain, node, before string) (nodeSources, error) {
	var out nodeSources
	if before == "" {
		rs, next, err := s.db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: sourceRunsChecked})
		if err != nil {
			return out, err
		}
		if out.Runs, err = s.checkSources(ctx, ch, node, rs); err != nil {
			return out, err
		}
		out.Latest = len(out.Runs)
		if next == "" || usableSource(out.Runs) != "" {
			return out, nil
		}
		before = next
	}
	p, err := s.db.ListRunsPage(ctx, store.RunFilter{ChainID: ch.ID, NodeID: node, Limit: sourceRunsChecked, Before: before})
	if errors.Is(err, store.ErrInvalid) {
		return out, apiError(EBADREQUEST, "bad_parameter", "before: "+err.Error(), map[string]any{"path": "before"})
	}
	if err != nil {
		return out, err
	}
	found, err := s.checkSources(ctx, ch, node, p.Runs)
	if err != nil {
		return out, err
	}
	out.Runs = append(out.Runs, found...)
	out.Older, out.Searched = p.Older, true
	return out, nil
}

// checkSources checks each run as a source of node's upstream data.
func (s *Server) checkSources(ctx context.Context, ch *store.Chain, node string, rs []store.Run) ([]NodeSourceRun, error) {
	out := make([]NodeSourceRun, 0, len(rs))
	for _, r := range rs {
		_, err := s.runs.PlanNodeRun(ctx, ch.Doc, node, engine.NodeRunSource{FromRun: r.ID})
		var nre *engine.NodeRunError
		var cpe *engine.ChainCheckpointError
		if err != nil && !errors.As(err, &nre) && !errors.As(err, &cpe) {
			return nil, err
		}
		out = append(out, NodeSourceRun{Run: r, Err: err})
	}
	return out, nil
}

// usableSource is the first run that has everything ("" when none has).
func usableSource(cands []NodeSourceRun) string {
	for _, c := range cands {
		if c.Err == nil {
			return c.Run.ID
		}
	}
	return ""
}

// defaultNodeSource is the latest run of the chain that has every upstream
// output the node needs: of its last few runs, else of the last few that
// reached the node ("" when none has, or the node needs none and the chain
// never ran).
func (s *Server) defaultNodeSource(ctx context.Context, ch *store.Chain, node string) (string, error) {
	cands, err := s.nodeSourceRuns(ctx, ch, node, "")
	if err != nil {
		return "", err
	}
	return usableSource(cands.Runs), nil
}

// POST /v1/chains/{id}/nodes/{node}/run {from_run?, pinned?, input?, state?, version?}
func (s *Server) runNode(c echo.Context) error {
	var body runNodeRequest
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	if body.Version < 0 {
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	if k, ok := blankKey(body.State); ok {
		return apiError(EINVALID, "bad_state_patch", fmt.Sprintf("state: key %q is not a state key (empty or blank)", k), map[string]any{"path": "state"})
	}
	ctx := c.Request().Context()
	ch, err := s.chainAt(ctx, c.Param("id"), body.Version)
	if err != nil {
		return err
	}
	node := pageParam(c, "node")
	if ch.Doc.Node(node) == nil {
		return apiError(ENOTFOUND, "not_found", fmt.Sprintf("node %q is not in version %d of chain %q", node, ch.Version, ch.ID), map[string]any{"node_id": node})
	}
	src := engine.NodeRunSource{FromRun: body.FromRun, Pinned: body.Pinned, Input: body.Input, State: body.State}
	chosen := "given"
	switch {
	case body.FromRun != "":
		if err := s.sourceRun(ctx, ch, body.FromRun); err != nil {
			return err
		}
	case body.Pinned == nil:
		// Neither named: the latest run that has what the node needs.
		if src.FromRun, err = s.defaultNodeSource(ctx, ch, node); err != nil {
			return err
		}
		chosen = "latest"
		if src.FromRun == "" {
			chosen = "none"
		}
	}
	id, err := s.runs.RunNode(ctx, ch, node, src)
	var nre *engine.NodeRunError
	if errors.As(err, &nre) && chosen == "none" && nre.Reason == engine.NodeRunMissingUpstream {
		// say where it was looked for
		nre.Msg = fmt.Sprintf("node %q needs the output of %q: none of the chain's last %d runs, nor of the last %d that reached %q, has it; name a run (from_run) or pin the outputs (pinned)", node, nre.Needs[0], sourceRunsChecked, sourceRunsChecked, node)
	}
	if err != nil {
		return err
	}
	runLocation(c, id)
	out := map[string]any{"run_id": id, "status": s.startedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version, "node_id": node, "source": chosen}
	if src.FromRun != "" {
		out["from_run"] = src.FromRun
	}
	return c.JSON(http.StatusAccepted, out)
}

// rerunVersion reads a re-run's version choice: "run" (or absent: the
// run's own version, nil), "current", or a version number.
func (s *Server) rerunVersion(ctx context.Context, orig *store.Run, choice string) (*store.ChainVersion, error) {
	if choice == "" || choice == "run" {
		return nil, nil
	}
	if orig.ChainID == "" {
		return nil, apiError(EINVALID, "no_saved_chain", fmt.Sprintf("run %s is not a run of a saved chain: it can only be re-run on its own version", orig.ID), map[string]any{"path": "version"})
	}
	var v int
	if choice == "current" {
		ch, err := s.db.GetChain(ctx, orig.ChainID)
		if err != nil {
			return nil, storeErr(err, fmt.Sprintf("chain %q", orig.ChainID))
		}
		if ch.Version == orig.ChainVersion {
			return nil, nil
		}
		return &store.ChainVersion{ChainID: ch.ID, Version: ch.Version, Name: ch.Name, Doc: ch.Doc}, nil
	}
	v, err := strconv.Atoi(choice)
	if err != nil || v < 1 {
		return nil, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf(`version must be "run", "current" or a version number, got %q`, choice), map[string]any{"path": "version"})
	}
	if v == orig.ChainVersion {
		return nil, nil
	}
	cv, err := s.db.GetVersion(ctx, orig.ChainID, v)
	if err != nil {
		return nil, storeErr(err, fmt.Sprintf("version %d of chain %q", v, orig.ChainID))
	}
	return cv, nil
}

// versionChoice reads the JSON "version" field: a string or a number.
func versionChoice(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str, nil
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return strconv.Itoa(n), nil
	}
	return "", apiError(EBADREQUEST, "bad_json", `version must be "run", "current" or a version number`, map[string]any{"path": "version"})
}
