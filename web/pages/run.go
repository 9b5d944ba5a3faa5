package pages

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// PageRuns is a chain's run history.
func (s *Runs) PageRuns(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "chain")
	}
	runs, next, err := s.DB.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 100, Before: c.QueryParam("before")})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return httpcore.Error(httpcore.EBADREQUEST, "bad_cursor", err.Error(), nil)
		}
		return err
	}
	return RenderPage(c, http.StatusOK, views.RunsPage(ch, runs, next))
}

// PageAllRuns lists runs across all chains, filtered by status and chain,
// newest first, one bounded page at a time.
func (s *Runs) PageAllRuns(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := ops.RunsQuery(c, views.DefaultRunsPage)
	if err != nil {
		return err
	}
	page, err := s.DB.ListRunsPage(ctx, f)
	if err != nil {
		return ops.RunsCursorErr(c, err)
	}
	chains, _, err := s.DB.ListChains(ctx, store.ChainFilter{Limit: 1000})
	if err != nil {
		return err
	}
	return RenderPage(c, http.StatusOK, views.RunListPage(page.Runs, views.RunListFilter{
		Status: string(f.Status), ChainID: f.ChainID, Limit: f.Limit, Older: page.Older, Newer: page.Newer,
		Statuses: ops.RunStatusNames(), Chains: chains,
	}))
}

// pageEventsSoFar returns the events of a run so far, those the event
// writer has not stored yet included, so the page is as fresh as the
// stream.
func (s *Runs) pageEventsSoFar(c echo.Context, id string) ([]engine.Event, error) {
	evs, err := s.Runs.Events(c.Request().Context(), id, 0, ops.MaxPageEvents, 0)
	if err == nil && !s.SeesCredentialed(c) {
		evs = ops.WithholdEvents(evs)
	}
	return evs, err
}

