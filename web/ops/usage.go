package ops

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

type ModelCallJSON struct {
	store.ModelCall
	Cost *float64 `json:"cost"`
}

type NodeUsageJSON struct {
	NodeID string `json:"node_id"`
	pricing.Totals
}

// RunUsageJSON is the answer of GET /v1/runs/{id}/Usage.
type RunUsageJSON struct {
	RunID  string          `json:"run_id"`
	Priced bool            `json:"priced"` // a price table is loaded
	Calls  []ModelCallJSON `json:"calls"`
	Nodes  []NodeUsageJSON `json:"nodes"` // in the order of their first call
	Total  pricing.Totals  `json:"total"`
}

// RunUsage sums a run's model calls per node and in total.
func (s *Env) RunUsage(c echo.Context, runID string) (*RunUsageJSON, error) {
	// The model calls are indexed from the events as they are stored:
	// those of the events the writer holds are taken first, so each call
	// is counted, once, whether or not its event was stored in between.
	buffered := s.Runs.Buffered(runID, 0)
	calls, err := s.DB.RunUsage(c.Request().Context(), runID)
	if err != nil {
		return nil, err
	}
	calls = WithBufferedCalls(calls, buffered)
	out := &RunUsageJSON{RunID: runID, Priced: s.Prices != nil, Calls: make([]ModelCallJSON, 0, len(calls)), Nodes: []NodeUsageJSON{}}
	index := map[string]int{}
	for _, mc := range calls {
		j := ModelCallJSON{ModelCall: mc}
		if cost, ok := s.Prices.Cost(mc.Model, mc.InputTokens, mc.OutputTokens); ok {
			j.Cost = &cost
		}
		out.Calls = append(out.Calls, j)
		i, ok := index[mc.NodeID]
		if !ok {
			i = len(out.Nodes)
			index[mc.NodeID] = i
			out.Nodes = append(out.Nodes, NodeUsageJSON{NodeID: mc.NodeID})
		}
		unreported := int64(0)
		if !mc.Reported {
			unreported = 1
		}
		out.Nodes[i].Add(s.Prices, mc.Model, 1, mc.InputTokens, mc.OutputTokens, unreported)
		out.Total.Add(s.Prices, mc.Model, 1, mc.InputTokens, mc.OutputTokens, unreported)
	}
	if s.Prices != nil && out.Total.Cost == nil {
		out.Total.Cost = new(float64)
	}
	return out, nil
}

// WithBufferedCalls adds to a run's stored model calls those of its
// buffered events that are not stored yet, in seq order.
func WithBufferedCalls(calls []store.ModelCall, buffered []engine.Event) []store.ModelCall {
	var stored map[int64]bool
	for i := range buffered {
		mc, ok := store.ModelCallOf(&buffered[i])
		if !ok {
			continue
		}
		if stored == nil {
			stored = make(map[int64]bool, len(calls))
			for _, c := range calls {
				stored[c.Seq] = true
			}
		}
		if !stored[mc.Seq] {
			calls = append(calls, mc)
		}
	}
	return calls
}

