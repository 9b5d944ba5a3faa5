package pages

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// A timeline fragment is one batch of entries, bounded like a replay page,
// by count and by stored bytes: a client asks again after the last entry
// it got.
const (
	TimelinePageEvents = 500
	timelinePageBytes  = 4 << 20
)

// FragTimeline renders the timeline entries of the events after seq
// `after` (GET /runs/{id}/timeline?after=SEQ): the component the page's
// first render uses (views.TimelineItems), so an entry's text and markup
// are written once, in Go. The run page gets the same entries on its
// stream (web/live); this serves a client that asks for a range.
func (s *Runs) FragTimeline(c echo.Context) error {
	id := ops.PageParam(c, "id")
	after, err := timelineAfter(c.QueryParam("after"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.DB.GetRunInfo(ctx, id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	// The stream hands events to the page before the event writer stores
	// them: the read sees those it holds too.
	events, err := s.Runs.Events(ctx, id, after, TimelinePageEvents, timelinePageBytes)
	if err != nil {
		return fmt.Errorf("timeline of run %s: %w", id, err)
	}
	if !s.SeesCredentialed(c) {
		events = ops.WithholdEvents(events)
	}
	labels := views.NodeLabels(s.PageRunDoc(c, r))
	return RenderPage(c, http.StatusOK, views.TimelineItems(events, labels, r.Kind == store.KindRerun))
}

// timelineAfter reads the seq a timeline fragment starts after (none: 0).
func timelineAfter(raw string) (int64, error) {
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("after must be an event seq, a non-negative integer; got %q", raw), map[string]any{"parameter": "after"})
	}
	return n, nil
}
