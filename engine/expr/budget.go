package expr

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
)

// A JMESPath expression can build a value far larger than its input:
// `[@,@]` piped n times is 2^n wide although each step allocates two
// slots, because the halves are shared. Serialising, storing or comparing
// it is what runs out of memory. So evaluation charges every value it puts
// into something it builds by the value's logical size (what its JSON would
// hold), walking shared parts once per use, and stops at the budget. The
// walk itself is paid for by the charge, so the work of one evaluation is
// bounded by the budget too. It checks its context every few thousand
// steps, so a cancel or a node timeout stops it.

// Budget bounds one evaluation. A zero field means the default.
type Budget struct {
	MaxElements int64 // values (scalars, arrays, objects) built
	MaxBytes    int64 // approximate JSON bytes of the values built
}

// DefaultBudget is the budget evaluations use unless their context carries
// another (WithBudget; studio's --expr-max-elements and --expr-max-bytes).
// It is never changed at run time: two hosts in one process may choose
// different budgets.
var DefaultBudget = Budget{MaxElements: 1 << 22, MaxBytes: 64 << 20}

type budgetKey struct{}

// WithBudget returns a context under which expression evaluations use b (its
// zero fields: the default) instead of DefaultBudget.
func WithBudget(ctx context.Context, b Budget) context.Context {
	return context.WithValue(ctx, budgetKey{}, b.norm())
}

// budgetOf is the budget an evaluation under ctx uses.
func budgetOf(ctx context.Context) Budget {
	if ctx != nil {
		if b, ok := ctx.Value(budgetKey{}).(Budget); ok {
			return b
		}
	}
	return DefaultBudget
}

func (b Budget) norm() Budget {
	if b.MaxElements <= 0 {
		b.MaxElements = DefaultBudget.MaxElements
	}
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultBudget.MaxBytes
	}
	return b
}

// CodeBudgetExceeded is the code of a *BudgetError.
const CodeBudgetExceeded = "budget_exceeded"

// BudgetError reports an evaluation that went over its budget. Budget names
// the limit: "expr_elements" or "expr_bytes".
type BudgetError struct {
	Budget string
	Limit  int64
}

// Code returns "budget_exceeded".
func (e *BudgetError) Code() string { return CodeBudgetExceeded }

func (e *BudgetError) Error() string {
	switch e.Budget {
	case "expr_elements":
		return "expression built more than " + strconv.FormatInt(e.Limit, 10) +
			" elements (budget expr_elements, flag --expr-max-elements)"
	case "expr_bytes":
		return "expression built more than " + strconv.FormatInt(e.Limit, 10) +
			" bytes (budget expr_bytes, flag --expr-max-bytes)"
	case "template_steps":
		return "template ran more than " + strconv.FormatInt(e.Limit, 10) +
			" steps (budget template_steps, flag --template-max-steps)"
	case "template_bytes":
		return "template built more than " + strconv.FormatInt(e.Limit, 10) +
			" bytes of values (budget template_bytes, flag --template-max-bytes)"
	case "template_depth":
		return "template calls nested deeper than " + strconv.FormatInt(e.Limit, 10) + " (budget template_depth)"
	case "template_value":
		return "template would build a value over the " + strconv.FormatInt(e.Limit, 10) +
			"-byte output cap (budget template_value)"
	}
	return fmt.Sprintf("budget %s of %d exceeded", e.Budget, e.Limit)
}

// checkEvery is how many steps pass between two looks at the context.
const checkEvery = 4096

// meter charges an evaluation. Its first error sticks: evaluation paths
// that swallow errors (go-jmespath ignores some) cannot hide it.
type meter struct {
	ctx          context.Context
	b            Budget
	elems, bytes int64
	steps        int
	err          error
}

func newMeter(ctx context.Context, b Budget) *meter {
	return &meter{ctx: ctx, b: b.norm()}
}

// step counts one unit of work and looks at the context now and then.
func (m *meter) step() error {
	if m.err != nil {
		return m.err
	}
	m.steps++
	if m.steps%checkEvery == 0 && m.ctx != nil {
		if err := ContextError(m.ctx); err != nil {
			m.err = err
		}
	}
	return m.err
}

func (m *meter) add(elems, bytes int64) error {
	if m.err != nil {
		return m.err
	}
	m.elems += elems
	m.bytes += bytes
	switch {
	case m.elems > m.b.MaxElements:
		m.err = &BudgetError{Budget: "expr_elements", Limit: m.b.MaxElements}
	case m.bytes > m.b.MaxBytes:
		m.err = &BudgetError{Budget: "expr_bytes", Limit: m.b.MaxBytes}
	}
	return m.err
}

// charge adds v's logical size, walking it; the walk stops as soon as the
// budget is gone.
func (m *meter) charge(v any) error {
	if m.err != nil {
		return m.err
	}
	if err := m.step(); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil, bool:
		return m.add(1, 5)
	case float64:
		return m.add(1, 8)
	case string:
		return m.add(1, int64(len(x))+2)
	case []any:
		if err := m.add(1, 2); err != nil {
			return err
		}
		for _, e := range x {
			if err := m.charge(e); err != nil {
				return err
			}
		}
	case map[string]any:
		return m.chargeMap(x)
	case MapScope:
		return m.chargeMap(x)
	default:
		return m.add(1, 8)
	}
	return nil
}

func (m *meter) chargeMap(x map[string]any) error {
	if err := m.add(1, 2); err != nil {
		return err
	}
	for k, e := range x {
		if err := m.add(0, int64(len(k))+3); err != nil {
			return err
		}
		if err := m.charge(e); err != nil {
			return err
		}
	}
	return nil
}

// equal is reflect.DeepEqual (go-jmespath's comparison) for JSON values,
// counting its steps so comparing two large values can be stopped.
func (m *meter) equal(a, b any) bool {
	if m.step() != nil {
		return false
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		if len(x) == 0 || &x[0] == &y[0] {
			return true
		}
		for i := range x {
			if !m.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		if reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !m.equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// ContextError returns nil while ctx is live, then its cause (which says
// why: "cancelled by a user", "timed out after 1s"), still matching
// context.Canceled or context.DeadlineExceeded with errors.Is.
func ContextError(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if c := context.Cause(ctx); c != nil && c != err {
		return &ctxError{cause: c, err: err}
	}
	return err
}

type ctxError struct{ cause, err error }

func (e *ctxError) Error() string   { return e.cause.Error() }
func (e *ctxError) Unwrap() []error { return []error{e.cause, e.err} }
