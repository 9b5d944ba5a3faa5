package main

import (
	"context"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/store"
)

// usageSince answers Usage with its rows, noting what it was asked.
type usageSince struct {
	store.UsageStore
	asked store.UsageFilter
	rows  []store.UsageRow
}

func (u *usageSince) Usage(_ context.Context, f store.UsageFilter) ([]store.UsageRow, error) {
	u.asked = f
	return u.rows, nil
}

// The studio's daily budget starts with what the store recorded since
// midnight (UTC), in tokens and at the prices, so a restart does not
// reset it.
func TestDayBudgetStartsWithTodaysSpending(t *testing.T) {
	prices, err := pricing.Parse([]byte("m: {input: 1, output: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	us := &usageSince{rows: []store.UsageRow{
		{Model: "m", InputTokens: 1000, OutputTokens: 500},
		{Model: "unpriced", InputTokens: 10, OutputTokens: 5},
	}}
	tokens, cost := int64(10000), 1.0
	zero, zeroCost := int64(0), 0.0
	f := spendFlags{runTokens: &zero, runCost: &zeroCost, dayTokens: &tokens, dayCost: &cost}
	now := time.Date(2026, 12, 5, 15, 4, 5, 0, time.UTC)
	b, err := f.budgets(context.Background(), us, prices, now)
	if err != nil {
		t.Fatal(err)
	}
	if !us.asked.Since.Equal(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)) || !us.asked.All {
		t.Fatalf("asked %+v", us.asked)
	}
	spent, _, _ := b.Day.State()
	if spent.Tokens != 1515 || spent.Cost != 0.002 {
		t.Fatalf("spent %+v, want 1515 tokens and 0.002", spent)
	}
	if !b.Run.IsZero() {
		t.Fatalf("run budget %+v", b.Run)
	}
	if _, err := f.budgets(context.Background(), nil, prices, now); err == nil {
		t.Fatal("a day budget without a usage store")
	}
}
