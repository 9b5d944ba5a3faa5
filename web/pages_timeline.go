package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// A timeline fragment is one batch of entries: the run page asks again
// after the last entry it got while its stream has delivered more, so a
// fragment is bounded like a replay page, by count and by stored bytes.
const (
	timelinePageEvents = 500
	timelinePageBytes  = 4 << 20
)

// fragTimeline renders the timeline entries of the events after seq
// `after` (GET /runs/{id}/timeline?after=SEQ). run.js appends them as
// live events arrive; they are the component the page's first render
// uses (views.TimelineItems), so an entry's text and markup are written
// once, in Go.
func (s *Server) fragTimeline(c echo.Context) error {
	id := pageParam(c, "id")
	after, err := timelineAfter(c.QueryParam("after"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.db.GetRunInfo(ctx, id)
	if err != nil {
		return pageNotFound(err, "run")
	}
	// The stream hands events to the page before the event writer stores
	// them: flush, so the entries the page asks for are there.
	if err := s.runs.Flush(ctx); err != nil {
		return fmt.Errorf("timeline of run %s: %w", id, err)
	}
	events, err := s.db.EventsAfterBytes(ctx, id, after, timelinePageEvents, timelinePageBytes)
	if err != nil {
		return fmt.Errorf("timeline of run %s: %w", id, err)
	}
	labels := views.NodeLabels(s.pageRunDoc(c, r))
	return renderPage(c, http.StatusOK, views.TimelineItems(events, labels, r.Kind == store.KindRerun))
}

// timelineAfter reads the seq a timeline fragment starts after (none: 0).
func timelineAfter(raw string) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("after must be an event seq, a non-negative integer; got %q", raw), map[string]any{"parameter": "after"})
	}
	return n, nil
}
