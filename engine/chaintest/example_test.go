package chaintest_test

import (
	"context"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
)

// A chain carries its tests: each gives an input, mocks the nodes that would
// reach outside (here the http call) and asserts what ran and what came out.
// Run runs them in memory; the pure built-in tools (builtin.Inline) run for
// real, the mocked http node never does. The second test fails on purpose:
// its failure names the assertion and why it did not hold.
func ExampleRun() {
	doc, err := chain.Decode([]byte(`{"name": "score", "nodes": [
	  {"node_id": "fetch", "kind": "tool", "name": "http", "input_map": {"url": "input.url"}},
	  {"node_id": "score", "kind": "tool", "name": "transform",
	   "input": {"expression": "{value: body.score}"}, "input_map": {"data": "fetch.output"}},
	  {"node_id": "check", "kind": "branch", "condition": "output.value > `+"`5`"+`",
	   "true_node": "high", "false_node": "low"},
	  {"node_id": "high", "kind": "tool", "name": "echo", "input_map": {"level": "'high'"}},
	  {"node_id": "low", "kind": "tool", "name": "echo", "input_map": {"level": "'low'"}}],
	 "edges": [{"source": "fetch", "target": "score"}, {"source": "score", "target": "check"}],
	 "tests": [
	  {"name": "a high score", "input": {"url": "https://scores.example/7"},
	   "mocks": {"fetch": {"status": 200, "headers": {}, "body": {"score": 7}}},
	   "assert": {"status": "completed", "ran": ["high"], "not_ran": ["low"],
	              "expect": [{"path": "output", "equals": {"level": "high"}}]}},
	  {"name": "a low score", "input": {"url": "https://scores.example/2"},
	   "mocks": {"fetch": {"status": 200, "headers": {}, "body": {"score": 2}}},
	   "assert": {"ran": ["high"]}}]}`), chain.Limits{})
	if err != nil {
		fmt.Println("decode:", err)
		return
	}
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)

	rep, err := chaintest.Run(context.Background(), doc, chaintest.Options{Registry: reg})
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	fmt.Printf("%s: %d of %d passed\n", rep.Chain, rep.Passed, rep.Total)
	for _, tr := range rep.Tests {
		fmt.Printf("%q passed=%v status=%s ran=%v\n", tr.Name, tr.Passed, tr.Status, tr.Ran)
		for _, f := range tr.Failures {
			fmt.Printf("  %s %s: %s\n", f.Kind, f.Field, f.Message)
		}
	}
	// Output:
	// score: 1 of 2 passed
	// "a high score" passed=true status=completed ran=[fetch score check high]
	// "a low score" passed=false status=completed ran=[fetch score check low]
	//   ran tests[1] "a low score".assert.ran[0]: node "high" did not run (skip: branch_not_taken)
}
