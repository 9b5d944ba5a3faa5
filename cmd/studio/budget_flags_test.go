package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeAndRunRefuseNonPositiveBudgets(t *testing.T) {
	for _, flag := range []string{"--expr-max-elements", "--expr-max-bytes", "--template-max-steps", "--template-max-bytes"} {
		var out, errb bytes.Buffer
		code := cmdServe(context.Background(), []string{flag, "0", "--db", t.TempDir() + "/x.db"}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "must be positive") {
			t.Errorf("serve %s 0: exit %d, %q", flag, code, errb.String())
		}
		errb.Reset()
		code = cmdRun(context.Background(), []string{flag, "-1", "x.json"}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "must be positive") {
			t.Errorf("run %s -1: exit %d, %q", flag, code, errb.String())
		}
	}
}

// studio run takes the budgets too: a lower one stops a chain the default
// lets through, with the budget and flag named, and it is that run's budget
// only (the next run without the flag passes again).
func TestRunAppliesExpressionBudget(t *testing.T) {
	t.Parallel()
	doc := filepath.Join(t.TempDir(), "c.json")
	os.WriteFile(doc, []byte(`{"name":"b","nodes":[{"node_id":"t","kind":"tool","name":"transform","input":{"expression":"@ | [@,@] | [@,@] | [@,@]","data":"x"}}]}`), 0o644)
	var out, errb bytes.Buffer
	if code := cmdRun(context.Background(), []string{doc}, &out, &errb); code != exitOK {
		t.Fatalf("default budget: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code := cmdRun(context.Background(), []string{"--expr-max-elements", "10", doc}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String()+errb.String(), "expression built more than 10 elements (budget expr_elements, flag --expr-max-elements)") {
		t.Fatalf("--expr-max-elements 10: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := cmdRun(context.Background(), []string{doc}, &out, &errb); code != exitOK {
		t.Fatalf("the lower budget outlived its run: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// The model spending budgets refuse a negative value and a budget in cost
// without a price table, naming the flag.
func TestServeRefusesBadSpendingBudgets(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--budget-run-tokens", "-5"}, "--budget-run-tokens is -5; a budget is 0 (none) or more"},
		{[]string{"--budget-day-cost", "-1"}, "--budget-day-cost is -1"},
		{[]string{"--budget-day-cost", "2.5"}, "--budget-run-cost and --budget-day-cost need --prices"},
	} {
		var out, errb bytes.Buffer
		code := cmdServe(context.Background(), append(tc.args, "--db", t.TempDir()+"/x.db"), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.says) {
			t.Errorf("serve %v: exit %d, %q", tc.args, code, errb.String())
		}
	}
}
