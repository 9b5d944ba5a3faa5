package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Extract b and c of a → b → c → d: the new chain exists, the parent the
// API returns saves, validates, and a run of it ends with the same output.
func TestExtractAPIRewritesAndRuns(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, (`{"name":"outer","nodes":[
 {"node_id":"a","kind":"tool","name":"echo","input_map":{"v":"input.x"}},
 {"node_id":"b","kind":"tool","name":"echo"},
 {"node_id":"c","kind":"tool","name":"echo","input":{"tag":"c"},"input_map":{"from_b":"b.output.v"}},
 {"node_id":"d","kind":"tool","name":"echo","input_map":{"got":"c.output.from_b"}}],
 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d"}]}`))
	run := func() any {
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":5}}`)
		wantStatus(t, r, http.StatusAccepted)
		m := waitRun(t, ts, r.json(t)["run_id"].(string))
		if m["status"] != "completed" {
			t.Fatalf("run: %v", m)
		}
		return m["final_output"]
	}
	before := run()

	r := do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":["b","c"],"name":"inner"}`)
	wantStatus(t, r, http.StatusCreated)
	m := r.json(t)
	if m["chain"].(map[string]any)["name"] != "inner" {
		t.Fatalf("chain = %v", m["chain"])
	}
	sub := do(t, ts, "GET", "/v1/chains/"+m["chain"].(map[string]any)["id"].(string), nil)
	wantStatus(t, sub, http.StatusOK)
	if n := len(sub.json(t)["doc"].(map[string]any)["nodes"].([]any)); n != 2 {
		t.Errorf("new chain has %d nodes, want 2", n)
	}
	parent, _ := json.Marshal(m["parent"])
	if sk := m["parent"].(map[string]any)["nodes"].([]any)[1].(map[string]any); sk["node_id"] != "c" || sk["kind"] != "skill" || sk["name"] != "inner" {
		t.Fatalf("parent = %s", parent)
	}
	r = do(t, ts, "PUT", "/v1/chains/"+id, parent, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusOK)
	if r.json(t)["valid"] != true {
		t.Fatalf("saved parent does not validate: %v", r.json(t)["issues"])
	}
	after := run()
	if b, _ := json.Marshal(before); string(b) != `{"got":5}` {
		t.Fatalf("before = %s", b)
	}
	if a, b := must(json.Marshal(after)), must(json.Marshal(before)); string(a) != string(b) {
		t.Errorf("after = %s, before = %s", a, b)
	}

	// The same name again: 409, nothing else written.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":["a"],"name":"inner"}`)
	wantStatus(t, r, http.StatusConflict)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// A selection whose hidden node is read downstream is refused with the
// node and expression, and the new chain is not created.
func TestExtractAPIRefusesAndWritesNothing(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"outer2","nodes":[
 {"node_id":"a","kind":"tool","name":"echo"},
 {"node_id":"b","kind":"tool","name":"echo"},
 {"node_id":"c","kind":"tool","name":"echo"},
 {"node_id":"d","kind":"tool","name":"echo","input_map":{"got":"b.output"}}],
 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":["b","c"],"name":"hidden"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "extract_refused" || r.errDetails(t)["node_id"] != "d" || !strings.Contains(string(r.body), `\"b.output\" reads node \"b\"`) {
		t.Errorf("error = %s", r.body)
	}
	if body := string(do(t, ts, "GET", "/v1/chains", nil).body); strings.Contains(body, `"hidden"`) {
		t.Errorf("a refused extract created the chain: %s", body)
	}

	// Bad input: unknown node 422, bad JSON 400, unknown chain 404, bad name 4xx.
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":["zz"],"name":"n"}`), http.StatusUnprocessableEntity)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":`), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/extract", `{"nodes":["a"],"name":"n"}`), http.StatusNotFound)
	if r := do(t, ts, "POST", "/v1/chains/"+id+"/extract", `{"nodes":["a"],"name":""}`); r.status < 400 || r.status >= 500 {
		t.Errorf("empty name: %d", r.status)
	}
}
