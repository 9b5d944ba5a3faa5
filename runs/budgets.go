package runs

import (
	"context"

	"github.com/chainstudio/studio/engine/spend"
)

// Budgets are the model spending limits the service holds runs to
// (engine/spend): Run over each execution of a run (a resume starts
// anew), Day over the studio's day, an account the host builds with what
// the store recorded today.
type Budgets struct {
	Run spend.Limit
	Day *spend.Account
}

// Flags of `studio serve` that set the budgets, named in refusals.
var (
	RunBudgetFlags = spend.Flags{Tokens: "--budget-run-tokens", Cost: "--budget-run-cost"}
	DayBudgetFlags = spend.Flags{Tokens: "--budget-day-tokens", Cost: "--budget-day-cost"}
)

// withBudgets is ctx of one run's execution whose model calls count
// against a new account of the run's budget and the studio's day.
func (b Budgets) withBudgets(ctx context.Context) context.Context {
	var run *spend.Account
	if !b.Run.IsZero() {
		run = spend.NewAccount("this run's budget", RunBudgetFlags, b.Run)
	}
	return spend.WithAccounts(ctx, run, b.Day)
}

// Budgets are the budgets the service holds runs to.
func (s *Service) Budgets() Budgets { return s.budgets }
