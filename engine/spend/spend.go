// Package spend holds model spending to its budgets before it happens.
//
// A budget is an Account: a limit in tokens, in cost or both, over a run or
// a window of time (a day). Before each model call the caller reserves the
// call's worst case (its input as sent and its max_tokens, at the model's
// price) on every account the call counts against, all or none at once, so
// parallel calls cannot pass a limit together: a call that would pass one
// is not made, and fails with an *ExceededError (code budget_exceeded).
// After the call the reservation is settled to what the provider reported;
// a call whose usage is not reported keeps its worst case.
package spend

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// CodeExceeded is the error code of a call refused by a budget, as a node's
// error_code and an on_error handler's error.code read it.
const CodeExceeded = "budget_exceeded"

// Limit is a budget's size; zero in a field is no limit on it.
type Limit struct {
	Tokens int64
	Cost   float64 // in the price table's currency
}

// IsZero reports whether the limit limits nothing.
func (l Limit) IsZero() bool { return l.Tokens <= 0 && l.Cost <= 0 }

// Account is one budget and what has been spent and reserved against it.
// It is safe for concurrent use.
type Account struct {
	name  string // what messages call it: "this run's budget"
	flags Flags
	limit Limit
	// period, when set, is the window's length; the account empties when
	// a window ends (reset: the next window's start).
	period time.Duration
	now    func() time.Time

	// fail, when set, refuses every call: the budget could not be read.
	fail error

	mu       sync.Mutex
	reset    time.Time // the current window's end (zero: no window)
	spent    Amount
	reserved Amount
}

// Flags name the settings that set a budget's limits, for messages.
type Flags struct{ Tokens, Cost string }

// Amount is tokens and cost.
type Amount struct {
	Tokens int64
	Cost   float64
}

func (a Amount) plus(b Amount) Amount  { return Amount{a.Tokens + b.Tokens, a.Cost + b.Cost} }
func (a Amount) minus(b Amount) Amount { return Amount{a.Tokens - b.Tokens, a.Cost - b.Cost} }

// NewAccount is a budget of limit over one run (or anything that ends),
// named for messages; flags are the settings that set it.
func NewAccount(name string, flags Flags, limit Limit) *Account {
	return &Account{name: name, flags: flags, limit: limit, now: time.Now}
}

// NewDaily is a budget of limit per day (UTC), already spent at spent today
// (what the store recorded before a restart). now is the clock (nil:
// time.Now).
func NewDaily(name string, flags Flags, limit Limit, spent Amount, now func() time.Time) *Account {
	if now == nil {
		now = time.Now
	}
	a := &Account{name: name, flags: flags, limit: limit, period: 24 * time.Hour, now: now, spent: spent}
	a.reset = nextDay(now())
	return a
}

func nextDay(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
}

// Unavailable is an account that refuses every call with err: a budget
// the host could not read holds its calls back rather than letting them
// pass unheld.
func Unavailable(err error) *Account {
	return &Account{name: "an unreadable budget", fail: fmt.Errorf("the call was not made: its budget could not be read: %w", err), now: time.Now}
}

// Limit is the account's limit.
func (a *Account) Limit() Limit {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.limit
}

// SetLimit changes the account's limit (a chain's budget edited): what is
// spent and reserved stays; the next call is held to the new limit.
func (a *Account) SetLimit(l Limit) {
	a.mu.Lock()
	a.limit = l
	a.mu.Unlock()
}

// Name is what messages call the account.
func (a *Account) Name() string { return a.name }

// State is what the account holds now: spent (settled), reserved (calls in
// flight) and, for a window, when it resets.
func (a *Account) State() (spent, reserved Amount, resets time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roll()
	return a.spent, a.reserved, a.reset
}

// roll empties the account when its window has ended. a.mu is held.
func (a *Account) roll() {
	if a.period == 0 {
		return
	}
	if now := a.now(); !now.Before(a.reset) {
		a.spent = Amount{}
		a.reset = nextDay(now)
	}
}

// fits says why want does not fit the account now ("" when it does). a.mu
// is held.
func (a *Account) fits(want Amount) *ExceededError {
	a.roll()
	used := a.spent.plus(a.reserved)
	over, flag := "", ""
	switch {
	case a.limit.Tokens > 0 && used.Tokens+want.Tokens > a.limit.Tokens:
		over, flag = "tokens", a.flags.Tokens
	case a.limit.Cost > 0 && used.Cost+want.Cost > a.limit.Cost+1e-12:
		over, flag = "cost", a.flags.Cost
	default:
		return nil
	}
	return &ExceededError{Account: a.name, Flag: flag, Over: over, Limit: a.limit, Spent: a.spent, Reserved: a.reserved, Want: want, Resets: a.reset}
}

// Hold is a reservation on some accounts, settled once.
type Hold struct {
	accounts []*Account
	want     Amount
	once     sync.Once
}

// Reserve reserves want on every account, or on none: the first account it
// does not fit refuses the call with an *ExceededError. Accounts are locked
// in the order given; callers give them in one order (run, then studio).
func Reserve(accounts []*Account, want Amount) (*Hold, error) {
	for i, a := range accounts {
		if a.fail != nil {
			for _, b := range accounts[:i] {
				b.mu.Unlock()
			}
			return nil, a.fail
		}
		a.mu.Lock()
		if e := a.fits(want); e != nil {
			for _, b := range accounts[:i+1] {
				b.mu.Unlock()
			}
			return nil, e
		}
	}
	for _, a := range accounts {
		a.reserved = a.reserved.plus(want)
		a.mu.Unlock()
	}
	return &Hold{accounts: accounts, want: want}, nil
}

