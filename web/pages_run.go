package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// maxPageEvents bounds the events a node's details and a comparison fold
// from; maxPageEvents and maxPageEventBytes (of stored events) bound the
// timeline a run page renders at first. The page's stream replays the whole
// run, and the page fetches the rest of the timeline (fragTimeline).
const (
	maxPageEvents     = 20_000
	maxPageEventBytes = 16 << 20
)

// pageRuns is a chain's run history.
func (s *Server) pageRuns(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.db.GetChain(ctx, pageParam(c, "id"))
	if err != nil {
		return pageNotFound(err, "chain")
	}
	runs, next, err := s.db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 100, Before: c.QueryParam("before")})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return apiError(EBADREQUEST, "bad_cursor", err.Error(), nil)
		}
		return err
	}
	return renderPage(c, http.StatusOK, views.RunsPage(ch, runs, next))
}

// pageAllRuns lists runs across all chains, filtered by status and chain,
// newest first, one bounded page at a time.
func (s *Server) pageAllRuns(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := runsQuery(c, views.DefaultRunsPage)
	if err != nil {
		return err
	}
	page, err := s.db.ListRunsPage(ctx, f)
	if err != nil {
		return runsCursorErr(c, err)
	}
	chains, _, err := s.db.ListChains(ctx, store.ChainFilter{Limit: 1000})
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.RunListPage(page.Runs, views.RunListFilter{
		Status: string(f.Status), ChainID: f.ChainID, Limit: f.Limit, Older: page.Older, Newer: page.Newer,
		Statuses: runStatusNames(), Chains: chains,
	}))
}

// pageEventsSoFar returns the stored events of a run (flushing the writer
// first so the page is as fresh as the stream).
func (s *Server) pageEventsSoFar(c echo.Context, id string) ([]engine.Event, error) {
	ctx := c.Request().Context()
	if err := s.runs.Flush(ctx); err != nil {
		return nil, err
	}
	return s.db.EventsAfter(ctx, id, 0, maxPageEvents)
}

// pageRun shows one run; the timeline so far is rendered here. The page then
// follows the run's stream from its start (the canvas's state is folded from
// every event) and appends the timeline entries after the last one it shows
// (fragTimeline).
func (s *Server) pageRun(c echo.Context) error {
	id := pageParam(c, "id")
	r, err := s.runForControls(c, id)
	if err != nil {
		return pageNotFound(err, "run")
	}
	ctx := c.Request().Context()
	if err := s.runs.Flush(ctx); err != nil {
		return fmt.Errorf("run page %s: %w", id, err)
	}
	events, err := s.db.EventsAfterBytes(ctx, id, 0, maxPageEvents, maxPageEventBytes)
	if err != nil {
		return fmt.Errorf("run page %s: events: %w", id, err)
	}
	u, err := s.runUsage(c, id)
	if err != nil {
		return err
	}
	answers, err := s.db.Answers(c.Request().Context(), id)
	if err != nil {
		return err
	}
	pending, err := s.pendingPauses(c.Request().Context(), r)
	if err != nil {
		return err
	}
	doc := s.pageRunDoc(c, r)
	labels := views.NodeLabels(doc)
	return renderPage(c, http.StatusOK, views.RunPage(r, events, labels, s.runs.QueuePosition(id), runUsageView(u, labels), answers, pending))
}

// pageRunDoc is the chain a run ran, for a page's labels (nil when it cannot
// be read: the page then names nodes by id).
func (s *Server) pageRunDoc(c echo.Context, r *store.Run) *engine.Chain {
	if r.ChainID == "" || r.ChainVersion == 0 {
		doc, _ := s.adHocDoc(c.Request().Context(), r.ID)
		return doc
	}
	v, err := s.db.GetVersion(c.Request().Context(), r.ChainID, r.ChainVersion)
	if err != nil {
		return nil
	}
	return v.Doc
}

// adHocDoc is the chain an ad-hoc run ran (A2E, an agent's compiled chain),
// which no saved version holds: its start checkpoint's (runs.RunChain). A
// run that has logged nothing yet has none.
func (s *Server) adHocDoc(ctx context.Context, id string) (*engine.Chain, error) {
	doc, err := s.runs.RunChain(ctx, id)
	var none *engine.ChainCheckpointError
	if errors.As(err, &none) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: its chain: %w", id, err)
	}
	return doc, nil
}

