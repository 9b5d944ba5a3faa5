package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

func (s *Server) usagePageRoutes(e *echo.Echo) {
	e.GET("/usage", s.pageUsage)
	e.GET("/runs/:id/usage", s.fragRunUsage)
}

// runUsageView is the run page's usage panel for a run's usage.
func runUsageView(u *runUsageJSON, labels views.Labels) views.RunUsage {
	v := views.RunUsage{RunID: u.RunID, Priced: u.Priced, Total: usageLine("", "", u.Total)}
	for _, n := range u.Nodes {
		label := n.NodeID
		if l := labels[n.NodeID]; l != "" && l != n.NodeID {
			label = l + " (" + n.NodeID + ")"
		}
		v.Nodes = append(v.Nodes, usageLine(n.NodeID, label, n.Totals))
	}
	return v
}

func usageLine(id, label string, t pricing.Totals) views.UsageLine {
	return views.UsageLine{ID: id, Label: label, Calls: t.Calls, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, Cost: t.Cost, Unpriced: t.Unpriced}
}

// fragRunUsage is the run page's usage panel, reloaded as model calls
// report their tokens.
func (s *Server) fragRunUsage(c echo.Context) error {
	id := pageParam(c, "id")
	r, err := s.db.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return pageNotFound(err, "run")
	}
	if err := s.runs.Flush(c.Request().Context()); err != nil { // the usage rows come with the events
		return err
	}
	u, err := s.runUsage(c, id)
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.RunUsagePanel(runUsageView(u, views.NodeLabels(s.pageRunDoc(c, r)))))
}

// pageUsage shows tokens and cost per chain or agent over the last days,
// in time buckets (the page over GET /v1/usage).
func (s *Server) pageUsage(c echo.Context) error {
	days, err := intParam("days", c.QueryParam("days"), 30, 1, 366)
	if err != nil {
		return err
	}
	q := url.Values{"by": {c.QueryParam("by")}, "bucket": {c.QueryParam("bucket")}}
	now := time.Now().UTC()
	q.Set("since", now.Add(-time.Duration(days)*24*time.Hour).Format(time.RFC3339))
	q.Set("until", now.Format(time.RFC3339))
	u, err := s.usage(c, q)
	if err != nil {
		return err
	}
	v := views.UsagePage{By: u.By, Bucket: u.Bucket, Days: days, Since: u.Since, Priced: u.Priced, More: u.More, Total: usageLine("", "Total", u.Total)}
	for _, k := range u.Keys {
		v.Lines = append(v.Lines, s.usageKeyLine(u.By, k.Key, k.Name, k.Totals))
	}
	for _, r := range u.Rows {
		if n := len(v.Series); n == 0 || !v.Series[n-1].Bucket.Equal(r.Bucket) {
			v.Series = append(v.Series, views.UsageSlice{Bucket: r.Bucket})
		}
		var t pricing.Totals
		t.Add(s.prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
		line := s.usageKeyLine(u.By, r.Key, r.Name, t)
		line.Label += " · " + r.Model
		sl := &v.Series[len(v.Series)-1]
		sl.Lines = append(sl.Lines, line)
	}
	return renderPage(c, http.StatusOK, views.UsagePageView(v))
}

// usageKeyLine labels a chain (linked to its runs) or an agent (linked to
// its page).
func (s *Server) usageKeyLine(by, key, name string, t pricing.Totals) views.UsageLine {
	l := usageLine(key, name, t)
	switch {
	case by == "agent":
		l.Href = "/agents/" + url.PathEscape(key)
	case key != "":
		l.Href = "/chains/" + url.PathEscape(key) + "/runs"
	default:
		l.Label = name + " (ad hoc)"
		if name == "" {
			l.Label = "ad-hoc runs"
		}
	}
	return l
}
