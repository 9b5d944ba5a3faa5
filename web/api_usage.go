package web

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

type modelCallJSON struct {
	store.ModelCall
	Cost *float64 `json:"cost"`
}

type nodeUsageJSON struct {
	NodeID string `json:"node_id"`
	pricing.Totals
}

// runUsageJSON is the answer of GET /v1/runs/{id}/usage.
type runUsageJSON struct {
	RunID  string          `json:"run_id"`
	Priced bool            `json:"priced"` // a price table is loaded
	Calls  []modelCallJSON `json:"calls"`
	Nodes  []nodeUsageJSON `json:"nodes"` // in the order of their first call
	Total  pricing.Totals  `json:"total"`
}

// runUsage sums a run's model calls per node and in total.
func (s *Server) runUsage(c echo.Context, runID string) (*runUsageJSON, error) {
	calls, err := s.db.RunUsage(c.Request().Context(), runID)
	if err != nil {
		return nil, err
	}
	out := &runUsageJSON{RunID: runID, Priced: s.prices != nil, Calls: make([]modelCallJSON, 0, len(calls)), Nodes: []nodeUsageJSON{}}
	index := map[string]int{}
	for _, mc := range calls {
		j := modelCallJSON{ModelCall: mc}
		if cost, ok := s.prices.Cost(mc.Model, mc.InputTokens, mc.OutputTokens); ok {
			j.Cost = &cost
		}
		out.Calls = append(out.Calls, j)
		i, ok := index[mc.NodeID]
		if !ok {
			i = len(out.Nodes)
			index[mc.NodeID] = i
			out.Nodes = append(out.Nodes, nodeUsageJSON{NodeID: mc.NodeID})
		}
		unreported := int64(0)
		if !mc.Reported {
			unreported = 1
		}
		out.Nodes[i].Add(s.prices, mc.Model, 1, mc.InputTokens, mc.OutputTokens, unreported)
		out.Total.Add(s.prices, mc.Model, 1, mc.InputTokens, mc.OutputTokens, unreported)
	}
	if s.prices != nil && out.Total.Cost == nil {
		out.Total.Cost = new(float64)
	}
	return out, nil
}

// GET /v1/runs/{id}/usage: a run's model calls, tokens and cost, per node
// and in total.
func (s *Server) getRunUsage(c echo.Context) error {
	id := pageParam(c, "id")
	if _, err := s.db.GetRunInfo(c.Request().Context(), id); err != nil {
		return storeErr(err, fmt.Sprintf("run %q", id))
	}
	u, err := s.runUsage(c, id)
	if err != nil {
		return fmt.Errorf("usage of run %q: %w", id, err)
	}
	return c.JSON(http.StatusOK, u)
}

// usageBuckets are the time buckets GET /v1/usage offers.
var usageBuckets = map[string]time.Duration{"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}

// maxUsageSpan bounds the period one usage request sums.
const maxUsageSpan = 366 * 24 * time.Hour

type usageRowJSON struct {
	store.UsageRow
	Cost *float64 `json:"cost"`
}

type usageKeyJSON struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	pricing.Totals
}

// usageJSON is the answer of GET /v1/usage.
type usageJSON struct {
	By     string         `json:"by"`
	Bucket string         `json:"bucket"`
	Since  time.Time      `json:"since"`
	Until  time.Time      `json:"until"`
	Priced bool           `json:"priced"`
	Rows   []usageRowJSON `json:"rows"`  // per key, model and bucket, newest bucket first
	Keys   []usageKeyJSON `json:"keys"`  // per chain or agent over the whole period, costliest (then most tokens) first
	Total  pricing.Totals `json:"total"` // the whole period
	More   bool           `json:"more"`  // rows were cut at the limit: narrow the period or the key
	Limit  int            `json:"limit"`
}

