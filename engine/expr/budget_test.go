package expr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func doubling(n int) string {
	return "@" + strings.Repeat(" | [@,@]", n)
}

// `[@,@]` piped 27 times is 2^27 values wide: evaluation stops at the
// element budget with an error naming it, quickly and without the memory.
func TestSearchStopsAtElementBudget(t *testing.T) {
	start := time.Now()
	_, err := Search(context.Background(), doubling(27), map[string]any{"a": "x"})
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != "expr_elements" || be.Code() != CodeBudgetExceeded {
		t.Fatalf("want an expr_elements budget error, got %v", err)
	}
	if !strings.Contains(err.Error(), "expression built more than 4194304 elements") {
		t.Errorf("message: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
	// Within budget the same shape evaluates.
	v, err := Search(context.Background(), doubling(4), "x")
	if err != nil || len(v.([]any)) != 2 {
		t.Fatalf("doubling(4) = %v, %v", v, err)
	}
}

func TestSearchStopsAtByteBudget(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1<<20)
	_, err := Search(context.Background(), doubling(8), big) // 256 MiB of text
	var be *BudgetError
	if !errors.As(err, &be) || be.Budget != "expr_bytes" {
		t.Fatalf("want an expr_bytes budget error, got %v", err)
	}
}

// A cancelled context stops a long evaluation: a filter over a large input
// that builds nothing still looks at the context.
func TestSearchStopsOnCancel(t *testing.T) {
	t.Parallel()
	items := make([]any, 3_000_000)
	for i := range items {
		items[i] = float64(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Search(ctx, "length(items[?@ < `0`])", map[string]any{"items": items})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// Eval (input_map, set_state, guards) runs under the same budget, and reads
// the context of a scope that has one.
type ctxScope struct {
	MapScope
	ctx context.Context
}

func (s ctxScope) Context() context.Context { return s.ctx }

func TestEvalBudgetAndScopeContext(t *testing.T) {
	t.Parallel()
	e, err := Parse(strings.Replace(doubling(40), "@", "input", 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Eval(MapScope{"input": "x"}, false)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("want a budget error, got %v", err)
	}
	e, _ = Parse("length(input[?@ < `0`])")
	items := make([]any, 1_000_000)
	for i := range items {
		items[i] = 1.0
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("node timed out")
	cancel(stop)
	if _, err := e.Eval(ctxScope{MapScope{"input": items}, ctx}, false); !errors.Is(err, stop) {
		t.Fatalf("want the context's cause, got %v", err)
	}
}

// Comparing two large equal values is paid for in steps and stops on cancel.
func TestEqualWatchesContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m := newMeter(ctx, DefaultBudget)
	a := make([]any, 100_000)
	b := make([]any, 100_000)
	for i := range a {
		a[i], b[i] = 1.0, 1.0
	}
	if m.equal(a, b) || m.err == nil {
		t.Fatal("equal went on after cancel")
	}
	m = newMeter(context.Background(), DefaultBudget)
	if !m.equal(a, b) || m.equal([]any{}, []any(nil)) {
		t.Fatal("equal differs from reflect.DeepEqual")
	}
}

func TestContextErrorKeepsCauseAndKind(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	if ContextError(ctx) != nil {
		t.Fatal("live context has an error")
	}
	why := errors.New("cancelled by a user")
	cancel(why)
	err := ContextError(ctx)
	if err.Error() != "cancelled by a user" || !errors.Is(err, why) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}
