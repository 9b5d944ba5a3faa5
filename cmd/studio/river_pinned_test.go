package main

import (
	"fmt"
	"strings"
	"testing"
)

// On PostgreSQL a node run and a re-run on the current version are River
// jobs a worker executes: the worker resolves the pinned data from the
// source run's log and the chosen version from the store, as one process
// would.
func TestClusterNodeRunAndRerunVersion(t *testing.T) {
	api, ws, _ := cluster(t, 1)
	doc := map[string]any{"name": "pinned", "nodes": []any{
		map[string]any{"node_id": "a", "kind": "tool", "name": "echo", "input_map": map[string]any{"x": "input.x"}},
		map[string]any{"node_id": "b", "kind": "tool", "name": "echo", "input_map": map[string]any{"y": "a.output.x"}},
		map[string]any{"node_id": "c", "kind": "tool", "name": "echo"},
	}, "edges": []any{map[string]any{"source": "a", "target": "b"}, map[string]any{"source": "b", "target": "c"}}}
	id := saveChain(t, api, doc)
	first := startChainRun(t, api, id, map[string]any{"x": 6})
	api.waitStatus(t, first, "completed")

	code, m := api.do(t, "POST", "/v1/chains/"+id+"/nodes/b/run", map[string]any{"from_run": first})
	if code != 202 {
		t.Fatalf("node run: %d %v", code, m)
	}
	nr := api.waitStatus(t, m["run_id"].(string), "completed")
	if nr["kind"] != "node" || nr["nodes_run"].(float64) != 1 || fmt.Sprint(nr["final_output"]) != "map[y:6]" || nr["parent_run_id"] != first {
		t.Fatalf("node run on a worker: %v", nr)
	}
	code, m = api.do(t, "POST", "/v1/chains/"+id+"/nodes/b/run", map[string]any{"pinned": map[string]any{"a": map[string]any{"x": "p"}}})
	if code != 202 {
		t.Fatalf("pinned node run: %d %v", code, m)
	}
	if nr := api.waitStatus(t, m["run_id"].(string), "completed"); fmt.Sprint(nr["final_output"]) != "map[y:p]" {
		t.Fatalf("pinned node run on a worker: %v", nr)
	}

	doc["nodes"].([]any)[1].(map[string]any)["input_map"] = map[string]any{"z": "a.output.x"}
	if code, m := api.do(t, "PUT", "/v1/chains/"+id, doc, "If-Match", `"v1"`); code != 200 {
		t.Fatalf("update: %d %v", code, m)
	}
	code, m = api.do(t, "POST", "/v1/runs/"+first+"/rerun", map[string]any{"from_node": "c", "version": "current"})
	if code != 202 {
		t.Fatalf("rerun: %d %v", code, m)
	}
	rr := api.waitStatus(t, m["run_id"].(string), "completed")
	if fmt.Sprint(rr["final_output"]) != "map[z:6]" || rr["chain_version"].(float64) != 2 {
		t.Fatalf("re-run on the current version on a worker: %v", rr)
	}
	for _, n := range rr["nodes"].([]any) {
		n := n.(map[string]any)
		if want := n["node_id"] == "a"; (n["reused"] == true) != want {
			t.Errorf("%s reused = %v, want %v", n["node_id"], n["reused"], want)
		}
	}
	if strings.Contains(api.logs(), "run started") || !strings.Contains(ws[0].logs(), "kind=node") {
		t.Errorf("the worker did not execute the node run:\napi:\n%s\nworker:\n%s", api.logs(), ws[0].logs())
	}
}
