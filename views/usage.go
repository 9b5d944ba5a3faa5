package views

import (
	"strconv"
	"time"
)

// UsageLine is one line of a tokens-and-cost table: a node of a run, or a
// chain or agent over a period.
type UsageLine struct {
	ID, Label    string // node id, chain id or agent name; the label shown
	Href         string // a link for the label ("" for none)
	Calls        int64
	InputTokens  int64
	OutputTokens int64
	Cost         *float64 // nil: no price table
	Unpriced     int64    // calls to models without a price
}

// RunUsage is the run page's model usage panel.
type RunUsage struct {
	RunID  string
	Priced bool
	Nodes  []UsageLine
	Total  UsageLine
	// Budgets say the spending budgets the run is held to, and how far.
	Budgets []string
}

// UsagePage is the usage page: tokens and cost per chain or agent.
type UsagePage struct {
	By     string // chain or agent
	Bucket string // hour, day, week
	Days   int    // the period: the last Days days
	Since  time.Time
	Priced bool
	Lines  []UsageLine // per key over the period
	Total  UsageLine
	Series []UsageSlice // per bucket, newest first
	More   bool
	// Budgets are the spending limits runs are held to (none: no budget).
	Budgets []BudgetLine
}

// BudgetLine is one budget on the usage page: its limit, and for the day
// what is spent, what calls in flight hold and when it resets.
type BudgetLine struct {
	Name, Limit, Spent, Reserved, Flags string
	Resets                              time.Time
}

// UsageSlice is one time bucket of the usage page.
type UsageSlice struct {
	Bucket time.Time
	Lines  []UsageLine
}

// tokens formats a token count with thin separators (12 345).
func tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) <= 4 {
		return s
	}
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, c)
	}
	return string(out)
}

// cost formats a cost: "—" without a price table, "no price" when the
// table prices none of the models called, else the sum with a note for the
// calls to unpriced models.
func cost(l UsageLine) string {
	if l.Cost == nil {
		return "—"
	}
	if l.Unpriced > 0 && l.Unpriced == l.Calls {
		return "no price"
	}
	prec := 4
	if *l.Cost > 0 && *l.Cost < 0.01 { // a few calls to a cheap model: show them
		prec = 6
	}
	s := strconv.FormatFloat(*l.Cost, 'f', prec, 64)
	if l.Unpriced > 0 {
		s += " (+" + strconv.FormatInt(l.Unpriced, 10) + " unpriced)"
	}
	return s
}