// UsageBuckets are the time buckets GET /v1/Usage offers.
var UsageBuckets = map[string]time.Duration{"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour}

// MaxUsageSpan bounds the period one Usage request sums.
const MaxUsageSpan = 366 * 24 * time.Hour

type UsageRowJSON struct {
	store.UsageRow
	Cost *float64 `json:"cost"`
}

type UsageKeyJSON struct {
	Key  string `json:"key"`
	Name string `json:"name"`
	pricing.Totals
}

// UsageJSON is the answer of GET /v1/Usage.
type UsageJSON struct {
	By     string         `json:"by"`
	Bucket string         `json:"bucket"`
	Since  time.Time      `json:"since"`
	Until  time.Time      `json:"until"`
	Priced bool           `json:"priced"`
	Rows   []UsageRowJSON `json:"rows"`  // per key, model and bucket, newest bucket first
	Keys   []UsageKeyJSON `json:"keys"`  // per chain or agent over the whole period, costliest (then most tokens) first
	Total  pricing.Totals `json:"total"` // the whole period
	More   bool           `json:"more"`  // rows were cut at the limit: narrow the period or the key
	Limit  int            `json:"limit"`
	// Budgets are the model spending limits runs are held to now.
	Budgets BudgetsJSON `json:"budgets"`
}

// BudgetsJSON are the model spending budgets: the studio's per run
// (null: none) and for the day (null: none), and Accounts, every budget
// in one list (the studio's, and each chain's, trigger's and credential's
// day account made so far), with what it has spent, what calls in flight
// hold and when it resets.
type BudgetsJSON struct {
	Run      *BudgetLimitJSON    `json:"run"`
	Day      *DayBudgetJSON      `json:"day"`
	Accounts []BudgetAccountJSON `json:"accounts"`
}

// BudgetLimitJSON is a budget's size; an absent field is no limit on it.
type BudgetLimitJSON struct {
	Tokens int64    `json:"tokens,omitempty"`
	Cost   *float64 `json:"cost,omitempty"`
}

// DayBudgetJSON is the studio's daily budget now.
type DayBudgetJSON struct {
	Limit          BudgetLimitJSON `json:"limit"`
	SpentTokens    int64           `json:"spent_tokens"`
	SpentCost      float64         `json:"spent_cost"`
	ReservedTokens int64           `json:"reserved_tokens"`
	ReservedCost   float64         `json:"reserved_cost"`
	Resets         time.Time       `json:"resets"`
}

// BudgetAccountJSON is one budget: its scope (run: the studio's default
// for each run; studio, chain, trigger, credential: a day's), whose it is
// (the chain name, trigger id or credential name) and what raises it.
// A run default has no spent, reserved or resets: each run has its own.
type BudgetAccountJSON struct {
	Scope          string          `json:"scope"`
	Name           string          `json:"name,omitempty"`
	Limit          BudgetLimitJSON `json:"limit"`
	SpentTokens    int64           `json:"spent_tokens"`
	SpentCost      float64         `json:"spent_cost"`
	ReservedTokens int64           `json:"reserved_tokens"`
	ReservedCost   float64         `json:"reserved_cost"`
	Resets         *time.Time      `json:"resets,omitempty"`
	SetBy          string          `json:"set_by"`
}

func limitJSON(l spend.Limit) BudgetLimitJSON {
	j := BudgetLimitJSON{Tokens: l.Tokens}
	if l.Cost > 0 {
		c := l.Cost
		j.Cost = &c
	}
	return j
}

// BudgetSetBy says what sets a budget of scope, to raise it.
func BudgetSetBy(scope string) string {
	switch scope {
	case runs.ScopeRun:
		return "--budget-run-tokens, --budget-run-cost"
	case runs.ScopeStudio:
		return "--budget-day-tokens, --budget-day-cost"
	case runs.ScopeChain:
		return "the chain's budget.day (Chain settings)"
	case runs.ScopeTrigger:
		return "the trigger's budget"
	default:
		return "the credential's budget"
	}
}

// BudgetsNow are the run service's budgets as GET /v1/usage shows them.
func BudgetsNow(b runs.Budgets, accounts []runs.BudgetAccount) BudgetsJSON {
	out := BudgetsJSON{Accounts: []BudgetAccountJSON{}}
	if !b.Run.IsZero() {
		l := limitJSON(b.Run)
		out.Run = &l
	}
	if b.Day != nil && !b.Day.Limit().IsZero() {
		spent, reserved, resets := b.Day.State()
		out.Day = &DayBudgetJSON{Limit: limitJSON(b.Day.Limit()), SpentTokens: spent.Tokens, SpentCost: spent.Cost,
			ReservedTokens: reserved.Tokens, ReservedCost: reserved.Cost, Resets: resets}
	}
	for _, a := range accounts {
		j := BudgetAccountJSON{Scope: a.Scope, Name: a.Name, Limit: limitJSON(a.Limit), SetBy: BudgetSetBy(a.Scope)}
		if a.Account != nil {
			spent, reserved, resets := a.Account.State()
			j.SpentTokens, j.SpentCost, j.ReservedTokens, j.ReservedCost = spent.Tokens, spent.Cost, reserved.Tokens, reserved.Cost
			if !resets.IsZero() {
				j.Resets = &resets
			}
		}
		out.Accounts = append(out.Accounts, j)
	}
	return out
}

// UsageQuery reads GET /v1/Usage's parameters.
func UsageQuery(q url.Values, now time.Time) (store.UsageFilter, string, error) {
	f := store.UsageFilter{By: q.Get("by"), All: true}
	bad := func(p, msg string) error {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", msg, map[string]any{"parameter": p})
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
	if f.Bucket, ok = UsageBuckets[bucket]; !ok {
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
	if f.Until.Sub(f.Since) > MaxUsageSpan {
		return f, "", bad("since", "the period is over 366 days: narrow since and until")
	}
	if k, set := q["key"]; set {
		f.Key, f.All = k[0], false
	}
	limit, err := IntParam("limit", q.Get("limit"), 1000, 1, 10000)
	if err != nil {
		return f, "", err
	}
	f.Limit = limit
	return f, bucket, nil
}

// Usage sums model calls per chain or agent over time, with their cost,
// as the query q asks.
func (s *Env) Usage(c echo.Context, q url.Values) (*UsageJSON, error) {
	f, bucket, err := UsageQuery(q, time.Now().UTC())
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	f.Limit++ // one more says there are more
	rows, err := s.DB.Usage(c.Request().Context(), f)
	if err != nil {
		return nil, fmt.Errorf("usage by %s: %w", f.By, err)
	}
	out := &UsageJSON{By: f.By, Bucket: bucket, Since: f.Since, Until: f.Until, Priced: s.Prices != nil,
		Rows: make([]UsageRowJSON, 0, len(rows)), Keys: []UsageKeyJSON{}, Limit: limit}
	if len(rows) > limit {
		rows, out.More = rows[:limit], true
	}
	index := map[string]int{}
	for _, r := range rows {
		j := UsageRowJSON{UsageRow: r}
		if cost, ok := s.Prices.Cost(r.Model, r.InputTokens, r.OutputTokens); ok {
			j.Cost = &cost
		}
		out.Rows = append(out.Rows, j)
		i, ok := index[r.Key]
		if !ok {
			i = len(out.Keys)
			index[r.Key] = i
			out.Keys = append(out.Keys, UsageKeyJSON{Key: r.Key, Name: r.Name})
		}
		out.Keys[i].Add(s.Prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
		out.Total.Add(s.Prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
	}
	if s.Prices != nil && out.Total.Cost == nil {
		out.Total.Cost = new(float64)
	}
	SortUsageKeys(out.Keys)
	if s.Runs != nil {
		out.Budgets = BudgetsNow(s.Runs.Budgets(), s.Runs.BudgetAccounts())
	}
	return out, nil
}

// SortUsageKeys orders the costliest first, then the most tokens, then by name.
func SortUsageKeys(keys []UsageKeyJSON) {
	cost := func(k UsageKeyJSON) float64 {
		if k.Cost == nil {
			return 0
		}
		return *k.Cost
	}
	slices.SortStableFunc(keys, func(a, b UsageKeyJSON) int {
		if c := cmp.Compare(cost(b), cost(a)); c != 0 {
			return c
		}
		if c := cmp.Compare(b.InputTokens+b.OutputTokens, a.InputTokens+a.OutputTokens); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// RunUsageView is the run page's usage panel for a run's usage: svc's
// budgets, and those of the run r's chain, its trigger and the credentials
// its models name (creds).
func RunUsageView(u *RunUsageJSON, labels views.Labels, svc *runs.Service, r *store.Run, creds []string) views.RunUsage {
	v := views.RunUsage{RunID: u.RunID, Priced: u.Priced, Total: UsageLine("", "", u.Total), Budgets: budgetNotes(u.Total, svc, r, creds)}
	for _, n := range u.Nodes {
		label := n.NodeID
		if l := labels[n.NodeID]; l != "" && l != n.NodeID {
			label = l + " (" + n.NodeID + ")"
		}
		v.Nodes = append(v.Nodes, UsageLine(n.NodeID, label, n.Totals))
	}
	return v
}

// ModelCredentials are the stored credentials the agent nodes of doc name
// for their models (config.model.credential), whose budgets the run page
// notes. An agent loaded from a file names its own, not seen here.
func ModelCredentials(doc *chain.Chain) []string {
	if doc == nil {
		return nil
	}
	var out []string
	for _, nd := range doc.Nodes {
		if nd.Kind != chain.KindAgent {
			continue
		}
		m, _ := nd.Config["model"].(map[string]any)
		if name, _ := m["credential"].(string); name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// budgetNotes say, beside a run's usage, the budgets it is held to: the
// run's (the studio's and its chain's), against what the run used, and
// the day accounts of the studio, its chain and its trigger.
func budgetNotes(used pricing.Totals, svc *runs.Service, r *store.Run, creds []string) []string {
	var out []string
	runNote := func(who string, l spend.Limit, setBy string) {
		if l.IsZero() {
			return
		}
		var parts []string
		if l.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d of its %d tokens used", used.InputTokens+used.OutputTokens, l.Tokens))
		}
		if l.Cost > 0 {
			c := 0.0
			if used.Cost != nil {
				c = *used.Cost
			}
			parts = append(parts, fmt.Sprintf("%.4f of its %.4f spent", c, l.Cost))
		}
		out = append(out, who+": "+strings.Join(parts, ", ")+" (an execution's own: a resume starts anew"+setBy+").")
	}
	dayNote := func(who string, d BudgetAccountJSON) {
		var parts []string
		if d.Limit.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d tokens", d.SpentTokens, d.Limit.Tokens))
		}
		if d.Limit.Cost != nil {
			parts = append(parts, fmt.Sprintf("%.4f of %.4f", d.SpentCost, *d.Limit.Cost))
		}
		line := who + ": " + strings.Join(parts, ", ")
		if d.Resets != nil {
			line += "; it resets at " + d.Resets.Format("15:04 UTC")
		}
		out = append(out, line+".")
	}
	b := svc.Budgets()
	runNote("This run's budget", b.Run, "")
	var chainRun spend.Limit
	var days []runs.BudgetAccount
	if r != nil {
		chainRun, days = svc.RunBudgets(r.ChainName, r.TriggerID, creds)
		runNote("Chain "+r.ChainName+"'s run budget", chainRun, "; its budget.run setting")
	}
	now := BudgetsNow(b, days)
	for _, d := range now.Accounts {
		switch d.Scope {
		case runs.ScopeChain:
			dayNote("Chain "+d.Name+" today", d)
		case runs.ScopeTrigger:
			dayNote("Trigger "+d.Name+" today", d)
		case runs.ScopeCredential:
			dayNote("Credential "+d.Name+" today", d)
		}
	}
	if d := now.Day; d != nil {
		resets := d.Resets
		dayNote("The studio today", BudgetAccountJSON{Limit: d.Limit, SpentTokens: d.SpentTokens, SpentCost: d.SpentCost, Resets: &resets})
	}
	return out
}

func UsageLine(id, label string, t pricing.Totals) views.UsageLine {
	return views.UsageLine{ID: id, Label: label, Calls: t.Calls, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, Cost: t.Cost, Unpriced: t.Unpriced}
}
