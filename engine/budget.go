package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/chainstudio/studio/engine/chain"
)

// CodeBudget is the code of a run stopped by one of its budgets; the
// RunError's details name the budget.
const CodeBudget = "budget_exceeded"

// BudgetError stops a run that used up one of its budgets.
type BudgetError struct {
	Budget string
	Limit  int64
	What   string // what went over, when more precise than the budget's name
}

func (e *BudgetError) Error() string {
	if e.What != "" {
		return fmt.Sprintf("%s (budget %s, flag %s)", e.What, e.Budget, chain.BudgetFlags[e.Budget])
	}
	what := map[string]string{
		chain.BudgetNodeExecutions: "node executions",
		chain.BudgetOutputBytes:    "bytes of outputs held in memory",
		chain.BudgetStoredBytes:    "bytes of events and checkpoints",
		chain.BudgetMapItems:       "map items",
	}[e.Budget]
	return fmt.Sprintf("the run used more than its budget of %d %s (budget %s, flag %s)", e.Limit, what, e.Budget, chain.BudgetFlags[e.Budget])
}

// Code implements Coded.
func (e *BudgetError) Code() string { return CodeBudget }

// runBudget counts what a run uses. The counters are atomics: workers
// (map items, parallel branches) charge them too.
type runBudget struct {
	nodes   atomic.Int64
	held    atomic.Int64 // approximate bytes of the outputs expressions can read
	stored  atomic.Int64 // approximate bytes of the events and checkpoints written
	outSize []int64      // per node: the size charged to held for its output (coordinator only)
}

// over stops the run with a budget error; any goroutine may call it (the
// coordinator sees the cause on the run's context).
func (r *run) over(budget string, limit int64) {
	r.cancel(&BudgetError{Budget: budget, Limit: limit})
}

// overWith is over with a precise account of what went over.
func (r *run) overWith(budget string, limit int64, what string) *BudgetError {
	be := &BudgetError{Budget: budget, Limit: limit, What: what}
	r.cancel(be)
	return be
}

// chargeNode counts one node execution.
func (r *run) chargeNode() {
	if lim := r.engine.opts.Limits.MaxNodeExecutions; r.budget.nodes.Add(1) > int64(lim) {
		r.over(chain.BudgetNodeExecutions, int64(lim))
	}
}

// chargeOutput counts bytes of output held (held, may be negative when an
// output is replaced or released) and written to events and checkpoints
// (stored).
func (r *run) chargeOutput(held, stored int64) {
	lim := &r.engine.opts.Limits
	if h := r.budget.held.Add(held); held > 0 && h > lim.MaxOutputBytes {
		r.over(chain.BudgetOutputBytes, lim.MaxOutputBytes)
	}
	if s := r.budget.stored.Add(stored); stored > 0 && s > lim.MaxStoredBytes {
		r.over(chain.BudgetStoredBytes, lim.MaxStoredBytes)
	}
}

// ValueSize is about how many bytes v takes as JSON (the output budget's
// measure); it stops counting once past limit (the caller only needs to
// know it is over).
func ValueSize(v any, limit int64) int64 { return valueSize(v, limit) }

func valueSize(v any, limit int64) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + 2
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			n += int64(len(k)) + 4 + valueSize(e, limit-n)
			if n > limit {
				return n
			}
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range x {
			n += 1 + valueSize(e, limit-n)
			if n > limit {
				return n
			}
		}
		return n
	case []byte:
		return int64(len(x))*4/3 + 2
	}
	return 8
}
