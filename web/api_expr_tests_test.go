package web

import (
	"strings"
	"testing"
)

// A chain that never ran previews against its first test: the test's input
// and mocks, run in memory (issue #16). A run, once there, wins.
func TestExprPreviewReadsATestWithoutARun(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t)
	id := createChain(t, srv, `{"name":"expr-tests","nodes":[
	{"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:9/x"}},
	{"node_id":"route","kind":"branch","condition":"output.score > `+"`5`"+`"},
	{"node_id":"hi","kind":"tool","name":"echo"},
	{"node_id":"lo","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"route"},{"source":"route","target":"hi","label":"true"},{"source":"route","target":"lo","label":"false"}],
	"tests":[{"name":"high score","input":{"who":"ada"},"mocks":{"fetch":{"score":7,"tags":["a","b"]}},"assert":{"status":"completed"}}]}`)
	r := do(t, srv, "POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "route", "field": "condition", "expr": "output.tags[1]"})
	wantStatus(t, r, 200)
	m := r.json(t)
	if m["value"] != `"b"` || m["test"] != "high score" || m["run_id"] != "" || !strings.Contains(m["note"].(string), `test "high score"`) {
		t.Errorf("preview over the test = %v", m)
	}
	r = do(t, srv, "POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "hi", "field": "input_map.x", "expr": "fetch.output.score"})
	if m := r.json(t); m["value"] != "7" {
		t.Errorf("an upstream node's mocked output = %v", m)
	}
	r = do(t, srv, "GET", "/v1/chains/"+id+"/expr/context?node=route&field=condition", nil)
	wantStatus(t, r, 200)
	c := r.json(t)
	out, _ := c["shapes"].(map[string]any)["output"].(map[string]any)
	if c["test"] != "high score" || out == nil || out["keys"].(map[string]any)["score"] == nil {
		t.Errorf("context over the test = %v", c)
	}
	// once the chain ran, the run's data is what a preview reads
	run := do(t, srv, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`)
	wantStatus(t, run, 202)
	waitRun(t, srv, run.json(t)["run_id"].(string))
	r = do(t, srv, "POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "route", "field": "condition", "expr": "output.tags[1]"})
	if m := r.json(t); m["run_id"] == "" || m["test"] != nil {
		t.Errorf("after a run = %v", m)
	}
}
