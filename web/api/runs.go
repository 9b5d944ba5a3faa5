package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

func runLocation(c echo.Context, id string) {
	c.Response().Header().Set(echo.HeaderLocation, "/v1/runs/"+url.PathEscape(id))
}

// POST /v1/chains/{id}/runs {input, version?, use_pins?}: version is
// "published" (the default), "current" (the newest, the designer's draft)
// or a number; use_pins (with "current" only) runs the draft as the
// designer does, its pinned outputs standing in for their nodes.
func (s *Runs) StartRun(c echo.Context) error {
	var body struct {
		Input   map[string]any  `json:"input"`
		Version json.RawMessage `json:"version"`
		UsePins bool            `json:"use_pins"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	choice, err := versionChoice(body.Version)
	if err != nil {
		return err
	}
	if body.UsePins && choice != "current" && choice != "draft" {
		// What is published (or named by number, as a schedule or a
		// caller pins a version) always runs its nodes.
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", `use_pins runs the designer's draft: it needs "version": "current"`, map[string]any{"path": "use_pins"})
	}
	ctx := c.Request().Context()
	ch, err := s.chainToRun(ctx, c.Param("id"), choice)
	if err != nil {
		return err
	}
	if err := s.DraftGate(c, ch); err != nil {
		return err
	}
	start := s.Runs.Start
	if body.UsePins {
		start = s.Runs.StartWithPins
	}
	id, err := start(ctx, ch, body.Input)
	if err != nil {
		return err
	}
	runLocation(c, id)
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": s.StartedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version})
}

// chainToRun reads chain id at the version a run asks for: "" or
// "published" the published one, "current" or "draft" the newest, else a
// number.
func (s *Runs) chainToRun(ctx context.Context, id, choice string) (*store.Chain, error) {
	switch choice {
	case "", "published":
		ch, err := s.DB.GetPublishedChain(ctx, id)
		if err != nil {
			return nil, httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
		}
		return ch, nil
	case "current", "draft": // the designer calls the newest version the draft
		return s.ChainAt(ctx, id, 0)
	}
	v, err := strconv.Atoi(choice)
	if err != nil || v < 1 {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf(`version must be "published", "current" (or "draft") or a version number (1 or more), not %q`, choice), map[string]any{"path": "version"})
	}
	return s.ChainAt(ctx, id, v)
}

// GET /v1/runs?status=&chain=&before=&after=&limit=
func (s *Runs) ListRuns(c echo.Context) error {
	f, err := ops.RunsQuery(c, 50)
	if err != nil {
		return err
	}
	page, err := s.DB.ListRunsPage(c.Request().Context(), f)
	if err != nil {
		return ops.RunsCursorErr(c, err)
	}
	out := map[string]any{"runs": ToRunsJSON(page.Runs), "next": page.Older, "prev": page.Newer, "next_url": nil, "prev_url": nil}
	link := func(key, cursor string) string {
		q := url.Values{key: {cursor}, "limit": {fmt.Sprint(f.Limit)}}
		if f.ChainID != "" {
			q.Set("chain", f.ChainID)
		}
		if f.Status != "" {
			q.Set("status", string(f.Status))
		}
		return "/v1/runs?" + q.Encode()
	}
	if page.Older != "" {
		out["next_url"] = link("cursor", page.Older)
	}
	if page.Newer != "" {
		out["prev_url"] = link("after", page.Newer)
	}
	return c.JSON(http.StatusOK, out)
}

// GET /v1/runs/{id}
func (s *Runs) GetRun(c echo.Context) error {
	r, err := s.DB.GetRun(c.Request().Context(), c.Param("id"))
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", c.Param("id")))
	}
	if !s.SeesCredentialed(c) {
		r = ops.WithheldRun(r)
	}
	out, err := s.RunView(c.Request().Context(), r)
	if err != nil {
		return err
	}
	if out.Answers, err = s.runAnswers(c.Request().Context(), r.ID); err != nil {
		return err
	}
	if r.ChainID == "" || r.ChainVersion == 0 { // no saved version holds its chain
		if out.Doc, err = s.AdHocDoc(c.Request().Context(), r.ID); err != nil {
			return err
		}
	}
	return writeJSON(c, http.StatusOK, out)
}