// Settle replaces the reservation with what the call spent (reported) or,
// when the provider reported nothing, with the reservation itself. A hold
// settles once; later calls do nothing.
func (h *Hold) Settle(used Amount, reported bool) {
	if h == nil {
		return
	}
	h.once.Do(func() {
		if !reported {
			used = h.want
		}
		for _, a := range h.accounts {
			a.mu.Lock()
			a.reserved = a.reserved.minus(h.want)
			a.spent = a.spent.plus(used)
			a.mu.Unlock()
		}
	})
}

// Release gives the reservation back: the call was not made (it failed
// before reaching the provider).
func (h *Hold) Release() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		for _, a := range h.accounts {
			a.mu.Lock()
			a.reserved = a.reserved.minus(h.want)
			a.mu.Unlock()
		}
	})
}

// ExceededError is a model call refused because its worst case would pass
// a budget.
type ExceededError struct {
	Account  string
	Flag     string
	Over     string // "tokens" or "cost"
	Limit    Limit
	Spent    Amount
	Reserved Amount
	Want     Amount
	Resets   time.Time // zero: the budget does not reset (a run's)
}

func (e *ExceededError) Code() string { return CodeExceeded }

func (e *ExceededError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "budget exceeded (%s): the call was not made: %s", CodeExceeded, e.Account)
	if e.Over == "tokens" {
		fmt.Fprintf(&b, " is %d tokens; %d are spent and %d reserved by calls in flight, and this call may use up to %d",
			e.Limit.Tokens, e.Spent.Tokens, e.Reserved.Tokens, e.Want.Tokens)
	} else {
		fmt.Fprintf(&b, " is %s; %s is spent and %s reserved by calls in flight, and this call may cost up to %s",
			money(e.Limit.Cost), money(e.Spent.Cost), money(e.Reserved.Cost), money(e.Want.Cost))
	}
	if !e.Resets.IsZero() {
		fmt.Fprintf(&b, "; it resets at %s", e.Resets.UTC().Format(time.RFC3339))
	}
	if e.Flag != "" {
		fmt.Fprintf(&b, " (%s)", e.Flag)
	}
	return b.String()
}

func money(c float64) string {
	return fmt.Sprintf("%.4f", math.Round(c*1e4)/1e4)
}

type accountsKey struct{}

// WithAccounts returns ctx whose model calls count against accounts too
// (after those ctx already has).
func WithAccounts(ctx context.Context, accounts ...*Account) context.Context {
	var keep []*Account
	for _, a := range accounts {
		if a != nil && (a.fail != nil || !a.Limit().IsZero()) {
			keep = append(keep, a)
		}
	}
	if len(keep) == 0 {
		return ctx
	}
	prev := Accounts(ctx)
	all := make([]*Account, 0, len(prev)+len(keep))
	all = append(append(all, prev...), keep...)
	return context.WithValue(ctx, accountsKey{}, all)
}

// Accounts are the budgets ctx's model calls count against.
func Accounts(ctx context.Context) []*Account {
	a, _ := ctx.Value(accountsKey{}).([]*Account)
	return a
}

// CredentialBudget finds the daily budget of the stored credential name
// (nil: none); the host keeps one account per credential.
type CredentialBudget func(ctx context.Context, name string) *Account

type credentialKey struct{}

// WithCredentialBudgets returns ctx whose model calls that resolve a stored
// credential count against that credential's budget too.
func WithCredentialBudgets(ctx context.Context, find CredentialBudget) context.Context {
	return context.WithValue(ctx, credentialKey{}, find)
}

// ForCredential is the budget of the stored credential name that ctx's
// model calls count against (nil: none). Credentials come after every
// other account, so all callers lock accounts in one order.
func ForCredential(ctx context.Context, name string) *Account {
	find, _ := ctx.Value(credentialKey{}).(CredentialBudget)
	if find == nil || name == "" {
		return nil
	}
	if a := find(ctx, name); a != nil && (a.fail != nil || !a.Limit().IsZero()) {
		return a
	}
	return nil
}

// InputTokens is a worst case of a request's input in tokens: a token for
// every three bytes of it as sent (text runs near four; this errs high).
func InputTokens(requestBytes int) int64 { return int64((requestBytes + 2) / 3) }

// NeedsCost reports whether any account limits cost, so a call must be
// priced to be held to it.
func NeedsCost(accounts []*Account) bool {
	for _, a := range accounts {
		if a.Limit().Cost > 0 {
			return true
		}
	}
	return false
}

// UnpricedError refuses a call to a model the price table does not price
// while a budget limits cost: its cost could not be held, so it is not made.
type UnpricedError struct {
	Model string
	Flag  string // the price table's flag
}

func (e *UnpricedError) Code() string { return CodeExceeded }

func (e *UnpricedError) Error() string {
	return fmt.Sprintf("budget exceeded (%s): the call was not made: model %s has no price in the price table (%s), so a budget in cost cannot be held to it; add its price", CodeExceeded, e.Model, e.Flag)
}
