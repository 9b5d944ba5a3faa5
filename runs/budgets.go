package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/store"
)

// Budgets are the model spending limits the service holds runs to
// (engine/spend): Run over each execution of a run (a resume starts
// anew), Day over the studio's day, an account the host builds with what
// the store recorded today. Chains, triggers and credentials carry budgets
// of their own; the service keeps their accounts (budgetBook).
type Budgets struct {
	Run spend.Limit
	Day *spend.Account
}

// Flags of `studio serve` that set the budgets, named in refusals.
var (
	RunBudgetFlags = spend.Flags{Tokens: "--budget-run-tokens", Cost: "--budget-run-cost"}
	DayBudgetFlags = spend.Flags{Tokens: "--budget-day-tokens", Cost: "--budget-day-cost"}
)

// Budget scopes, as GET /v1/usage lists the accounts.
const (
	ScopeRun        = "run"        // the studio's per-run default (no account: each run has its own)
	ScopeStudio     = "studio"     // the studio's day
	ScopeChain      = "chain"      // a chain's day, by chain name
	ScopeTrigger    = "trigger"    // a schedule's or webhook's day, by trigger id
	ScopeCredential = "credential" // a stored credential's day, by name
)

// BudgetAccount is one budget as the usage listing shows it.
type BudgetAccount struct {
	Scope string
	Name  string // the chain name, trigger id or credential name ("" for the studio's)
	Limit spend.Limit
	// Account is the day account (nil for the run default, whose
	// accounts live as long as each run).
	Account *spend.Account
}

// withBudgets is ctx of one run's execution whose model calls count
// against a new account of the run's budget and the studio's day.
func (b Budgets) withBudgets(ctx context.Context) context.Context {
	var run *spend.Account
	if !b.Run.IsZero() {
		run = spend.NewAccount("this run's budget", RunBudgetFlags, b.Run)
	}
	return spend.WithAccounts(ctx, run, b.Day)
}

// Budgets are the studio's own budgets the service holds runs to.
func (s *Service) Budgets() Budgets { return s.budgets }

// TriggerBudgets finds the day limit of the schedule or webhook id (zero:
// none). The host reads it from the store.
type TriggerBudgets func(ctx context.Context, id string) (spend.Limit, error)

// CredentialBudgets finds the day limit of the stored credential name
// (zero: none).
type CredentialBudgets func(ctx context.Context, name string) (spend.Limit, error)

// budgetBook keeps the day accounts of chains, triggers and credentials,
// each made on first use and seeded with what the store recorded today
// where the store can say (chains); a limit edited since is applied to
// the account in place.
type budgetBook struct {
	usage       store.UsageStore // nil: accounts start empty
	prices      *pricing.Prices
	now         func() time.Time
	triggers    TriggerBudgets
	credentials CredentialBudgets
	runs        RunInfo

	mu       sync.Mutex
	day      map[bookKey]*spend.Account
	chainRun map[string]spend.Limit // a chain's run limit, as its last run had it
}

// RunInfo reads a run's record (the trigger that started it).
type RunInfo func(ctx context.Context, id string) (*store.Run, error)

type bookKey struct{ scope, name string }

func newBudgetBook(opts Options, usage store.UsageStore, runs RunInfo) *budgetBook {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &budgetBook{usage: usage, prices: opts.Prices, now: now, triggers: opts.TriggerBudgets, credentials: opts.CredentialBudgets, runs: runs,
		day: map[bookKey]*spend.Account{}, chainRun: map[string]spend.Limit{}}
}

// dayFlags name the fields that set a day budget of scope, for refusals.
func dayFlags(scope string) spend.Flags {
	switch scope {
	case ScopeChain:
		return spend.Flags{Tokens: "raise the chain's budget.day.tokens setting", Cost: "raise the chain's budget.day.cost setting"}
	case ScopeTrigger:
		return spend.Flags{Tokens: "raise the trigger's budget.tokens field", Cost: "raise the trigger's budget.cost field"}
	default:
		return spend.Flags{Tokens: "raise the credential's budget.tokens field", Cost: "raise the credential's budget.cost field"}
	}
}

func accountName(scope, name string) string {
	switch scope {
	case ScopeChain:
		return fmt.Sprintf("chain %s's daily budget", name)
	case ScopeTrigger:
		return fmt.Sprintf("trigger %s's daily budget", name)
	default:
		return fmt.Sprintf("credential %s's daily budget", name)
	}
}

// dayAccount is the day account of (scope, name) held to limit: made and
// seeded on first use, its limit updated after. A zero limit with no
// account yet makes none.
func (b *budgetBook) dayAccount(ctx context.Context, scope, name string, limit spend.Limit) (*spend.Account, error) {
	k := bookKey{scope, name}
	b.mu.Lock()
	a := b.day[k]
	b.mu.Unlock()
	if a != nil {
		if a.Limit() != limit {
			a.SetLimit(limit)
		}
		return a, nil
	}
	if limit.IsZero() {
		return nil, nil
	}
	spent, err := b.spentToday(ctx, scope, name)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.day[k]; a != nil { // made meanwhile by another run
		a.SetLimit(limit)
		return a, nil
	}
	a = spend.NewDaily(accountName(scope, name), dayFlags(scope), limit, spent, b.now)
	b.day[k] = a
	return a, nil
}

