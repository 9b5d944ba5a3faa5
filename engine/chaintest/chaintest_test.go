package chaintest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/tool"
)

// scoreChain fetches a score over HTTP, routes on it and reports. Its tests
// are appended by each case.
const scoreChain = `{"name":"score","nodes":[
 {"node_id":"fetch","kind":"tool","name":"http","input_map":{"url":"input.url"}},
 {"node_id":"score","kind":"tool","name":"transform","input":{"expression":"{value: body.score}"},"input_map":{"data":"fetch.output"}},
 {"node_id":"check","kind":"branch","condition":"output.value > ` + "`5`" + `","true_node":"high","false_node":"low"},
 {"node_id":"high","kind":"tool","name":"echo","input_map":{"level":"'high'","value":"score.output.value"}},
 {"node_id":"low","kind":"tool","name":"echo","input_map":{"level":"'low'","value":"score.output.value"}}
],"edges":[{"source":"fetch","target":"score"},{"source":"score","target":"check"}],
"tests":[%s]}`

// registry is the studio's: built-in tools, pure ones inline, output shapes
// declared. http is replaced by a counter: a test must never call it.
func registry(httpCalls *atomic.Int64) *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)
	for n, s := range builtin.OutputSchemas() {
		reg.SetOutputSchema(n, s)
	}
	reg.Register("http", func(context.Context, map[string]any, tool.Emitter) (any, error) {
		httpCalls.Add(1)
		return nil, errors.New("the network was reached")
	})
	return reg
}

func decode(t *testing.T, tests string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(strings.Replace(scoreChain, "%s", tests, 1)), chain.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}

const mock7 = `"mocks":{"fetch":{"status":200,"headers":{},"body":{"score":7}}}`

func TestRunAssertions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		test    string
		pass    bool
		kind    string // the failure's kind
		node    string // the node it concerns
		want    any    // expected, as reported
		got     any    // actual, as reported
		message string // part of the failure message
	}{
		{name: "status_passes", test: `{"name":"t",` + mock7 + `,"assert":{"status":"completed"}}`, pass: true},
		{name: "status_fails", test: `{"name":"t",` + mock7 + `,"assert":{"status":"failed"}}`,
			kind: chaintest.KindStatus, want: "failed", got: "completed", message: "the run ended completed, want failed"},
		{name: "ran_passes", test: `{"name":"t",` + mock7 + `,"assert":{"ran":["fetch","score","check","high"]}}`, pass: true},
		{name: "ran_fails_names_why", test: `{"name":"t",` + mock7 + `,"assert":{"ran":["low"]}}`,
			kind: chaintest.KindRan, node: "low", want: "ran", got: "skip: branch_not_taken", message: `node "low" did not run`},
		{name: "not_ran_passes", test: `{"name":"t",` + mock7 + `,"assert":{"not_ran":["low"]}}`, pass: true},
		{name: "not_ran_fails", test: `{"name":"t",` + mock7 + `,"assert":{"not_ran":["high"]}}`,
			kind: chaintest.KindNotRan, node: "high", want: "not run", got: "ran"},
		{name: "path_equals_passes", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"path":"score.output.value","equals":7}]}}`, pass: true},
		{name: "path_equals_object_passes", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"path":"output","equals":{"level":"high","value":7}}]}}`, pass: true},
		{name: "path_equals_fails_with_expected_and_actual", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"path":"steps.score.output.value","equals":8}]}}`,
			kind: chaintest.KindExpect, node: "score", want: 8.0, got: 7.0, message: "`steps.score.output.value` is 7, want 8"},
		{name: "that_passes", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"that":"high.output.value > ` + "`5`" + ` && status == 'completed'"}]}}`, pass: true},
		{name: "that_fails_shows_what_it_read", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"that":"score.output.value > ` + "`9`" + `"}]}}`,
			kind: chaintest.KindExpect, node: "score", want: true, got: false, message: "score.output was {\"value\":7}"},
		{name: "explicit_node_wins", test: `{"name":"t",` + mock7 + `,"assert":{"expect":[{"path":"output.level","equals":"low","node":"check"}]}}`,
			kind: chaintest.KindExpect, node: "check", want: "low", got: "high"},
		{name: "the_other_route", test: `{"name":"t","mocks":{"fetch":{"status":200,"headers":{},"body":{"score":2}}},"assert":{"status":"completed","ran":["low"],"not_ran":["high"],"expect":[{"path":"output.level","equals":"low"}]}}`, pass: true},
		{name: "unmocked_outside_tool_is_refused", test: `{"name":"t","assert":{"status":"completed"}}`,
			kind: chaintest.KindUnmocked, node: "fetch", message: `node "fetch" (tool "http") ran without a mock`},
		{name: "invalid_test_does_not_run", test: `{"name":"t","mocks":{"nope":1},"assert":{}}`,
			kind: chaintest.KindInvalid, message: `tests[0] "t".mocks.nope: no node "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int64
			rep, err := chaintest.Run(context.Background(), decode(t, tc.test), chaintest.Options{Registry: registry(&calls)})
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 0 {
				t.Fatalf("the http tool was called %d times: mocks must replace it and an unmocked one must be refused", calls.Load())
			}
			tr := rep.Tests[0]
			if tr.Passed != tc.pass || (rep.Passed == 1) != tc.pass || rep.Total != 1 {
				t.Fatalf("passed = %v (report %d/%d), want %v; failures: %+v", tr.Passed, rep.Passed, rep.Total, tc.pass, tr.Failures)
			}
			if tc.pass {
				return
			}
			f := tr.Failures[0]
			if f.Kind != tc.kind || f.Node != tc.node {
				t.Errorf("failure kind %q node %q, want %q %q: %+v", f.Kind, f.Node, tc.kind, tc.node, f)
			}
			if tc.want != nil && (!chain.EqualJSON(f.Expected, tc.want) || !chain.EqualJSON(f.Actual, tc.got)) {
				t.Errorf("expected %v actual %v, want %v %v", f.Expected, f.Actual, tc.want, tc.got)
			}
			if !strings.Contains(f.Message, tc.message) {
				t.Errorf("message %q does not say %q", f.Message, tc.message)
			}
		})
	}
}