// runForControls reads what the run controls show: the run's row, and the
// node results (folded from the log) only when it is paused, for each
// waiting node's prompt.
func (s *Server) runForControls(c echo.Context, id string) (*store.Run, error) {
	r, err := s.db.GetRunInfo(c.Request().Context(), id)
	if err == nil && r.Status == engine.StatusPaused {
		r, err = s.db.GetRun(c.Request().Context(), id)
	}
	return r, err
}

// fragRunControls renders the actions for the run's current status (the page
// fetches it again when the stream says the run stopped).
func (s *Server) fragRunControls(c echo.Context) error {
	r, err := s.runForControls(c, pageParam(c, "id"))
	if err != nil {
		return pageNotFound(err, "run")
	}
	c.Response().Header().Set("X-Run-Status", string(r.Status))
	c.Response().Header().Set("X-Run-Duration", strconv.FormatInt(r.DurationMS, 10))
	var labels views.Labels
	if r.Status == engine.StatusPaused { // only "Waiting at …" names nodes
		labels = views.NodeLabels(s.pageRunDoc(c, r))
	}
	pending, err := s.pendingPauses(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.RunControls(r, labels, s.runs.QueuePosition(r.ID), pending))
}

// fragNodeDrawer shows what one node did.
func (s *Server) fragNodeDrawer(c echo.Context) error {
	id, nodeID := pageParam(c, "id"), pageParam(c, "node")
	r, err := s.db.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return pageNotFound(err, "run")
	}
	nr, err := s.db.GetRunNode(c.Request().Context(), id, nodeID)
	if err != nil {
		return err
	}
	d := views.DrawerData{Run: r, NodeID: nodeID, Result: nr}
	if doc := s.pageRunDoc(c, r); doc != nil {
		if n := doc.Node(nodeID); n != nil {
			d.Kind, d.Label = string(n.Kind), n.Label
			if d.Label == nodeID {
				d.Label = ""
			}
			// A map body or parallel branch runs only when its owner does:
			// a re-run from it would reuse the owner and never run it.
			for i := range doc.Nodes {
				if o := &doc.Nodes[i]; o.MapNode == nodeID || slices.Contains(o.Branches, nodeID) {
					d.RunsInside, d.RunsInsideLabel = o.ID, o.Label
					if o.Label == o.ID {
						d.RunsInsideLabel = ""
					}
				}
			}
		} else if nr == nil {
			return pageNotFound(store.ErrNotFound, "node "+strconv.Quote(nodeID)+" of this run's chain")
		}
	}
	if nr == nil {
		// Nodes run inside another (parallel branches, map bodies) have no
		// checkpoint entry of their own: what they did is in their events.
		events, err := s.pageEventsSoFar(c, id)
		if err != nil {
			return err
		}
		d.Result = nodeFromEvents(events, nodeID)
	}
	d.CanRerun = r.ChainID != "" && r.Status != engine.StatusRunning && d.Kind != "" && d.RunsInside == ""
	if d.CanRerun {
		if ch, err := s.db.GetChain(c.Request().Context(), r.ChainID); err == nil {
			d.CurrentVersion = ch.Version // offered when it is not the run's
		}
	}
	return renderPage(c, http.StatusOK, views.NodeDrawer(d))
}

// pageResume answers a pause (Approve, Reject, or the JSON typed, sent as
// the same answers the API and the inbox send: engine.NewAnswer), or
// resumes a failed run with an optional state patch.
func (s *Server) pageResume(c echo.Context) error {
	ctx := c.Request().Context()
	id := pageParam(c, "id")
	var req engine.AnswerRequest
	switch c.FormValue("decision") {
	case "approve":
		req.Action = engine.ActionApprove
	case "reject":
		req.Action = engine.ActionReject
	case "value":
		if err := json.Unmarshal([]byte(c.FormValue("value")), &req.Value); err != nil {
			return s.formRefusal(c, "The resume value is not JSON", EBADREQUEST, "bad_json", err.Error())
		}
		req.Action, req.HasValue = engine.ActionRespond, true
	default:
		if raw := strings.TrimSpace(c.FormValue("modified_state")); raw != "" {
			if err := json.Unmarshal([]byte(raw), &req.Modified); err != nil {
				return s.formRefusal(c, "The state patch is not a JSON object", EBADREQUEST, "bad_json", err.Error())
			}
		}
	}
	if req.Action != "" { // the comment goes with an answer only
		req.Comment = strings.TrimSpace(c.FormValue("comment"))
	}
	pauseID := c.FormValue("pause_id") // one form per pending pause
	if len(pauseID) > engine.MaxPauseID {
		return s.formRefusal(c, "Could not resume", EBADREQUEST, "bad_json", fmt.Sprintf("the pause id is over %d bytes", engine.MaxPauseID))
	}
	value, modified, err := engine.ReadAnswer(req)
	if err != nil {
		return s.formError(c, "Could not resume", err)
	}
	if err := s.requireResumeRole(c, id, pauseID, value != nil); err != nil {
		return err
	}
	if value != nil { // an answer: audited like the API's (api_approvals.go)
		auditAnswer(c, value)
	}
	if err := s.runs.ResumePause(engine.WithSender(ctx, answeredBy(c)), id, pauseID, value, modified); err != nil {
		return s.formError(c, "Could not resume", err)
	}
	return pageRedirect(c, "/runs/"+id)
}

