package chaintest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
)

// benchChain builds a 50-node chain: a line of steps where every fifth is an
// http call (mocked by every test), each tenth a branch choosing between two
// echo nodes that join again, the rest transforms, and nTests tests that
// each mock every http node and assert the route and the outputs.
func benchChain(b *testing.B, nTests int) *chain.Chain {
	b.Helper()
	var nodes []map[string]any
	var edges []map[string]any
	prev := ""
	link := func(id string) {
		if prev != "" {
			edges = append(edges, map[string]any{"source": prev, "target": id})
		}
		prev = id
	}
	var httpIDs []string
	for len(nodes) < 50 {
		i := len(nodes)
		switch {
		case i%10 == 9 && len(nodes) <= 46:
			br, hi, lo := fmt.Sprintf("n%d", i), fmt.Sprintf("n%d", i+1), fmt.Sprintf("n%d", i+2)
			join := fmt.Sprintf("n%d", i+3)
			nodes = append(nodes,
				map[string]any{"node_id": br, "kind": "branch", "condition": "output.v > `0`", "true_node": hi, "false_node": lo},
				map[string]any{"node_id": hi, "kind": "tool", "name": "echo"},
				map[string]any{"node_id": lo, "kind": "tool", "name": "echo"},
				map[string]any{"node_id": join, "kind": "tool", "name": "transform", "input": map[string]any{"expression": "{v: `1`}"}})
			link(br)
			edges = append(edges, map[string]any{"source": hi, "target": join}, map[string]any{"source": lo, "target": join})
			prev = join
		case i%5 == 0:
			id := fmt.Sprintf("n%d", i)
			nodes = append(nodes, map[string]any{"node_id": id, "kind": "tool", "name": "http", "input": map[string]any{"url": "http://127.0.0.1:1/"}})
			httpIDs = append(httpIDs, id)
			link(id)
		default:
			id := fmt.Sprintf("n%d", i)
			nodes = append(nodes, map[string]any{"node_id": id, "kind": "tool", "name": "transform", "input": map[string]any{"expression": "{v: `1`, n: length(@)}"}})
			link(id)
		}
	}
	tests := make([]map[string]any, nTests)
	for t := range tests {
		mocks := map[string]any{}
		for _, id := range httpIDs {
			mocks[id] = map[string]any{"status": 200, "headers": map[string]any{}, "body": map[string]any{"t": t}}
		}
		tests[t] = map[string]any{
			"name": fmt.Sprintf("test %d", t), "input": map[string]any{"t": t}, "mocks": mocks,
			"assert": map[string]any{"status": "completed", "ran": []string{"n0", "n10", "n49"}, "not_ran": []string{"n11"},
				"expect": []map[string]any{{"path": "n5.output.body.t", "equals": t}, {"that": "n49.output.v == `1`"}}},
		}
	}
	doc, err := json.Marshal(map[string]any{"name": "bench", "nodes": nodes, "edges": edges, "tests": tests})
	if err != nil {
		b.Fatal(err)
	}
	c, err := chain.Decode(doc, chain.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	if len(c.Nodes) != 50 {
		b.Fatalf("%d nodes", len(c.Nodes))
	}
	return c
}

// BenchmarkRun20Tests50Nodes: the target is 20 tests of a 50-node
// chain in under 200 ms (one op = the whole session).
func BenchmarkRun20Tests50Nodes(b *testing.B) {
	c := benchChain(b, 20)
	var calls atomic.Int64
	reg := registry(&calls)
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg})
	if err != nil || rep.Passed != 20 {
		b.Fatalf("err %v, report %+v", err, rep.Tests[0])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg}); err != nil {
			b.Fatal(err)
		}
	}
	if calls.Load() != 0 {
		b.Fatal("http was called")
	}
}
