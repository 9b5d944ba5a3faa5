package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/a-h/templ"
	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// pageView is what a run page's stream adds to the API's.
type pageView struct {
	shown  int64 // entries are sent for the events after it
	labels views.Labels
	rerun  bool
	creds  []string // the credentials its agent nodes' models name (ops.ModelCredentials)
}

// Names of the page frames a live event keeps (runs.LiveEvent.EncodedAs):
// one for readers who see credentialed outputs, one for those who do not.
const (
	encPage         = "page"
	encPageWithheld = "page-withheld"
)

// GET /runs/{id}/events?after=SEQ&shown=SEQ
func (s *Streams) PageRunEvents(c echo.Context) error {
	id := ops.PageParam(c, "id")
	after, err := streamAfter(c)
	if err != nil {
		return err
	}
	shown := int64(0)
	if raw := c.QueryParam("shown"); raw != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil || n < 0 {
			return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("shown must be an event seq, a non-negative integer; got %q", raw), map[string]any{"parameter": "shown"})
		}
		shown = n
	}
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	doc := s.PageRunDoc(c, r)
	page := &pageView{shown: shown, labels: views.NodeLabels(doc), rerun: r.Kind == store.KindRerun, creds: ops.ModelCredentials(doc)}
	return s.streamRun(c, id, after, page)
}

// live is a live event's frame, shared with the other pages that follow
// the run and see (or do not see) what the reader does.
func (p *pageView) live(ev *runs.LiveEvent, withhold bool) ([]byte, error) {
	if withhold && ev.Credentialed && ev.Output != nil {
		return ev.EncodedAs(encPageWithheld, func(e *engine.Event) ([]byte, error) {
			return p.frame(&ops.WithholdEvents([]engine.Event{*e})[0], true)
		})
	}
	return ev.EncodedAs(encPage, func(e *engine.Event) ([]byte, error) { return p.frame(e, true) })
}

// frame is an event's page frame, with its timeline entry when entry is
// set.
func (p *pageView) frame(ev *engine.Event, entry bool) ([]byte, error) {
	evJSON, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var html []byte
	if entry {
		// An entry shows no viewer-dependent text: rendered once, for all.
		if html, err = renderHTML(context.Background(), views.TimelineItem(ev, p.labels, p.rerun)); err != nil {
			return nil, fmt.Errorf("timeline entry of event %d: %w", ev.Seq, err)
		}
	}
	buf := make([]byte, 0, len(evJSON)+len(html)*11/10+len(ev.Phase)+64)
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Phase...)
	buf = append(buf, "\ndata: {\"event\":"...)
	buf = append(buf, evJSON...)
	if entry {
		buf = append(buf, ",\"entry\":"...)
		buf = appendJSONString(buf, html)
	}
	return append(buf, "}\n\n"...), nil
}

// pageFinal is what the finished (or paused) run's page shows, read once
// for the pages that follow it and see the same outputs.
type pageFinal struct {
	run     *store.Run
	pending []engine.Pending
	usage   *ops.RunUsageJSON
	labels  views.Labels
	creds   []string
}

// finishPage sends the page's last frame: the run's status, its controls
// and its usage panel, rendered for the caller.
func (st *sseStream) finishPage(ctx context.Context) error {
	s, c := st.s, st.c
	key := st.run + "\x00page"
	if st.withhold {
		key += "\x00withheld"
	}
	v, err, _ := s.finals.Do(key, func() (any, error) {
		r, err := s.RunForControls(c, st.run)
		if err != nil {
			return nil, err
		}
		pending, err := s.PendingPauses(ctx, r)
		if err != nil {
			return nil, err
		}
		u, err := s.RunUsage(c, st.run)
		if err != nil {
			return nil, err
		}
		return &pageFinal{run: r, pending: pending, usage: u, labels: st.page.labels, creds: st.page.creds}, nil
	})
	if err != nil {
		return st.fail(err)
	}
	f := v.(*pageFinal)
	var labels views.Labels
	if f.run.Status == chain.StatusPaused { // only "Waiting at …" names nodes, as GET /runs/{id}/controls
		labels = f.labels
	}
	controls, err := renderHTML(ctx, views.RunControls(f.run, labels, s.Runs.QueuePosition(f.run.ID), f.pending))
	if err != nil {
		return st.fail(err)
	}
	usage, err := renderHTML(ctx, views.RunUsagePanel(ops.RunUsageView(f.usage, f.labels, s.Runs, f.run, f.creds)))
	if err != nil {
		return st.fail(err)
	}
	frame := make([]byte, 0, len(controls)+len(usage)+128)
	frame = append(frame, "event: run\ndata: {\"status\":"...)
	frame = appendJSONString(frame, []byte(f.run.Status))
	frame = append(frame, ",\"duration_ms\":"...)
	frame = strconv.AppendInt(frame, f.run.DurationMS, 10)
	frame = append(frame, ",\"controls\":"...)
	frame = appendJSONString(frame, controls)
	frame = append(frame, ",\"usage\":"...)
	frame = appendJSONString(frame, usage)
	frame = append(frame, "}\n\n"...)
	if err := st.out.Append(ctx, frame); err == nil {
		_ = st.flush()
	}
	return nil
}

// renderHTML renders a component to bytes; ctx carries the viewer the
// markup may depend on.
func renderHTML(ctx context.Context, comp templ.Component) ([]byte, error) {
	var b bytes.Buffer
	if err := comp.Render(ctx, &b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// appendJSONString appends s as a JSON string on one line, markup left
// as it is (json.Marshal would escape each < and >).
func appendJSONString(buf, s []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s)) // a string always encodes
	return append(buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
