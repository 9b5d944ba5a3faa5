package web

import (
	"strings"
	"testing"
)

// A chain that never ran previews against its first test: the test's input
// and mocks, run in memory. A run, once there, wins.
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

// Without a run (or a test), a tool's declared output schema gives the
// shapes that complete `fetch.output.` and `output.`.
func TestExprContextShapesFromToolSchemas(t *testing.T) {
	t.Parallel()
	reg := testRegistry()
	reg.SetOutputSchema("http", map[string]any{"type": "object", "properties": map[string]any{
		"status": map[string]any{"type": "integer"}, "body": map[string]any{"type": "any"},
		"items": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{"sku": map[string]any{"type": "string"}}}}}})
	_, srv := newTestServerWith(t, Config{}, reg)
	id := createChain(t, srv, `{"name":"expr-schema","nodes":[
	{"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:9/"}},
	{"node_id":"route","kind":"branch","condition":"output.status == `+"`200`"+`"}],
	"edges":[{"source":"fetch","target":"route"}]}`)
	r := do(t, srv, "GET", "/v1/chains/"+id+"/expr/context?node=route&field=condition", nil)
	wantStatus(t, r, 200)
	m := r.json(t)
	sh := m["shapes"].(map[string]any)
	fetch, _ := sh["fetch"].(map[string]any)
	if fetch == nil {
		t.Fatalf("no shape for fetch: %s", r.body)
	}
	out := fetch["keys"].(map[string]any)["output"].(map[string]any)["keys"].(map[string]any)
	if out["status"].(map[string]any)["type"] != "number" || out["items"].(map[string]any)["elem"].(map[string]any)["keys"].(map[string]any)["sku"] == nil {
		t.Errorf("fetch.output shape = %v", out)
	}
	if got := m["schema_shapes"].([]any); len(got) != 1 || got[0] != "fetch" {
		t.Errorf("schema_shapes = %v", got)
	}
	r = do(t, srv, "GET", "/v1/chains/"+id+"/expr/context?node=fetch&field=set_state.k", nil)
	m = r.json(t)
	if o, _ := m["shapes"].(map[string]any)["output"].(map[string]any); o == nil || o["keys"].(map[string]any)["status"] == nil {
		t.Errorf("fetch's own output = %s", r.body)
	}
}

// While the field is half-typed the saved chain does not validate; the test
// runs with the expression as typed, so the preview still has its data.
func TestExprPreviewTestRunsWithTheTypedExpression(t *testing.T) {
	t.Parallel()
	_, srv := newTestServer(t)
	id := createChain(t, srv, `{"name":"expr-typed","nodes":[
	{"node_id":"fetch","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:9/"}},
	{"node_id":"route","kind":"branch","condition":"fetch.output."},
	{"node_id":"hi","kind":"tool","name":"echo"},{"node_id":"lo","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"route"},{"source":"route","target":"hi","label":"true"},{"source":"route","target":"lo","label":"false"}],
	"tests":[{"name":"t","mocks":{"fetch":{"status":200,"headers":{},"body":{"title":"Hello"}}},"assert":{}}]}`)
	r := do(t, srv, "POST", "/v1/chains/"+id+"/expr/preview", map[string]any{"node": "route", "field": "condition", "expr": "fetch.output.body.title"})
	if m := r.json(t); m["value"] != `"Hello"` || m["test"] != "t" {
		t.Errorf("preview = %v", m)
	}
}
