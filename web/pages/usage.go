package pages

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// FragRunUsage is the run page's usage panel, reloaded as model calls
// report their tokens.
func (s *Runs) FragRunUsage(c echo.Context) error {
	id := ops.PageParam(c, "id")
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	u, err := s.RunUsage(c, id)
	if err != nil {
		return err
	}
	doc := s.PageRunDoc(c, r)
	return RenderPage(c, http.StatusOK, views.RunUsagePanel(ops.RunUsageView(u, views.NodeLabels(doc), s.Runs, r, ops.ModelCredentials(doc))))
}

// PageUsage shows tokens and cost per chain or agent over the last days,
// in time buckets (the page over GET /v1/usage).
func (s *Runs) PageUsage(c echo.Context) error {
	days, err := ops.IntParam("days", c.QueryParam("days"), 30, 1, 366)
	if err != nil {
		return err
	}
	q := url.Values{"by": {c.QueryParam("by")}, "bucket": {c.QueryParam("bucket")}}
	now := time.Now().UTC()
	q.Set("since", now.Add(-time.Duration(days)*24*time.Hour).Format(time.RFC3339))
	q.Set("until", now.Format(time.RFC3339))
	u, err := s.Usage(c, q)
	if err != nil {
		return err
	}
	v := views.UsagePage{By: u.By, Bucket: u.Bucket, Days: days, Since: u.Since, Priced: u.Priced, More: u.More, Total: ops.UsageLine("", "Total", u.Total)}
	for _, k := range u.Keys {
		v.Lines = append(v.Lines, s.usageKeyLine(u.By, k.Key, k.Name, k.Totals))
	}
	for _, r := range u.Rows {
		if n := len(v.Series); n == 0 || !v.Series[n-1].Bucket.Equal(r.Bucket) {
			v.Series = append(v.Series, views.UsageSlice{Bucket: r.Bucket})
		}
		var t pricing.Totals
		t.Add(s.Prices, r.Model, r.Calls, r.InputTokens, r.OutputTokens, r.Unreported)
		line := s.usageKeyLine(u.By, r.Key, r.Name, t)
		line.Label += " · " + r.Model
		sl := &v.Series[len(v.Series)-1]
		sl.Lines = append(sl.Lines, line)
	}
	v.Budgets = budgetLines(u.Budgets)
	return RenderPage(c, http.StatusOK, views.UsagePageView(v))
}

// budgetLines are the budgets as the usage page lists them.
func budgetLines(b ops.BudgetsJSON) []views.BudgetLine {
	limit := func(l ops.BudgetLimitJSON) string {
		var parts []string
		if l.Tokens > 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", l.Tokens))
		}
		if l.Cost != nil {
			parts = append(parts, fmt.Sprintf("%.4f", *l.Cost))
		}
		return strings.Join(parts, " and ")
	}
	var out []views.BudgetLine
	for _, a := range b.Accounts {
		line := views.BudgetLine{Name: budgetName(a), Limit: limit(a.Limit), Flags: a.SetBy}
		if a.Resets != nil {
			used := fmt.Sprintf("%d tokens", a.SpentTokens)
			held := fmt.Sprintf("%d tokens", a.ReservedTokens)
			if a.Limit.Cost != nil {
				used += fmt.Sprintf(", %.4f", a.SpentCost)
				held += fmt.Sprintf(", %.4f", a.ReservedCost)
			}
			line.Spent, line.Reserved, line.Resets = used, held, *a.Resets
		}
		out = append(out, line)
	}
	return out
}

// budgetName is what the usage page calls a budget.
func budgetName(a ops.BudgetAccountJSON) string {
	switch a.Scope {
	case runs.ScopeRun:
		return "Each run"
	case runs.ScopeStudio:
		return "The studio, today (UTC)"
	case runs.ScopeChain:
		return "Chain " + a.Name + ", today (UTC)"
	case runs.ScopeTrigger:
		return "Trigger " + a.Name + ", today (UTC)"
	default:
		return "Credential " + a.Name + ", today (UTC)"
	}
}

// usageKeyLine labels a chain (linked to its runs) or an agent (linked to
// its page).
func (s *Runs) usageKeyLine(by, key, name string, t pricing.Totals) views.UsageLine {
	l := ops.UsageLine(key, name, t)
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