// pageRerun starts a new run that keeps the outputs upstream of a node.
func (s *Server) pageRerun(c echo.Context) error {
	id := pageParam(c, "id")
	node := c.FormValue("node")
	if node == "" {
		return s.formRefusal(c, "Could not re-run", EINVALID, "from_node_required", "no node given")
	}
	// Both fields are optional: empty keeps the run's input and its state.
	var input, modified map[string]any
	for _, f := range []struct {
		name, what string
		into       *map[string]any
	}{{"input", "The input", &input}, {"modified_state", "The state patch (modified_state)", &modified}} {
		raw := strings.TrimSpace(c.FormValue(f.name))
		if raw == "" {
			continue
		}
		if err := json.Unmarshal([]byte(raw), f.into); err != nil || *f.into == nil {
			msg := "expected a JSON object"
			if err != nil {
				msg = err.Error()
			}
			return s.formRefusal(c, f.what+" is not a JSON object", EBADREQUEST, "bad_json", msg)
		}
	}
	if k, ok := blankKey(modified); ok {
		return s.formRefusal(c, "The state patch (modified_state) has a blank key", EINVALID, "bad_state_patch", strconv.Quote(k))
	}
	ctx := c.Request().Context()
	orig, err := s.db.GetRunInfo(ctx, id)
	if err != nil {
		return pageNotFound(err, "run")
	}
	cv, err := s.rerunVersion(ctx, orig, c.FormValue("version"))
	if err != nil {
		return s.formError(c, "Could not re-run on that version", err)
	}
	if cv != nil && cv.Doc.Node(node) == nil {
		return s.formRefusal(c, "Could not re-run on that version", EINVALID, "unknown_node", "node "+strconv.Quote(node)+" is not in version "+strconv.Itoa(cv.Version)+" of the chain")
	}
	newID, err := s.runs.RerunWith(ctx, id, runs.RerunSpec{FromNode: node, Input: input, Modified: modified, Version: cv, By: answeredBy(c)})
	if err != nil {
		return s.formError(c, "Could not re-run", err)
	}
	return pageRedirect(c, "/runs/"+newID)
}

// pageCancel cancels a running run.
func (s *Server) pageCancel(c echo.Context) error {
	id := pageParam(c, "id")
	if s.runs.Cancel(id) {
		// Give the run a moment to checkpoint its end so the page shows it.
		deadline := time.Now().Add(2 * time.Second)
		for s.runs.Active(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pageRedirect(c, "/runs/"+id)
}

// nodeFromEvents folds what a node did from its events (the last run of it
// wins; a map body's items fold into one line per phase): nil when it has
// none.
func nodeFromEvents(events []engine.Event, nodeID string) *engine.NodeResult {
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
			nr.Reused = e.Reused
			if e.Iteration > 0 {
				nr.Iteration = e.Iteration
			}
		case engine.PhaseDone, engine.PhaseError, engine.PhaseSkip:
			nr.Status, nr.Ended = e.Phase, e.Time
			nr.Output, nr.Error, nr.Reason, nr.Matched = e.Output, e.Error, e.Reason, e.Matched
			if e.Attempt > 0 {
				nr.Attempts = e.Attempt
			}
			nr.Reused = e.Reused
		case engine.PhasePaused:
			nr.Status, nr.Prompt = engine.PhasePaused, e.Prompt
		}
	}
	return nr
}