// spentToday is what the store recorded since midnight (UTC) against a
// chain's name; the store keeps no usage by trigger or credential, so
// those start empty (after a restart too).
func (b *budgetBook) spentToday(ctx context.Context, scope, name string) (spend.Amount, error) {
	var spent spend.Amount
	if scope != ScopeChain || b.usage == nil {
		return spent, nil
	}
	midnight := b.now().UTC().Truncate(24 * time.Hour)
	rows, err := b.usage.Usage(ctx, store.UsageFilter{By: store.UsageByChain, All: true, Since: midnight, Bucket: 24 * time.Hour, Limit: 10000})
	if err != nil {
		return spent, fmt.Errorf("chain %s's model spending today, for its budget.day: %w", name, err)
	}
	for _, r := range rows {
		if r.Name != name {
			continue
		}
		spent.Tokens += r.InputTokens + r.OutputTokens
		if c, ok := b.prices.Cost(r.Model, r.InputTokens, r.OutputTokens); ok {
			spent.Cost += c
		}
	}
	return spent, nil
}

// chainRunFlags name the chain settings that set its run budget, for refusals.
var chainRunFlags = spend.Flags{Tokens: "raise the chain's budget.run.tokens setting", Cost: "raise the chain's budget.run.cost setting"}

// runContext is ctx of one execution of run id of chain c whose model
// calls count against c's budgets and the budget of the trigger that
// started the run, after the studio's (withBudgets). A budget that
// cannot be read (the store down) fails the run's calls rather than
// letting them pass unheld.
func (b *budgetBook) runContext(ctx context.Context, id string, c *chain.Chain) context.Context {
	var accounts []*spend.Account
	fail := func(err error) context.Context {
		return spend.WithAccounts(ctx, spend.Unavailable(err))
	}
	var run, day spend.Limit
	if c.Budget != nil {
		run.Tokens, run.Cost = c.Budget.Run.Limit()
		day.Tokens, day.Cost = c.Budget.Day.Limit()
	}
	b.mu.Lock()
	if run.IsZero() {
		delete(b.chainRun, c.Name)
	} else {
		b.chainRun[c.Name] = run
	}
	b.mu.Unlock()
	if !run.IsZero() {
		accounts = append(accounts, spend.NewAccount(fmt.Sprintf("chain %s's run budget", c.Name), chainRunFlags, run))
	}
	a, err := b.dayAccount(ctx, ScopeChain, c.Name, day)
	if err != nil {
		return fail(err)
	}
	accounts = append(accounts, a)
	if b.triggers != nil && b.runs != nil {
		info, err := b.runs(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			info, err = nil, nil // a run not recorded has no trigger
		}
		if err != nil {
			return fail(fmt.Errorf("run %s's trigger, for its budget: %w", id, err))
		}
		if info != nil && info.TriggerID != "" && (info.TriggerKind == store.TriggerSchedule || info.TriggerKind == store.TriggerWebhook) {
			l, err := b.triggers(ctx, info.TriggerID)
			if err != nil {
				return fail(fmt.Errorf("trigger %s's budget: %w", info.TriggerID, err))
			}
			a, err := b.dayAccount(ctx, ScopeTrigger, info.TriggerID, l)
			if err != nil {
				return fail(err)
			}
			accounts = append(accounts, a)
		}
	}
	ctx = spend.WithAccounts(ctx, accounts...)
	if b.credentials != nil {
		ctx = spend.WithCredentialBudgets(ctx, b.credential)
	}
	return ctx
}

// credential is the day account of the stored credential name, read anew
// at each call so an edited limit holds at once.
func (b *budgetBook) credential(ctx context.Context, name string) *spend.Account {
	l, err := b.credentials(ctx, name)
	if err != nil {
		return spend.Unavailable(fmt.Errorf("credential %s's budget: %w", name, err))
	}
	a, err := b.dayAccount(ctx, ScopeCredential, name, l)
	if err != nil {
		return spend.Unavailable(err)
	}
	return a
}

// list is every day account with a limit, by scope and name.
func (b *budgetBook) list() []BudgetAccount {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []BudgetAccount
	for k, a := range b.day {
		if l := a.Limit(); !l.IsZero() {
			out = append(out, BudgetAccount{Scope: k.scope, Name: k.name, Limit: l, Account: a})
		}
	}
	order := map[string]int{ScopeChain: 0, ScopeTrigger: 1, ScopeCredential: 2}
	slices.SortFunc(out, func(x, y BudgetAccount) int {
		if d := order[x.Scope] - order[y.Scope]; d != 0 {
			return d
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// BudgetAccounts are every budget runs are held to now: the studio's run
// default and day, then each chain's, trigger's and credential's day
// account made so far (a budget is listed once a run met it).
func (s *Service) BudgetAccounts() []BudgetAccount {
	var out []BudgetAccount
	if !s.budgets.Run.IsZero() {
		out = append(out, BudgetAccount{Scope: ScopeRun, Limit: s.budgets.Run})
	}
	if d := s.budgets.Day; d != nil && !d.Limit().IsZero() {
		out = append(out, BudgetAccount{Scope: ScopeStudio, Limit: d.Limit(), Account: d})
	}
	return append(out, s.book.list()...)
}

// RunBudgets are the budgets of a run's chain, trigger and credentials
// (beside the studio's, Budgets): its chain's run limit as its last run
// had it, and the day accounts of the chain, the trigger and the
// credentials named.
func (s *Service) RunBudgets(chainName, triggerID string, credentials []string) (run spend.Limit, days []BudgetAccount) {
	b := s.book
	b.mu.Lock()
	run = b.chainRun[chainName]
	b.mu.Unlock()
	for _, a := range b.list() {
		if a.Scope == ScopeChain && a.Name == chainName || a.Scope == ScopeTrigger && triggerID != "" && a.Name == triggerID ||
			a.Scope == ScopeCredential && slices.Contains(credentials, a.Name) {
			days = append(days, a)
		}
	}
	return run, days
}
