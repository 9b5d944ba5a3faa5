package spend

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reservations count against every account at once, all or none; settling
// replaces them with what was used, or keeps them whole when nothing was
// reported; a release gives them back.
func TestReserveSettleRelease(t *testing.T) {
	run := NewAccount("this run's budget", Flags{Tokens: "--budget-run-tokens"}, Limit{Tokens: 100})
	day := NewAccount("the studio's daily budget", Flags{Tokens: "--budget-day-tokens"}, Limit{Tokens: 1000})
	both := []*Account{run, day}
	h1, err := Reserve(both, Amount{Tokens: 60})
	if err != nil {
		t.Fatal(err)
	}
	// 60 reserved: 50 more would pass the run's 100
	_, err = Reserve(both, Amount{Tokens: 50})
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Account != "this run's budget" || ex.Over != "tokens" || ex.Reserved.Tokens != 60 || ex.Code() != CodeExceeded {
		t.Fatalf("over the run's budget: %v", err)
	}
	// refused on the run: nothing was reserved on the day either
	if _, r, _ := day.State(); r.Tokens != 60 {
		t.Fatalf("the day holds %d reserved, want 60", r.Tokens)
	}
	h1.Settle(Amount{Tokens: 15}, true)
	h1.Settle(Amount{Tokens: 99}, true) // once only
	if s, r, _ := run.State(); s.Tokens != 15 || r.Tokens != 0 {
		t.Fatalf("after settling: spent %d reserved %d", s.Tokens, r.Tokens)
	}
	h2, err := Reserve(both, Amount{Tokens: 50})
	if err != nil {
		t.Fatal(err)
	}
	h2.Settle(Amount{Tokens: 1}, false) // not reported: the worst case stays
	h3, _ := Reserve(both, Amount{Tokens: 10})
	h3.Release()
	if s, r, _ := day.State(); s.Tokens != 65 || r.Tokens != 0 {
		t.Fatalf("day: spent %d reserved %d, want 65 and 0", s.Tokens, r.Tokens)
	}
	msg := ex.Error()
	for _, want := range []string{"budget_exceeded", "the call was not made", "this run's budget is 100 tokens", "60 reserved", "--budget-run-tokens"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

// Many callers at once never reserve past the limit together.
func TestReserveConcurrentNeverOvershoots(t *testing.T) {
	a := NewAccount("a", Flags{}, Limit{Tokens: 1000})
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Reserve([]*Account{a}, Amount{Tokens: 7}); err == nil {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if granted != 1000/7 {
		t.Fatalf("granted %d reservations of 7 under 1000, want %d", granted, 1000/7)
	}
}

// A daily budget starts with what was spent today before, refuses with the
// time it resets, and is empty again the next day.
func TestDailyBudgetResets(t *testing.T) {
	now := time.Date(2026, 12, 5, 22, 30, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	d := NewDaily("the studio's daily budget", Flags{Cost: "--budget-day-cost"}, Limit{Cost: 2}, Amount{Cost: 1.9}, clock)
	_, err := Reserve([]*Account{d}, Amount{Cost: 0.2})
	var ex *ExceededError
	if !errors.As(err, &ex) || ex.Over != "cost" || !ex.Resets.Equal(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)) ||
		!strings.Contains(err.Error(), "resets at 2026-12-06T00:00:00Z") || !strings.Contains(err.Error(), "is 2.0000; 1.9000 is spent") {
		t.Fatalf("refused: %v", err)
	}
	now = now.Add(2 * time.Hour) // the next day
	if _, err := Reserve([]*Account{d}, Amount{Cost: 0.2}); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

// Accounts without a limit are not carried; the context's accounts add up.
func TestContextAccounts(t *testing.T) {
	a := NewAccount("a", Flags{}, Limit{Tokens: 1})
	ctx := WithAccounts(context.Background(), NewAccount("none", Flags{}, Limit{}), nil)
	if Accounts(ctx) != nil {
		t.Fatal("an account without a limit is carried")
	}
	ctx = WithAccounts(WithAccounts(ctx, a), NewAccount("b", Flags{}, Limit{Cost: 1}))
	if got := Accounts(ctx); len(got) != 2 || got[0] != a || !NeedsCost(got) {
		t.Fatalf("accounts %v", got)
	}
}

// A credential's budget is found per call through the lookup in ctx; an
// unreadable one refuses every call rather than letting it pass unheld;
// a limit raised in place lets the next call through.
func TestCredentialBudgetsAndUnavailable(t *testing.T) {
	t.Parallel()
	cred := NewDaily("credential k's daily budget", Flags{Tokens: "raise the credential's budget.tokens field"}, Limit{Tokens: 100}, Amount{}, nil)
	ctx := WithCredentialBudgets(context.Background(), func(_ context.Context, name string) *Account {
		switch name {
		case "k":
			return cred
		case "broken":
			return Unavailable(errors.New("store down"))
		}
		return nil
	})
	if ForCredential(ctx, "other") != nil || ForCredential(ctx, "") != nil || ForCredential(context.Background(), "k") != nil {
		t.Fatal("an account for a credential without a budget")
	}
	a := ForCredential(ctx, "k")
	_, err := Reserve([]*Account{a}, Amount{Tokens: 150})
	if err == nil || !strings.Contains(err.Error(), "credential k's daily budget is 100 tokens") || !strings.Contains(err.Error(), "budget.tokens field") {
		t.Fatalf("over the credential's budget: %v", err)
	}
	a.SetLimit(Limit{Tokens: 200})
	h, err := Reserve([]*Account{a}, Amount{Tokens: 150})
	if err != nil {
		t.Fatalf("after raising: %v", err)
	}
	h.Settle(Amount{Tokens: 20}, true)
	run := NewAccount("this run's budget", Flags{}, Limit{Tokens: 1000})
	if _, err := Reserve([]*Account{run, ForCredential(ctx, "broken")}, Amount{Tokens: 1}); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("an unreadable budget: %v", err)
	}
	// the refusal left nothing locked or reserved on the run's account
	if _, reserved, _ := run.State(); reserved.Tokens != 0 {
		t.Fatalf("reserved %d", reserved.Tokens)
	}
}
