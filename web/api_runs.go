package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

func (s *Server) runView(ctx context.Context, r *store.Run) (runJSON, error) {
	out := runJSON{runFields: toRunFields(r), Pending: []engine.Pending{}, Active: s.runs.Active(r.ID)}
	if r.Status == engine.StatusQueued {
		out.QueuePosition = s.runs.QueuePosition(r.ID)
	}
	pending, err := s.pendingPauses(ctx, r)
	out.Pending = append(out.Pending, pending...)
	return out, err
}

// pendingPauses lists every pause a paused run waits on (a node may hold
// several: map items, branches, a sub-chain's), from the log the resume
// reads; none for a run that is not paused.
func (s *Server) pendingPauses(ctx context.Context, r *store.Run) ([]engine.Pending, error) {
	if r.Status != engine.StatusPaused {
		return nil, nil
	}
	log, err := s.db.Load(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("run %s: pending pauses: %w", r.ID, err)
	}
	return engine.PendingPauses(log), nil
}

// startedStatus is what a run just handed to the run service is doing:
// queued while it waits for a slot, running otherwise.
func (s *Server) startedStatus(id string) engine.RunStatus {
	if s.runs.QueuePosition(id) > 0 {
		return engine.StatusQueued
	}
	return engine.StatusRunning
}

func runLocation(c echo.Context, id string) {
	c.Response().Header().Set(echo.HeaderLocation, "/v1/runs/"+url.PathEscape(id))
}

// POST /v1/chains/{id}/runs {input, version?}: version is "published" (the
// default), "current" (the newest, the designer's draft) or a number.
func (s *Server) startRun(c echo.Context) error {
	var body struct {
		Input   map[string]any  `json:"input"`
		Version json.RawMessage `json:"version"`
	}
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	choice, err := versionChoice(body.Version)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ch, err := s.chainToRun(ctx, c.Param("id"), choice)
	if err != nil {
		return err
	}
	id, err := s.runs.Start(ctx, ch, body.Input)
	if err != nil {
		return err
	}
	runLocation(c, id)
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": s.startedStatus(id), "chain_id": ch.ID, "chain_version": ch.Version})
}

// chainToRun reads chain id at the version a run asks for: "" or
// "published" the published one, "current" or "draft" the newest, else a
// number.
func (s *Server) chainToRun(ctx context.Context, id, choice string) (*store.Chain, error) {
	switch choice {
	case "", "published":
		ch, err := s.db.GetPublishedChain(ctx, id)
		if err != nil {
			return nil, storeErr(err, fmt.Sprintf("chain %q", id))
		}
		return ch, nil
	case "current", "draft": // the designer calls the newest version the draft
		return s.chainAt(ctx, id, 0)
	}
	v, err := strconv.Atoi(choice)
	if err != nil || v < 1 {
		return nil, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf(`version must be "published", "current" (or "draft") or a version number (1 or more), not %q`, choice), map[string]any{"path": "version"})
	}
	return s.chainAt(ctx, id, v)
}

// maxRunsPage bounds a page of the runs list (API and page).
const maxRunsPage = 100

// runsQuery reads the runs list's filters and cursors (the API and the
// /runs page take the same parameters): status, chain (a chain id; chain_id
// is the older spelling), before / after (cursors), limit.
func runsQuery(c echo.Context, defLimit int) (store.RunFilter, error) {
	var f store.RunFilter
	limit, err := intParam("limit", c.QueryParam("limit"), defLimit, 1, maxRunsPage)
	if err != nil {
		return f, err
	}
	f.Limit = limit
	f.ChainID = c.QueryParam("chain")
	if f.ChainID == "" {
		f.ChainID = c.QueryParam("chain_id")
	}
	if st := c.QueryParam("status"); st != "" {
		if !validRunStatus(engine.RunStatus(st)) {
			return f, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("status must be one of %s, got %q", strings.Join(runStatusNames(), ", "), st), map[string]any{"parameter": "status"})
		}
		f.Status = engine.RunStatus(st)
	}
	f.Before, f.After = c.QueryParam("before"), c.QueryParam("after")
	if cur := c.QueryParam("cursor"); cur != "" { // the next page, as every list spells it
		if f.Before != "" {
			return f, apiError(EBADREQUEST, "bad_parameter", "cursor and before cannot be used together", map[string]any{"parameter": "before"})
		}
		f.Before = cur
	}
	if f.Before != "" && f.After != "" {
		return f, apiError(EBADREQUEST, "bad_parameter", "before and after cannot be used together", map[string]any{"parameter": "after"})
	}
	return f, nil
}

var runStatuses = []engine.RunStatus{engine.StatusQueued, engine.StatusRunning, engine.StatusPaused, engine.StatusCompleted, engine.StatusPartial,
	engine.StatusFailed, engine.StatusCancelled, engine.StatusTimedOut}

func validRunStatus(s engine.RunStatus) bool { return slices.Contains(runStatuses, s) }

func runStatusNames() []string {
	out := make([]string, len(runStatuses))
	for i, s := range runStatuses {
		out[i] = string(s)
	}
	return out
}

// runsCursorErr names the cursor a bad page request carried.
func runsCursorErr(c echo.Context, err error) error {
	if errors.Is(err, store.ErrInvalid) {
		p := "before"
		if c.QueryParam("after") != "" {
			p = "after"
		} else if c.QueryParam("cursor") != "" {
			p = "cursor"
		}
		return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("%s is not a cursor from a previous page: %q", p, c.QueryParam(p)), map[string]any{"parameter": p})
	}
	return err
}