// TestMocksReplaceEveryOutsideKind: proc, skill and agent nodes are mocked
// like tools, and without a mock none of them runs.
func TestMocksReplaceEveryOutsideKind(t *testing.T) {
	t.Parallel()
	var procCalls atomic.Int64
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)
	reg.Register("proc", func(context.Context, map[string]any, tool.Emitter) (any, error) {
		procCalls.Add(1)
		return map[string]any{"stdout": "real", "stderr": "", "exit_code": 0}, nil
	})
	doc := `{"name":"k","nodes":[
	 {"node_id":"p","kind":"proc","config":{"argv":["date"]}},
	 {"node_id":"s","kind":"skill","name":"other"},
	 {"node_id":"a","kind":"agent","name":"helper"},
	 {"node_id":"w","kind":"interrupt"},
	 {"node_id":"end","kind":"tool","name":"echo","input_map":{"p":"p.output.stdout","s":"s.output","a":"a.output.answer","w":"w.output"}}],
	 "edges":[{"source":"p","target":"s"},{"source":"s","target":"a"},{"source":"a","target":"w"},{"source":"w","target":"end"}],
	 "tests":[
	  {"name":"mocked","mocks":{"p":{"stdout":"mock","stderr":"","exit_code":0},"s":"sub","a":{"answer":"hi"},"w":{"approved":true}},
	   "assert":{"status":"completed","expect":[{"path":"output","equals":{"p":"mock","s":"sub","a":"hi","w":{"approved":true}}}]}},
	  {"name":"unmocked","assert":{"status":"completed"}}]}`
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if procCalls.Load() != 0 {
		t.Fatalf("proc ran %d times in a test", procCalls.Load())
	}
	if !rep.Tests[0].Passed {
		t.Errorf("mocked: %+v", rep.Tests[0].Failures)
	}
	un := rep.Tests[1]
	if un.Passed || un.Failures[0].Kind != chaintest.KindUnmocked || un.Failures[0].Node != "p" || un.Status != chain.StatusFailed {
		t.Errorf("unmocked: status %s, failures %+v", un.Status, un.Failures)
	}
	if rep.Passed != 1 || rep.Failed != 1 {
		t.Errorf("report %d passed %d failed", rep.Passed, rep.Failed)
	}
}

// TestErrorsMakeANodeFail: a test's errors make a node fail without
// running it, so its on_error path can be tested.
func TestErrorsMakeANodeFail(t *testing.T) {
	t.Parallel()
	doc := `{"name":"e","nodes":[
	 {"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/"},"on_error":"fallback"},
	 {"node_id":"fallback","kind":"tool","name":"echo","input_map":{"why":"error.message"}},
	 {"node_id":"done","kind":"tool","name":"echo"}],
	 "edges":[{"source":"fetch","target":"done"},{"source":"fallback","target":"done"}],
	 "tests":[{"name":"down","errors":{"fetch":"connection refused"},
	   "assert":{"status":"partial","ran":["fallback"],"expect":[{"path":"fallback.output.why","equals":"connection refused"}]}}]}`
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: registry(&calls)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Tests[0].Passed || calls.Load() != 0 {
		t.Fatalf("calls %d, %+v", calls.Load(), rep.Tests[0])
	}
}

func TestOnlyRunsOneTest(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	c := decode(t, `{"name":"a",`+mock7+`,"assert":{}},{"name":"b",`+mock7+`,"assert":{"status":"failed"}}`)
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: registry(&calls), Only: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != 1 || rep.Tests[0].Name != "b" || rep.Tests[0].Index != 1 || rep.Failed != 1 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: registry(&calls), Only: "zzz"}); !errors.Is(err, chaintest.ErrNoTest) {
		t.Fatalf("unknown test: %v", err)
	}
}

func TestChainWithErrorsRunsNoTest(t *testing.T) {
	t.Parallel()
	c, err := chain.Decode([]byte(`{"name":"x","nodes":[{"node_id":"a","kind":"branch"}],"tests":[{"name":"t","assert":{}}]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Tests[0].Failures
	if rep.Failed != 1 || f[0].Kind != chaintest.KindInvalid || !strings.Contains(f[0].Message, "the chain has errors") {
		t.Fatalf("%+v", rep.Tests[0])
	}
}
