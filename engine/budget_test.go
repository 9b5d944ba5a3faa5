package engine_test

import (
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// loopDoc runs a and b in turn, iterations times, each echoing s.
func loopDoc(iterations string) string {
	return `{"name":"loop","nodes":[
		{"node_id":"a","kind":"tool","name":"echo","input_map":{"s":"input.s"}},
		{"node_id":"b","kind":"tool","name":"echo","input_map":{"s":"input.s"}}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"a","max_iterations":` + iterations + `}]}`
}

func wantBudget(t *testing.T, res *engine.Result, budget string) {
	t.Helper()
	wantStatus(t, res, chain.StatusFailed)
	if res.Error.Code != engine.CodeBudget || res.Error.Details["budget"] != budget || !strings.Contains(res.Error.Message, "budget "+budget+", flag --") {
		t.Fatalf("error %+v, want budget_exceeded naming %s and its flag", res.Error, budget)
	}
}

// Each per-run budget stops a run that uses more, with the budget named in
// the error's details, and no more nodes start after it.
func TestRunBudgets(t *testing.T) {
	t.Parallel()
	t.Run("node_executions", func(t *testing.T) {
		h := newHarness(t, func(o *engine.Options) { o.Limits.MaxNodeExecutions = 50 })
		res := h.run(loopDoc("100000"), map[string]any{"s": "x"})
		wantBudget(t, res, chain.BudgetNodeExecutions)
		if res.NodesRun > 52 {
			t.Fatalf("%d nodes ran, budget 50", res.NodesRun)
		}
	})
	t.Run("stored_bytes", func(t *testing.T) {
		h := newHarness(t, func(o *engine.Options) { o.Limits.MaxStoredBytes = 1 << 20 })
		res := h.run(loopDoc("100000"), map[string]any{"s": strings.Repeat("a", 10_000)})
		wantBudget(t, res, chain.BudgetStoredBytes)
		if res.NodesRun > 60 { // 1 MiB / (2 × 10 KB) per node
			t.Fatalf("%d nodes ran before the stored-bytes budget stopped the loop", res.NodesRun)
		}
	})
	t.Run("output_bytes", func(t *testing.T) {
		h := newHarness(t, func(o *engine.Options) { o.Limits.MaxOutputBytes = 1 << 20 })
		items := make([]any, 500)
		for k := range items {
			items[k] = strings.Repeat("b", 10_000) // 5 MB in all
		}
		res := h.run(`{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo"}]}`,
			map[string]any{"items": items})
		wantBudget(t, res, chain.BudgetOutputBytes)
	})
	t.Run("within budgets", func(t *testing.T) {
		h := newHarness(t, func(o *engine.Options) { o.Limits.MaxNodeExecutions = 50 })
		res := h.run(`{"name":"ok","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, nil)
		wantStatus(t, res, chain.StatusCompleted)
	})
}

// A chain asking for more than a server ceiling fails validation naming
// the ceiling and its flag.
func TestValidateCeilings(t *testing.T) {
	t.Parallel()
	lim := chain.Limits{MaxChainTimeout: 60, MaxIterations: 1000, MaxDepth: 3}
	for _, tc := range []struct{ doc, field, flag string }{
		{`{"name":"t","timeout":61,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, "timeout", "--max-chain-timeout"},
		{`{"name":"d","max_depth":4,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, "max_depth", "--max-depth"},
		{loopDoc("2000000000"), "max_iterations", "--max-iterations"},
	} {
		issues := chain.ValidateWith(mustDecode(t, tc.doc), chain.ValidateOptions{Limits: lim})
		found := false
		for _, i := range issues {
			if i.Rule == chain.RuleOverCeiling && i.Severity == chain.SeverityError && i.Field == tc.field && strings.Contains(i.Message, "flag "+tc.flag) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s over its ceiling: issues %+v, want over_ceiling naming %s", tc.field, issues, tc.flag)
		}
	}
	if issues := chain.ValidateWith(mustDecode(t, loopDoc("1000")), chain.ValidateOptions{Limits: lim}); chain.HasErrors(issues) {
		t.Errorf("at the ceiling: %+v", issues)
	}
}