// GET /v1/runs?status=&chain=&before=&after=&limit=
func (s *Server) listRuns(c echo.Context) error {
	f, err := runsQuery(c, 50)
	if err != nil {
		return err
	}
	page, err := s.db.ListRunsPage(c.Request().Context(), f)
	if err != nil {
		return runsCursorErr(c, err)
	}
	out := map[string]any{"runs": toRunsJSON(page.Runs), "next": page.Older, "prev": page.Newer, "next_url": nil, "prev_url": nil}
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
func (s *Server) getRun(c echo.Context) error {
	r, err := s.db.GetRun(c.Request().Context(), c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("run %q", c.Param("id")))
	}
	out, err := s.runView(c.Request().Context(), r)
	if err != nil {
		return err
	}
	if out.Answers, err = s.runAnswers(c.Request().Context(), r.ID); err != nil {
		return err
	}
	if r.ChainID == "" || r.ChainVersion == 0 { // no saved version holds its chain
		if out.Doc, err = s.adHocDoc(c.Request().Context(), r.ID); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, out)
}

// POST /v1/runs/{id}/resume {resume_value | value, action, comment, modified_state, pause_id}
func (s *Server) resumeRun(c echo.Context) error {
	id := c.Param("id")
	value, modified, pauseID, err := readAnswer(c)
	if err != nil {
		return err
	}
	if err := s.requireResumeRole(c, id, pauseID, value != nil); err != nil {
		return err
	}
	if pauseID != "" && value == nil {
		return apiError(EBADREQUEST, "bad_json", "pause_id needs a resume_value: only a paused run's pause is answered", map[string]any{"path": "pause_id"})
	}
	ctx := engine.WithSender(c.Request().Context(), answeredBy(c)) // a state patch's event names its sender
	if err := s.runs.ResumePause(ctx, id, pauseID, value, modified); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"run_id": id, "status": s.startedStatus(id)})
}

// POST /v1/runs/{id}/cancel
func (s *Server) cancelRun(c echo.Context) error {
	id := c.Param("id")
	if s.runs.Cancel(id) {
		return c.JSON(http.StatusAccepted, map[string]any{"run_id": id, "status": "cancelling"})
	}
	r, err := s.db.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return storeErr(err, fmt.Sprintf("run %q", id))
	}
	return apiError(ECONFLICT, "not_running", fmt.Sprintf("run %q is not running (status %s)", id, r.Status), map[string]any{"status": r.Status})
}

// POST /v1/runs/{id}/rerun {from_node, input?, modified_state?, version?}
func (s *Server) rerunRun(c echo.Context) error {
	id := c.Param("id")
	var body struct {
		FromNode      string          `json:"from_node"`
		Input         map[string]any  `json:"input"`
		ModifiedState map[string]any  `json:"modified_state"`
		Version       json.RawMessage `json:"version"` // "run" (default) | "current" | a version number
	}
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	choice, err := versionChoice(body.Version)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	orig, err := s.db.GetRunInfo(ctx, id)
	if err != nil {
		return storeErr(err, fmt.Sprintf("run %q", id))
	}
	if body.FromNode == "" {
		return apiError(EINVALID, "from_node_required", "from_node is required: the node to re-run from", map[string]any{"path": "from_node"})
	}
	cv, err := s.rerunVersion(ctx, orig, choice)
	if err != nil {
		return err
	}
	var chain *engine.Chain
	where := "the run's chain"
	if cv != nil {
		chain, where = cv.Doc, fmt.Sprintf("version %d of the chain", cv.Version)
	} else if chain, err = s.runs.RunChain(ctx, id); err != nil {
		return err
	}
	if chain.Node(body.FromNode) == nil {
		return apiError(EINVALID, "unknown_node", fmt.Sprintf("node %q is not in %s", body.FromNode, where), map[string]any{"path": "from_node", "node_id": body.FromNode})
	}
	if k, ok := blankKey(body.ModifiedState); ok {
		return apiError(EINVALID, "bad_state_patch", fmt.Sprintf("modified_state: key %q is not a state key (empty or blank)", k), map[string]any{"path": "modified_state"})
	}
	newID, err := s.runs.RerunWith(ctx, id, runs.RerunSpec{FromNode: body.FromNode, Input: body.Input, Modified: body.ModifiedState, Version: cv, By: answeredBy(c)})
	var invalid *runs.InvalidChainError
	if errors.As(err, &invalid) { // the version chosen has errors
		return apiError(EINVALID, engine.CodeInvalid, invalid.Error(), map[string]any{"issues": invalid.Issues, "path": "version"})
	}
	if err != nil {
		return storeErr(err, fmt.Sprintf("run %q", id))
	}
	version := orig.ChainVersion
	if cv != nil {
		version = cv.Version
	}
	runLocation(c, newID)
	return c.JSON(http.StatusAccepted, map[string]any{"run_id": newID, "status": s.startedStatus(newID), "parent_run_id": id, "from_node": body.FromNode, "chain_version": version})
}

// blankKey finds a key no expression could read (state."" is not a path).
func blankKey(m map[string]any) (string, bool) {
	for k := range m {
		if strings.TrimSpace(k) == "" {
			return k, true
		}
	}
	return "", false
}