// PageRun shows one run; the timeline so far is rendered here. The page then
// follows the run's stream from its start (the canvas's state is folded from
// every event) and appends the timeline entries after the last one it shows
// (FragTimeline).
func (s *Runs) PageRun(c echo.Context) error {
	id := ops.PageParam(c, "id")
	r, err := s.RunForControls(c, id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	ctx := c.Request().Context()
	events, err := s.Runs.Events(ctx, id, 0, ops.MaxPageEvents, ops.MaxPageEventBytes)
	if err != nil {
		return fmt.Errorf("run page %s: events: %w", id, err)
	}
	if !s.SeesCredentialed(c) {
		events = ops.WithholdEvents(events)
	}
	u, err := s.RunUsage(c, id)
	if err != nil {
		return err
	}
	answers, err := s.DB.Answers(c.Request().Context(), id)
	if err != nil {
		return err
	}
	pending, err := s.PendingPauses(c.Request().Context(), r)
	if err != nil {
		return err
	}
	doc := s.PageRunDoc(c, r)
	labels := views.NodeLabels(doc)
	return RenderPage(c, http.StatusOK, views.RunPage(r, events, labels, s.Runs.QueuePosition(id), ops.RunUsageView(u, labels, s.Runs, r, ops.ModelCredentials(doc)), answers, pending))
}

// FragRunControls renders the actions for the run's current status (the page
// fetches it again when the stream says the run stopped).
func (s *Runs) FragRunControls(c echo.Context) error {
	r, err := s.RunForControls(c, ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	c.Response().Header().Set("X-Run-Status", string(r.Status))
	c.Response().Header().Set("X-Run-Duration", strconv.FormatInt(r.DurationMS, 10))
	var labels views.Labels
	if r.Status == chain.StatusPaused { // only "Waiting at …" names nodes
		labels = views.NodeLabels(s.PageRunDoc(c, r))
	}
	pending, err := s.PendingPauses(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return RenderPage(c, http.StatusOK, views.RunControls(r, labels, s.Runs.QueuePosition(r.ID), pending))
}

// FragNodeDrawer shows what one node did.
func (s *Runs) FragNodeDrawer(c echo.Context) error {
	id, nodeID := ops.PageParam(c, "id"), ops.PageParam(c, "node")
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	nr, err := s.DB.GetRunNode(c.Request().Context(), id, nodeID)
	if err != nil {
		return err
	}
	d := views.DrawerData{Run: r, NodeID: nodeID, Result: nr}
	if doc := s.PageRunDoc(c, r); doc != nil {
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
			return ops.PageNotFound(store.ErrNotFound, "node "+strconv.Quote(nodeID)+" of this run's chain")
		}
	}
	if nr == nil {
		// Nodes run inside another (parallel branches, map bodies) have no
		// checkpoint entry of their own: what they did is in their events.
		events, err := s.pageEventsSoFar(c, id)
		if err != nil {
			return err
		}
		d.Result = ops.NodeFromEvents(events, nodeID)
	}
	if !s.SeesCredentialed(c) {
		d.Result = ops.WithheldNode(d.Result)
	}
	d.CanRerun = r.ChainID != "" && r.Status != chain.StatusRunning && d.Kind != "" && d.RunsInside == ""
	if r.ChainID != "" {
		if ch, err := s.DB.GetChain(c.Request().Context(), r.ChainID); err == nil {
			if d.CanRerun {
				d.CurrentVersion = ch.Version // offered when it is not the run's
			}
			d.Pins = drawerPins(r, ch.Doc, nodeID, nr, d.RunsInside)
		}
	}
	return RenderPage(c, http.StatusOK, views.NodeDrawer(d))
}

// drawerPins says what the drawer offers for the node's output and the
// chain's draft (doc, its current version): pinning the output shown, and
// unpinning or mocking it while the draft pins it. nr is the node's
// recorded result (nil for a node run inside another: its output is one
// item's or branch's, not pinned from here).
func drawerPins(r *store.Run, doc *chain.Chain, nodeID string, nr *engine.NodeResult, inside string) *views.PinControlsData {
	p := &views.PinControlsData{ChainID: r.ChainID, NodeID: nodeID, RunID: r.ID}
	_, p.Pinned = doc.PinnedOutputs[nodeID]
	n := doc.Node(nodeID)
	switch {
	case nr == nil || inside != "" || nr.Status != engine.PhaseDone || nr.Output == nil || nr.Pinned:
		// nothing of its own to pin (a pinned node's output is its pin)
	case n == nil:
		p.Why = "The draft no longer has this node, so its output cannot be pinned."
	case !chain.Pinnable(n.Kind):
		p.Why = "A " + string(n.Kind) + " node's output is its input: pin the node before it."
	case nr.Credentialed:
		// A pin is part of the chain document, which every viewer reads
		// and exports carry: an answer to a stored credential stays out.
		p.Why = "This output is a server's answer to a stored credential: it is not pinned, so it never lands in the chain document, which every viewer can read."
	default:
		p.CanPin = true
	}
	if !p.CanPin && !p.Pinned && p.Why == "" {
		return nil
	}
	return p
}

// PageResume answers a pause (Approve, Reject, or the JSON typed, sent as
// the same answers the API and the inbox send: engine.NewAnswer), or
// resumes a failed run with an optional state patch.
func (s *Runs) PageResume(c echo.Context) error {
	ctx := c.Request().Context()
	id := ops.PageParam(c, "id")
	var req engine.AnswerRequest
	switch c.FormValue("decision") {
	case "approve":
		req.Action = engine.ActionApprove
	case "reject":
		req.Action = engine.ActionReject
	case "value":
		if err := json.Unmarshal([]byte(c.FormValue("value")), &req.Value); err != nil {
			return s.formRefusal(c, "The resume value is not JSON", httpcore.EBADREQUEST, "bad_json", err.Error())
		}
		req.Action, req.HasValue = engine.ActionRespond, true
	default:
		if raw := strings.TrimSpace(c.FormValue("modified_state")); raw != "" {
			if err := json.Unmarshal([]byte(raw), &req.Modified); err != nil {
				return s.formRefusal(c, "The state patch is not a JSON object", httpcore.EBADREQUEST, "bad_json", err.Error())
			}
		}
	}
	if req.Action != "" { // the comment goes with an answer only
		req.Comment = strings.TrimSpace(c.FormValue("comment"))
	}
	pauseID := c.FormValue("pause_id") // one form per pending pause
	if len(pauseID) > engine.MaxPauseID {
		return s.formRefusal(c, "Could not resume", httpcore.EBADREQUEST, "bad_json", fmt.Sprintf("the pause id is over %d bytes", engine.MaxPauseID))
	}
	value, modified, err := engine.ReadAnswer(req)
	if err != nil {
		return s.formError(c, "Could not resume", err)
	}
	if err := s.RequireResumeRole(c, id, pauseID, value != nil); err != nil {
		return err
	}
	if value != nil { // an answer: audited like the API's (ops.AuditAnswer)
		ops.AuditAnswer(c, value)
	}
	if err := s.Runs.ResumePause(engine.WithSender(ctx, ops.AnsweredBy(c)), id, pauseID, value, modified); err != nil {
		return s.formError(c, "Could not resume", err)
	}
	return pageRedirect(c, "/runs/"+id)
}

// PageRerun starts a New run that keeps the outputs upstream of a node.
func (s *Runs) PageRerun(c echo.Context) error {
	id := ops.PageParam(c, "id")
	node := c.FormValue("node")
	if node == "" {
		return s.formRefusal(c, "Could not re-run", httpcore.EINVALID, "from_node_required", "no node given")
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
			return s.formRefusal(c, f.what+" is not a JSON object", httpcore.EBADREQUEST, "bad_json", msg)
		}
	}
	if k, ok := ops.BlankKey(modified); ok {
		return s.formRefusal(c, "The state patch (modified_state) has a blank key", httpcore.EINVALID, "bad_state_patch", strconv.Quote(k))
	}
	ctx := c.Request().Context()
	orig, err := s.DB.GetRunInfo(ctx, id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	cv, err := s.RerunVersion(ctx, orig, c.FormValue("version"))
	if err != nil {
		return s.formError(c, "Could not re-run on that version", err)
	}
	if cv != nil && cv.Doc.Node(node) == nil {
		return s.formRefusal(c, "Could not re-run on that version", httpcore.EINVALID, "unknown_node", "node "+strconv.Quote(node)+" is not in version "+strconv.Itoa(cv.Version)+" of the chain")
	}
	newID, err := s.Runs.RerunWith(ctx, id, runs.RerunSpec{FromNode: node, Input: input, Modified: modified, Version: cv, By: ops.AnsweredBy(c)})
	if err != nil {
		return s.formError(c, "Could not re-run", err)
	}
	return pageRedirect(c, "/runs/"+newID)
}

// PageCancel cancels a running run.
func (s *Runs) PageCancel(c echo.Context) error {
	id := ops.PageParam(c, "id")
	if s.Runs.Cancel(id) {
		// Give the run a moment to checkpoint its end so the page shows it.
		deadline := time.Now().Add(2 * time.Second)
		for s.Runs.Active(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pageRedirect(c, "/runs/"+id)
}