// POST /v1/runs/{id}/resume {resume_value | value, action, comment, modified_state, pause_id}
func (s *Runs) ResumeRun(c echo.Context) error {
	id := c.Param("id")
	value, modified, pauseID, err := readAnswer(c)
	if err != nil {
		return err
	}
	if err := s.RequireResumeRole(c, id, pauseID, value != nil); err != nil {
		return err
	}
	if pauseID != "" && value == nil {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_json", "pause_id needs a resume_value: only a paused run's pause is answered", map[string]any{"path": "pause_id"})
	}
	ctx := engine.WithSender(c.Request().Context(), ops.AnsweredBy(c)) // a state patch's event names its sender
	if err := s.Runs.ResumePause(ctx, id, pauseID, value, modified); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"run_id": id, "status": s.StartedStatus(id)})
}

// POST /v1/runs/{id}/cancel
func (s *Runs) CancelRun(c echo.Context) error {
	id := c.Param("id")
	if s.Runs.Cancel(id) {
		return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": "cancelling"})
	}
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	return httpcore.Error(httpcore.ECONFLICT, "not_running", fmt.Sprintf("run %q is not running (status %s)", id, r.Status), map[string]any{"status": r.Status})
}

// POST /v1/runs/{id}/rerun {from_node, input?, modified_state?, version?}
func (s *Runs) RerunRun(c echo.Context) error {
	id := c.Param("id")
	var body struct {
		FromNode      string          `json:"from_node"`
		Input         map[string]any  `json:"input"`
		ModifiedState map[string]any  `json:"modified_state"`
		Version       json.RawMessage `json:"version"` // "run" (default) | "current" | a version number
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	choice, err := versionChoice(body.Version)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	orig, err := s.DB.GetRunInfo(ctx, id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	if body.FromNode == "" {
		return httpcore.Error(httpcore.EINVALID, "from_node_required", "from_node is required: the node to re-run from", map[string]any{"path": "from_node"})
	}
	cv, err := s.RerunVersion(ctx, orig, choice)
	if err != nil {
		return err
	}
	var doc *chain.Chain
	where := "the run's chain"
	if cv != nil {
		doc, where = cv.Doc, fmt.Sprintf("version %d of the chain", cv.Version)
	} else if doc, err = s.Runs.RunChain(ctx, id); err != nil {
		return err
	}
	if doc.Node(body.FromNode) == nil {
		return httpcore.Error(httpcore.EINVALID, "unknown_node", fmt.Sprintf("node %q is not in %s", body.FromNode, where), map[string]any{"path": "from_node", "node_id": body.FromNode})
	}
	if k, ok := ops.BlankKey(body.ModifiedState); ok {
		return httpcore.Error(httpcore.EINVALID, "bad_state_patch", fmt.Sprintf("modified_state: key %q is not a state key (empty or blank)", k), map[string]any{"path": "modified_state"})
	}
	newID, err := s.Runs.RerunWith(ctx, id, runs.RerunSpec{FromNode: body.FromNode, Input: body.Input, Modified: body.ModifiedState, Version: cv, By: ops.AnsweredBy(c)})
	var invalid *runs.InvalidChainError
	if errors.As(err, &invalid) { // the version chosen has errors
		return httpcore.Error(httpcore.EINVALID, chain.CodeInvalid, invalid.Error(), map[string]any{"issues": invalid.Issues, "path": "version"})
	}
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	version := orig.ChainVersion
	if cv != nil {
		version = cv.Version
	}
	runLocation(c, newID)
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": newID, "status": s.StartedStatus(newID), "parent_run_id": id, "from_node": body.FromNode, "chain_version": version})
}
