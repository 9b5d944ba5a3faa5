package chaintest_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// TestFromRunReplaysTheRun: a real run (http answering) saved as a test
// mocks the http node with what it returned, records the route and the final
// output, and the test passes without calling http; breaking the chain then
// fails it on the node that changed.
func TestFromRunReplaysTheRun(t *testing.T) {
	t.Parallel()
	c := decode(t, "")
	var calls atomic.Int64
	reg := registry(&calls)
	reg.Register("http", func(context.Context, map[string]any, tool.Emitter) (any, error) {
		calls.Add(1)
		return map[string]any{"status": 200.0, "headers": map[string]any{}, "body": map[string]any{"score": 9.0}}, nil
	})
	res, err := engine.New(engine.Options{Registry: reg}).Run(context.Background(), enginetest.PlanOf(engine.New(engine.Options{Registry: reg}), c), map[string]any{"url": "http://127.0.0.1:1/"}, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("run: %v %+v", err, res.Error)
	}
	var nodes []engine.NodeResult
	for _, nr := range res.Nodes {
		nodes = append(nodes, *nr)
	}
	test, err := chaintest.FromRun(c, reg, "recorded", chaintest.Recorded{Input: res.Nodes["fetch"].Input.(map[string]any), Status: res.Status, FinalOutput: res.FinalOutput, Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	if len(test.Mocks) != 1 || test.Mocks["fetch"] == nil {
		t.Errorf("mocks = %v, want fetch only (score, high, low are pure)", test.Mocks)
	}
	if got, _ := json.Marshal(test.Assert.NotRan); string(got) != `["low"]` {
		t.Errorf("not_ran = %s", got)
	}
	if len(test.Assert.Ran) != 4 || test.Assert.Status != chain.StatusCompleted || string(test.Assert.Expect[0].Equals) != `{"level":"high","value":9}` {
		t.Errorf("assert = %+v (%s)", test.Assert, test.Assert.Expect[0].Equals)
	}
	c.Tests = []chain.Test{test}
	before := calls.Load()
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg})
	if err != nil || !rep.Tests[0].Passed {
		t.Fatalf("recorded test: %v %+v", err, rep.Tests[0].Failures)
	}
	// Break the chain: the high branch now reports the wrong level.
	c.Node("high").InputMap["level"] = "'HIGH'"
	rep, _ = chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg})
	if rep.Tests[0].Passed || rep.Tests[0].Failures[0].Kind != chaintest.KindExpect || rep.Tests[0].Failures[0].Node != "high" {
		t.Fatalf("broken chain: %+v", rep.Tests[0])
	}
	if calls.Load() != before {
		t.Fatalf("tests called http %d times", calls.Load()-before)
	}
	if _, err := chaintest.FromRun(c, reg, "x", chaintest.Recorded{Status: chain.StatusRunning}); err == nil {
		t.Error("a running run became a test")
	}
}
