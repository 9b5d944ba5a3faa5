package web

import (
	"net/http"
	"strings"
	"testing"
)

// waitedDoc waits on a delay node (not pure: a test must mock it) and routes
// on the input.
const waitedDoc = `{"name":"waited","nodes":[
	{"node_id":"wait","kind":"tool","name":"delay","input_map":{"ms":"input.ms","n":"input.n"}},
	{"node_id":"big","kind":"tool","name":"echo","input_map":{"size":"'big'","n":"wait.output.n"}},
	{"node_id":"small","kind":"tool","name":"echo","input_map":{"size":"'small'","n":"wait.output.n"}}],
	"edges":[{"source":"wait","target":"big","condition":"output.n > ` + "`5`" + `"},{"source":"wait","target":"small","default":true}],
	"tests":[
	 {"name":"big","mocks":{"wait":{"n":9}},"assert":{"status":"completed","ran":["big"],"not_ran":["small"]}},
	 {"name":"wrong","mocks":{"wait":{"n":1}},"assert":{"expect":[{"path":"output.size","equals":"big"}]}}]}`

func TestAPIRunChainTests(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, waitedDoc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/tests/run", nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	if m["chain_id"] != id || m["version"] != 1.0 || m["total"] != 2.0 || m["passed"] != 1.0 || m["failed"] != 1.0 {
		t.Fatalf("report %s", r.body)
	}
	tests := m["tests"].([]any)
	wrong := tests[1].(map[string]any)
	f := wrong["failures"].([]any)[0].(map[string]any)
	if wrong["passed"] != false || f["kind"] != "expect" || f["node"] != "small" || f["expected"] != "big" || f["actual"] != "small" ||
		f["field"] != `tests[1] "wrong".assert.expect[0]` {
		t.Errorf("failure %v", f)
	}
	// One test by name.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/tests/run", `{"name":"big"}`)
	wantStatus(t, r, http.StatusOK)
	if m := r.json(t); m["total"] != 1.0 || m["passed"] != 1.0 {
		t.Errorf("one test: %s", r.body)
	}
	// Errors: unknown test, unknown chain, bad body.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/tests/run", `{"name":"nope"}`)
	wantStatus(t, r, http.StatusNotFound)
	if r.errCode(t) != "test_not_found" {
		t.Errorf("code %s", r.errCode(t))
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/zzz/tests/run", nil), http.StatusNotFound)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/tests/run", `{"nam":"x"}`)
	wantStatus(t, r, http.StatusBadRequest)
	if !strings.Contains(string(r.body), `unknown field \"nam\"`) {
		t.Errorf("bad body: %s", r.body)
	}
	// A bad test is a validation issue of the chain, naming the test and field.
	r = do(t, ts, "POST", "/v1/validate", strings.Replace(waitedDoc, `"mocks":{"wait":{"n":9}}`, `"mocks":{"wiat":{"n":9}}`, 1))
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `tests[0] \"big\".mocks.wiat`) || !strings.Contains(string(r.body), "test_unknown_node") {
		t.Errorf("validate: %s", r.body)
	}
}

func TestAPISaveRunAsTest(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, waitedDoc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"ms":1,"n":7}}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	if run := waitRun(t, ts, runID); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/save-test", `{"name":"seven is big"}`)
	wantStatus(t, r, http.StatusCreated)
	m := r.json(t)
	if m["version"] != 2.0 || m["index"] != 2.0 || m["editor_url"] != "/chains/"+id+"?test=2" {
		t.Fatalf("saved %s", r.body)
	}
	test := m["test"].(map[string]any)
	mocks := test["mocks"].(map[string]any)
	as := test["assert"].(map[string]any)
	if len(mocks) != 1 || mocks["wait"].(map[string]any)["n"] != 7.0 || as["status"] != "completed" ||
		strings.Join(toStrings(as["not_ran"]), ",") != "small" || test["input"].(map[string]any)["n"] != 7.0 {
		t.Errorf("test %s", r.body)
	}
	// The new version holds it and it passes.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/tests/run", `{"name":"seven is big"}`)
	wantStatus(t, r, http.StatusOK)
	if rep := r.json(t); rep["passed"] != 1.0 || rep["version"] != 2.0 {
		t.Errorf("saved test does not pass: %s", r.body)
	}
	// The same name again is a conflict; an unknown run is a 404.
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/save-test", `{"name":"seven is big"}`)
	wantStatus(t, r, http.StatusConflict)
	if r.errCode(t) != "test_name_taken" {
		t.Errorf("code %s", r.errCode(t))
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/nope/save-test", nil), http.StatusNotFound)
	// No name: one is made from the run id.
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/save-test", nil)
	wantStatus(t, r, http.StatusCreated)
	if name := r.json(t)["test"].(map[string]any)["name"]; name != "run "+runID[:8] {
		t.Errorf("default name %v", name)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// A broken test case is the chain's validation issue (the editor and
// `studio test` show it), but it does not stop the chain itself from running.
func TestBrokenTestDoesNotBlockRuns(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	broken := strings.Replace(waitedDoc, `"mocks":{"wait":{"n":9}}`, `"mocks":{"wiat":{"n":9}}`, 1)
	r := do(t, ts, "POST", "/v1/chains", broken)
	wantStatus(t, r, http.StatusCreated)
	m := r.json(t)
	if m["valid"] != false {
		t.Fatalf("a chain with a broken test reads as valid: %s", r.body)
	}
	id := m["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"ms":1,"n":7}}`)
	wantStatus(t, r, http.StatusAccepted)
	if run := waitRun(t, ts, r.json(t)["run_id"].(string)); run["status"] != "completed" {
		t.Fatalf("run %v", run)
	}
	// A rule of the chain itself still blocks.
	r = do(t, ts, "POST", "/v1/chains", strings.Replace(strings.Replace(waitedDoc, `"name":"waited"`, `"name":"bad"`, 1), `"target":"small","default":true`, `"target":"nowhere","default":true`, 1))
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{"input":{"ms":1,"n":7},"version":"draft"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
}
