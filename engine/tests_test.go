package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

func testsDoc(tests string) string {
	return `{"name":"t","nodes":[
	 {"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/"}},
	 {"node_id":"route","kind":"branch","condition":"output.status == ` + "`200`" + `","true_node":"ok","false_node":"bad"},
	 {"node_id":"ok","kind":"tool","name":"echo"},{"node_id":"bad","kind":"tool","name":"echo"}],
	 "edges":[{"source":"fetch","target":"route"}],"tests":[` + tests + `]}`
}

func TestTestValidation(t *testing.T) {
	t.Parallel()
	outputs := builtin.OutputSchemas()
	opts := chain.ValidateOptions{ToolOutput: func(n string) (map[string]any, bool) { s, ok := outputs[n]; return s, ok }}
	cases := []struct {
		name, tests, rule, field, msg string
	}{
		{"mock_of_unknown_node", `{"name":"happy path","mocks":{"fetcher":{}},"assert":{}}`,
			chain.RuleTestUnknownNode, `tests[0] "happy path".mocks.fetcher`, `no node "fetcher"`},
		{"mock_does_not_fit_the_tool", `{"name":"a","mocks":{"fetch":{"status":"200","headers":{},"body":null}},"assert":{}}`,
			chain.RuleTestMockShape, `tests[0] "a".mocks.fetch`, `does not fit the output of tool "http": "status" is a string, want an integer`},
		{"mock_lacks_a_field", `{"name":"a","mocks":{"fetch":{"status":200}},"assert":{}}`,
			chain.RuleTestMockShape, `tests[0] "a".mocks.fetch`, `the output lacks the field "body"`},
		{"mock_of_a_router", `{"name":"a","mocks":{"route":{}},"assert":{}}`,
			chain.RuleTestMockRouter, `tests[0] "a".mocks.route`, `mock the node before it`},
		{"assertion_does_not_parse", `{"name":"a","assert":{"expect":[{"that":"ok.output.x >"}]}}`,
			chain.RuleTestAssertionSyntax, `tests[0] "a".assert.expect[0].that`, ``},
		{"path_without_equals", `{"name":"a","assert":{"expect":[{"path":"ok.output"}]}}`,
			chain.RuleTestAssertionForm, `tests[0] "a".assert.expect[0].equals`, `is required with "path"`},
		{"path_and_that", `{"name":"a","assert":{"expect":[{"path":"ok.output","equals":1,"that":"x"}]}}`,
			chain.RuleTestAssertionForm, `tests[0] "a".assert.expect[0]`, `has both path and that`},
		{"ran_unknown_node", `{"name":"a","assert":{"ran":["ok","nope"]}}`,
			chain.RuleTestUnknownNode, `tests[0] "a".assert.ran[1]`, `no node "nope"`},
		{"not_ran_unknown_node", `{"name":"a","assert":{"not_ran":["nope"]}}`,
			chain.RuleTestUnknownNode, `tests[0] "a".assert.not_ran[0]`, `no node "nope"`},
		{"ran_and_not_ran", `{"name":"a","assert":{"ran":["ok"],"not_ran":["ok"]}}`,
			chain.RuleTestRanConflict, `tests[0] "a".assert.not_ran[0]`, `also in assert.ran`},
		{"unknown_status", `{"name":"a","assert":{"status":"done"}}`,
			chain.RuleTestStatus, `tests[0] "a".assert.status`, `unknown status "done"`},
		{"duplicate_names", `{"name":"a","assert":{}},{"name":"a","assert":{}}`,
			chain.RuleTestName, `tests[1] "a".name`, `duplicate test name "a" (also tests[0])`},
		{"missing_name", `{"assert":{}}`, chain.RuleTestName, `tests[0].name`, `needs a name`},
		{"expect_node_unknown", `{"name":"a","assert":{"expect":[{"that":"status == 'completed'","node":"zz"}]}}`,
			chain.RuleTestUnknownNode, `tests[0] "a".assert.expect[0].node`, `no node "zz"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := chain.Decode([]byte(testsDoc(tc.tests)), chain.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var found []chain.Issue
			for _, is := range chain.ValidateWith(c, opts) {
				if strings.HasPrefix(is.Field, "tests[") {
					found = append(found, is)
				}
			}
			if len(found) != 1 {
				t.Fatalf("want one test issue, got %v", found)
			}
			is := found[0]
			if is.Rule != tc.rule || is.Field != tc.field || is.Severity != chain.SeverityError || !strings.Contains(is.Message, tc.msg) {
				t.Errorf("got %s (field %q), want rule %s field %q message containing %q", is, is.Field, tc.rule, tc.field, tc.msg)
			}
		})
	}
}

func TestValidTestsHaveNoIssuesAndDoNotBlockRuns(t *testing.T) {
	t.Parallel()
	c, err := chain.Decode([]byte(testsDoc(`{"name":"a","input":{"x":1},"mocks":{"fetch":{"status":200,"headers":{},"body":{"n":1}}},
	  "assert":{"status":"completed","ran":["ok"],"not_ran":["bad"],"expect":[{"path":"ok.output.body.n","equals":1},{"that":"status == 'completed'","node":"ok"}]}}`)), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if issues := chain.ValidateWith(c, chain.ValidateOptions{ToolOutput: func(n string) (map[string]any, bool) { s, ok := builtin.OutputSchemas()[n]; return s, ok }}); len(issues) != 0 {
		t.Fatalf("issues: %v", issues)
	}
	// A broken test is the tests' problem, never the run's.
	bad, err := chain.Decode([]byte(testsDoc(`{"name":"a","mocks":{"nope":1},"assert":{}}`)), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if is := enginetest.PlanOf(engine.New(engine.Options{}), bad).Issues(); chain.HasErrors(is) {
		t.Fatalf("Compile reports test issues: %v", is)
	}
}

func TestTestDecodingIsStrict(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`{"name":"a","asert":{}}`:                                   `tests[0] "a".asert: unknown field`,
		`{"name":"a","assert":{"Ran":["x"]}}`:                       `tests[0] "a".assert.Ran: unknown field (field names are case-sensitive: did you mean "ran"?)`,
		`{"name":"a","assert":{"expect":[{"path":"x","equal":1}]}}`: `tests[0] "a".assert.expect[0].equal: unknown field`,
		`{"name":"a","mocks":[]}`:                                   `tests[0] "a".mocks: wrong type`,
	}
	for test, want := range cases {
		_, err := chain.Decode([]byte(testsDoc(test)), chain.Limits{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", test, err, want)
		}
	}
	// Round trip: equals keeps null apart from absent.
	c, err := chain.Decode([]byte(testsDoc(`{"name":"a","assert":{"expect":[{"path":"ok.output","equals":null}]}}`)), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(c.Clone().Tests[0].Assert.Expect[0].Equals); got != "null" {
		t.Errorf("equals after a round trip = %q, want null", got)
	}
}

// TestRunOptionsMocks: a mocked node, map body or parallel branch never calls
// its tool; MockErrors fail a node without calling it either.
func TestRunOptionsMocks(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.Register("outside", func(context.Context, map[string]any, tool.Emitter) (any, error) {
		calls.Add(1)
		return "real", nil
	})
	doc := `{"name":"m","nodes":[
	 {"node_id":"a","kind":"tool","name":"outside"},
	 {"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
	 {"node_id":"body","kind":"tool","name":"outside"},
	 {"node_id":"p","kind":"parallel","branches":["b1"]},
	 {"node_id":"b1","kind":"tool","name":"outside"},
	 {"node_id":"f","kind":"tool","name":"outside","on_error":"continue"}],
	 "edges":[{"source":"a","target":"m"},{"source":"m","target":"p"},{"source":"p","target":"f"}]}`
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Options{Registry: reg}).Run(context.Background(), enginetest.PlanOf(engine.New(engine.Options{Registry: reg}), c), map[string]any{"items": []any{1, 2}}, engine.RunOptions{
		Mocks:      map[string]any{"a": "mock a", "body": map[string]any{"x": 1}, "b1": "mock b1"},
		MockErrors: map[string]string{"f": "down"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Fatalf("the tool was called %d times", calls.Load())
	}
	if res.Outputs["a"] != "mock a" || js(res.Outputs["m"]) != `[{"x":1},{"x":1}]` || js(res.Outputs["p"]) != `["mock b1"]` {
		t.Errorf("outputs %s", js(res.Outputs))
	}
	if f := res.Nodes["f"]; f == nil || f.Error != "down" || res.Status != chain.StatusPartial {
		t.Errorf("f = %+v, status %s", f, res.Status)
	}
}
