package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// studio run takes the run budgets: a loop over --max-node-executions ends
// budget_exceeded with the budget named, and a chain over a ceiling is
// refused naming the flag.
func TestRunAppliesRunBudgetsAndCeilings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := filepath.Join(dir, "loop.json")
	os.WriteFile(doc, []byte(`{"name":"loop","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"a","max_iterations":2000000000}]}`), 0o644)
	var out, errb bytes.Buffer
	code := cmdRun(context.Background(), []string{"--max-node-executions", "10", doc}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String()+errb.String(), "over this server's ceiling of 1000000 (ceiling max_iterations, flag --max-iterations)") {
		t.Fatalf("loop over the max_iterations ceiling: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = cmdRun(context.Background(), []string{"--max-node-executions", "10", "--max-iterations", "2000000000", doc}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String(), "error [budget_exceeded]") || !strings.Contains(out.String(), "budget: node_executions (limit 10)") {
		t.Fatalf("loop over --max-node-executions 10: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, flag := range []string{"--max-node-executions", "--max-stored-bytes", "--max-chain-timeout", "--max-running-runs", "--max-watchers"} {
		errb.Reset()
		if code := cmdServe(context.Background(), []string{flag, "0", "--db", filepath.Join(dir, "x.db")}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "must be positive") {
			t.Errorf("serve %s 0: exit %d %q", flag, code, errb.String())
		}
	}
}
