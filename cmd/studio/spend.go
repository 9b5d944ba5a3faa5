package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
)

// spendFlags are serve's model spending budgets: per run and per day for
// the whole studio, in tokens and in cost (which needs --prices).
type spendFlags struct {
	runTokens, dayTokens *int64
	runCost, dayCost     *float64
}

func registerSpend(fs *flag.FlagSet) spendFlags {
	return spendFlags{
		runTokens: fs.Int64("budget-run-tokens", 0, "model tokens one run may use, input and output (0: no limit); a call whose worst case would pass it is not made and its node fails with budget_exceeded"),
		runCost:   fs.Float64("budget-run-cost", 0, "what one run's model calls may cost, in the --prices table's currency (0: no limit)"),
		dayTokens: fs.Int64("budget-day-tokens", 0, "model tokens the whole studio may use per day, UTC (0: no limit)"),
		dayCost:   fs.Float64("budget-day-cost", 0, "what the whole studio's model calls may cost per day, UTC, in the --prices table's currency (0: no limit)"),
	}
}

// check refuses a negative budget, and one in cost without a price table.
func (f spendFlags) check(prices *pricing.Prices) error {
	for _, n := range []struct {
		flag string
		v    float64
	}{{"--budget-run-tokens", float64(*f.runTokens)}, {"--budget-day-tokens", float64(*f.dayTokens)}, {"--budget-run-cost", *f.runCost}, {"--budget-day-cost", *f.dayCost}} {
		if n.v < 0 {
			return fmt.Errorf("%s is %g; a budget is 0 (none) or more", n.flag, n.v)
		}
	}
	if (*f.runCost > 0 || *f.dayCost > 0) && prices == nil {
		return errors.New("--budget-run-cost and --budget-day-cost need --prices: a call's cost is its tokens at its model's price")
	}
	return nil
}

// budgets builds the runs' budgets; the day's account starts with what the
// store recorded since midnight (UTC), so a restart does not reset it.
func (f spendFlags) budgets(ctx context.Context, st store.UsageStore, prices *pricing.Prices, now time.Time) (runs.Budgets, error) {
	b := runs.Budgets{Run: spend.Limit{Tokens: *f.runTokens, Cost: *f.runCost}}
	day := spend.Limit{Tokens: *f.dayTokens, Cost: *f.dayCost}
	if day.IsZero() {
		return b, nil
	}
	if st == nil {
		return b, errors.New("--budget-day-tokens and --budget-day-cost need a store that keeps model usage")
	}
	midnight := now.UTC().Truncate(24 * time.Hour)
	rows, err := st.Usage(ctx, store.UsageFilter{By: store.UsageByChain, All: true, Since: midnight, Bucket: 24 * time.Hour, Limit: 10000})
	if err != nil {
		return b, fmt.Errorf("today's model spending, for --budget-day-*: %w", err)
	}
	var spent spend.Amount
	for _, r := range rows {
		spent.Tokens += r.InputTokens + r.OutputTokens
		if c, ok := prices.Cost(r.Model, r.InputTokens, r.OutputTokens); ok {
			spent.Cost += c
		}
	}
	b.Day = spend.NewDaily("the studio's daily budget", runs.DayBudgetFlags, day, spent, nil)
	return b, nil
}