// usageQuery reads GET /v1/usage's parameters.
func usageQuery(q url.Values, now time.Time) (store.UsageFilter, string, error) {
	f := store.UsageFilter{By: q.Get("by"), All: true}
	bad := func(p, msg string) error {
		return apiError(EBADREQUEST, "bad_parameter", msg, map[string]any{"parameter": p})
	}
	switch f.By {
	case "":
		f.By = store.UsageByChain
	case store.UsageByChain, store.UsageByAgent:
	default:
		return f, "", bad("by", fmt.Sprintf("by must be chain or agent, got %q", f.By))
	}
	bucket := q.Get("bucket")
	if bucket == "" {
		bucket = "day"
	}
	var ok bool
	if f.Bucket, ok = usageBuckets[bucket]; !ok {
		return f, "", bad("bucket", fmt.Sprintf("bucket must be hour, day or week, got %q", bucket))
	}
	f.Until = now
	if v := q.Get("until"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return f, "", bad("until", fmt.Sprintf("until must be an RFC 3339 time (2026-05-01T00:00:00Z), got %q", v))
		}
		f.Until = t
	}
	f.Since = f.Until.Add(-30 * 24 * time.Hour)
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return f, "", bad("since", fmt.Sprintf("since must be an RFC 3339 time (2026-04-01T00:00:00Z), got %q", v))
		}
		f.Since = t
	}
	if !f.Since.Before(f.Until) {
		return f, "", bad("since", fmt.Sprintf("since (%s) must be before until (%s)", f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339)))
	}
	if f.Until.Sub(f.Since) > maxUsageSpan {
		return f, "", bad("since", "the period is over 366 days: narrow since and until")
	}
	if k, set := q["key"]; set {
		f.Key, f.All = k[0], false
	}
	limit, err := intParam("limit", q.Get("limit"), 1000, 1, 10000)
	if err != nil {
		return f, "", err
	}
	f.Limit = limit
	return f, bucket, nil
}

// usage sums model calls per chain or agent over time, with their cost,
// as the query q asks.
func (s *Server) usage(c echo.Context, q url.Values) (*usageJSON, error) {
	f, bucket, err := usageQuery(q, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	f.Limit++ // one more says there are more
	rows, err := s.db.Usage(c.Request().Context(), f)
	if err != nil {
		return nil, fmt.Errorf("usage by %s: %w", f.By, err)
	}
	out := &usageJSON{By: f.By, Bucket: bucket, Since: f.Since, Until: f.Until, Priced: s.prices != nil,
		Rows: make([]usageRowJSON, 0, len(rows)), Keys: []usageKeyJSON{}, Limit: limit}
	if len(rows) > limit {
		rows, out.More = rows[:limit], true
	}
	index := map[string]int{}
	for _, r := range rows {
		j := usageRowJSON{UsageRow: r}
		if cost, ok := s.prices.Cost(r.Model, r.InputTokens, r.OutputTokens); ok {
			j.Cost = &cost
		}
		out.Rows = append(out.Rows, j)
		i, ok := index[r.Key]
		if !ok {
			i = len(out.Keys)
			index[r.Key] = i
			out.Keys = append(out.Keys, usageKeyJSON{Key: r.Key, Name: r.Name})
		}
		out.Keys[i].Add(s.prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
		out.Total.Add(s.prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
	}
	if s.prices != nil && out.Total.Cost == nil {
		out.Total.Cost = new(float64)
	}
	sortUsageKeys(out.Keys)
	return out, nil
}

// sortUsageKeys orders the costliest first, then the most tokens, then by name.
func sortUsageKeys(keys []usageKeyJSON) {
	cost := func(k usageKeyJSON) float64 {
		if k.Cost == nil {
			return 0
		}
		return *k.Cost
	}
	slices.SortStableFunc(keys, func(a, b usageKeyJSON) int {
		if c := cmp.Compare(cost(b), cost(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.InputTokens+b.OutputTokens, a.InputTokens+a.OutputTokens); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// GET /v1/usage: tokens and cost per chain or agent over time.
func (s *Server) getUsage(c echo.Context) error {
	u, err := s.usage(c, c.QueryParams())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}
