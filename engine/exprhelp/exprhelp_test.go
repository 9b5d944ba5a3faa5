package exprhelp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
)

const chainDoc = `{"name":"x","nodes":[
	{"node_id":"fetch","kind":"tool","name":"http","input_map":{"items":"input.items"}},
	{"node_id":"route","kind":"branch","condition":"length(output.items) > ` + "`1`" + `"},
	{"node_id":"done","kind":"tool","name":"echo"},
	{"node_id":"other","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"route"},{"source":"route","target":"done","label":"true"},{"source":"route","target":"other","label":"false"}],
	"tests":[{"name":"high","input":{"who":"ada"},"mocks":{"fetch":{"items":[{"sku":"m"}]}},"assert":{}}]}`

// fixture is the chain above, the context of route's condition, and the
// data of a run that went fetch → route → done.
func fixture(t *testing.T) (*chain.Chain, *chain.ExprField, *RunData) {
	t.Helper()
	c, err := chain.Decode([]byte(chainDoc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := chain.ExprFieldContext(c, "route", "", "condition")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{"items": []any{map[string]any{"sku": "a1", "qty": 2.0}, map[string]any{"sku": "b2", "qty": 1.0}}, "category": "billing"}
	d := FromRun("r1", chain.StatusCompleted, map[string]any{"category": "billing"}, []engine.NodeResult{
		{NodeID: "fetch", Status: engine.PhaseDone, Output: out},
		{NodeID: "route", Status: engine.PhaseDone, Output: out},
		{NodeID: "other", Status: engine.PhaseError, Output: "not read"},
	})
	return c, f, d
}

func TestExprScopeReadsWhatTheFieldReads(t *testing.T) {
	t.Parallel()
	c, f, d := fixture(t)
	if _, ok := d.Outputs["other"]; ok {
		t.Error("an unfinished node's output is read")
	}
	sc := NewScope(f, d)
	if v, _ := sc.Lookup("output"); fmt.Sprint(v.(map[string]any)["category"]) != "billing" {
		t.Errorf("output = %v", v)
	}
	if v, _ := sc.Lookup("fetch"); v.(map[string]any)["output"] == nil {
		t.Errorf("a node id reads {output}: %v", v)
	}
	if _, ok := sc.Lookup("item"); ok {
		t.Error("item is read at a branch's condition")
	}
	if v, _ := sc.Lookup("node_results"); len(v.(map[string]any)) != 2 {
		t.Errorf("node_results = %v", v)
	}
	if r := sc.Root(); r["fetch"] == nil || r["output"] == nil || r["input"] == nil {
		t.Errorf("root = %v", r)
	}
	// input_map's output is what the node received: its one source's output.
	fi, err := chain.ExprFieldContext(c, "done", "", "input_map.x")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := NewScope(fi, d).Lookup("output"); v.(map[string]any)["category"] != "billing" {
		t.Errorf("done's input_map output = %v", v)
	}
	// Nothing ran: names read nothing, and the note says why.
	if _, ok := NewScope(f, nil).Lookup("input"); ok {
		t.Error("input reads something without a run")
	}
	if Note(nil) == "" || Note(d) != "" || !strings.Contains(Note(&RunData{Test: "t"}), `test "t"`) {
		t.Errorf("notes: %q %q", Note(nil), Note(d))
	}
}

func TestExprShapesFromTheRunAndToolSchemas(t *testing.T) {
	t.Parallel()
	c, f, d := fixture(t)
	reg := engine.NewRegistry()
	reg.SetOutputSchema("http", map[string]any{"type": "object", "properties": map[string]any{"status": map[string]any{"type": "integer"}}})
	sh, fromSchema := Shapes(c, reg, f, d)
	items := sh["output"].Keys["items"]
	if items.Type != "array" || items.Elem.Keys["sku"].Type != "string" || items.Elem.Keys["qty"].Type != "number" {
		t.Errorf("output shape = %+v", sh["output"])
	}
	if sh["fetch"].Keys["output"].Keys["category"].Type != "string" || len(fromSchema) != 0 {
		t.Errorf("fetch = %+v, from schemas %v", sh["fetch"], fromSchema)
	}
	// Without a run, the tool's schema gives fetch's shape.
	sh, fromSchema = Shapes(c, reg, f, nil)
	if sh["fetch"].Keys["output"].Keys["status"].Type != "number" || fmt.Sprint(fromSchema) != "[fetch]" {
		t.Errorf("fetch = %+v, from schemas %v", sh["fetch"], fromSchema)
	}
	// An object lists at most ShapeKeys keys.
	wide := map[string]any{}
	for i := 0; i < ShapeKeys+5; i++ {
		wide[fmt.Sprintf("k%03d", i)] = i
	}
	budget := ShapeNodes
	if s := shapeOf(wide, ShapeDepth, &budget); len(s.Keys) != ShapeKeys || !s.More {
		t.Errorf("wide: %d keys, more %v", len(s.Keys), s.More)
	}
}

func TestExprPreview(t *testing.T) {
	t.Parallel()
	c, f, d := fixture(t)
	eval := func(src string) *Preview {
		t.Helper()
		p, err := Evaluate(context.Background(), c, f, d, src)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := eval("output.items[0].sku"); p.Error != nil || p.Value != `"a1"` || p.Type != "string" || p.Truncated {
		t.Errorf("value: %+v", p)
	}
	big := eval("[" + strings.Repeat("output.items,", 400) + "output.items]")
	if !big.Truncated || len(big.Value) != PreviewBytes {
		t.Errorf("big: truncated %v, %d bytes", big.Truncated, len(big.Value))
	}
	blow := eval("[output.items, output.items][]" + strings.Repeat(".[@, @, @, @, @, @, @, @][]", 7))
	if blow.Error == nil || blow.Error.Code != "expression_eval" || !strings.Contains(blow.Error.Message, "budget") {
		t.Errorf("budget: %+v", blow.Error)
	}
	syn := eval("a && lenght(output.items)")
	if e := syn.Error; e == nil || e.Code != "expression_syntax" || e.Pos == nil || *e.Pos != 5 || e.Line != 1 || e.Column != 6 || syn.Warnings != nil {
		t.Errorf("syntax: %+v", syn)
	}
	if e := eval("abs(output.category)").Error; e == nil || e.Code != "expression_eval" || !strings.HasPrefix(e.Message, "abs()") {
		t.Errorf("eval: %+v", e)
	}
	typo := eval("outptu.items")
	if typo.Value != "null" || len(typo.Warnings) != 1 || typo.Warnings[0].DidYouMean != "output" {
		t.Errorf("typo: %+v", typo)
	}
	bare := eval("output.category == billing")
	if len(bare.Fixes) != 1 || bare.Fixes[0].Expr != "output.category == 'billing'" || len(bare.Warnings) != 0 {
		t.Errorf("bare word: %+v", bare)
	}
}

func TestExprQuoteOperand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, word, want string }{
		{"a == billing", "billing", "a == 'billing'"},
		{"billing != a", "billing", "'billing' != a"},
		{"x.billing == a", "billing", ""}, // a field, not a word
		{"'billing' == billing", "billing", "'billing' == 'billing'"},
		{"billing_x == a", "billing", ""},
		{"length(billing)", "billing", ""}, // not next to a comparison
	} {
		if got := quoteOperand(tc.src, tc.word); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestExprDataFromTest(t *testing.T) {
	t.Parallel()
	c, _, _ := fixture(t)
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	d, err := FromTest(context.Background(), c, chaintest.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if d.Test != "high" || d.RunID != "" || d.Input["who"] != "ada" || d.Outputs["fetch"] == nil {
		t.Errorf("test data = %+v", d)
	}
}
