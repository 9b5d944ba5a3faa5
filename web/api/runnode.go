package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// runNodeRequest is the body of POST /v1/chains/{id}/nodes/{node}/run.
type runNodeRequest struct {
	FromRun string         `json:"from_run"`
	Pinned  map[string]any `json:"pinned"`
	Input   map[string]any `json:"input"`
	State   map[string]any `json:"state"`
	Version int            `json:"version"`
}

// sourceRun checks that a named source run exists and is a run of ch.
func (s *Runs) sourceRun(ctx context.Context, ch *store.Chain, runID string) error {
	r, err := s.DB.GetRunInfo(ctx, runID)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", runID))
	}
	if r.ChainID != ch.ID {
		return httpcore.Error(httpcore.EINVALID, "wrong_run", fmt.Sprintf("run %s is not a run of chain %q: its data cannot be pinned here", runID, ch.ID),
			map[string]any{"path": "from_run", "run_id": runID})
	}
	return nil
}

// defaultNodeSource is the latest run of the chain that has every upstream
// output the node needs: of its last few runs, else of the last few that
// reached the node ("" when none has, or the node needs none and the chain
// never ran).
func (s *Runs) defaultNodeSource(ctx context.Context, ch *store.Chain, node string) (string, error) {
	cands, err := s.NodeSourceRuns(ctx, ch, node, "")
	if err != nil {
		return "", err
	}
	return ops.UsableSource(cands.Runs), nil
}

// POST /v1/chains/{id}/nodes/{node}/run {from_run?, pinned?, input?, state?, version?}
func (s *Runs) RunNode(c echo.Context) error {
	var body runNodeRequest
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	if body.Version < 0 {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %d", body.Version), map[string]any{"path": "version"})
	}
	if k, ok := ops.BlankKey(body.State); ok {
		return httpcore.Error(httpcore.EINVALID, "bad_state_patch", fmt.Sprintf("state: key %q is not a state key (empty or blank)", k), map[string]any{"path": "state"})
	}
	ctx := c.Request().Context()
	ch, err := s.ChainAt(ctx, c.Param("id"), body.Version)
	if err != nil {
		return err
	}
	if err := s.DraftGate(c, ch); err != nil {
		return err
	}
	node := ops.PageParam(c, "node")
	if ch.Doc.Node(node) == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("node %q is not in version %d of chain %q", node, ch.Version, ch.ID), map[string]any{"node_id": node})
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
	id, err := s.Runs.RunNode(ctx, ch, node, src)
	var nre *engine.NodeRunError
	if errors.As(err, &nre) && chosen == "none" && nre.Reason == engine.NodeRunMissingUpstream {
		// say where it was looked for
		nre.Msg = fmt.Sprintf("node %q needs the output of %q: none of the chain's last %d runs, nor of the last %d that reached %q, has it; name a run (from_run) or pin the outputs (pinned)", node, nre.Needs[0], ops.SourceRunsChecked, ops.SourceRunsChecked, node)
	}
	if err != nil {
		return err
	}
	runLocation(c, id)
	out := map[string]any{"run_id": id, "status": s.StartedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version, "node_id": node, "source": chosen}
	if src.FromRun != "" {
		out["from_run"] = src.FromRun
	}
	return c.JSON(http.StatusAccepted, out)
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
	return "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", `version must be "run", "current" or a version number`, map[string]any{"path": "version"})
}
