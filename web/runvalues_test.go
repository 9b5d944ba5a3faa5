package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A run's answer names an output over 64 KiB by its size and a link that
// streams it, instead of carrying it; small outputs stay inline.
func TestRunAnswerElidesLargeOutputs(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"big outputs","nodes":[
		{"node_id":"m","kind":"map","items_path":"input.items","map_node":"big"},
		{"node_id":"big","kind":"tool","name":"template","input":{"template":"{{printf \"%100000d\" 1}}"}},
		{"node_id":"small","kind":"tool","name":"echo","input":{"x":1}}],
		"edges":[{"source":"m","target":"small"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"items":[1,2,3]}}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	run := waitRun(t, ts, runID)
	if run["status"] != "completed" {
		t.Fatalf("run %v: %v", run["status"], run["error"])
	}
	href := "/v1/runs/" + runID + "/nodes/m/output"
	wantElided := func(where string, v any) {
		t.Helper()
		e, ok := v.(map[string]any)
		if !ok || e["elided"] != true || e["href"] != href {
			t.Fatalf("%s: %.200v, want the elided stand-in with href %s", where, v, href)
		}
		if n := e["bytes"].(float64); n < 3*100_000 || n > 3*100_000+200 {
			t.Errorf("%s: bytes %v, want about 300,000", where, n)
		}
	}
	wantElided("outputs.m", run["outputs"].(map[string]any)["m"])
	if f, _ := run["final_output"].(map[string]any); f["x"] != float64(1) {
		t.Errorf("final_output %.200v, want the small one inline", run["final_output"])
	}
	for _, n := range run["nodes"].([]any) {
		switch n := n.(map[string]any); n["node_id"] {
		case "m":
			wantElided("nodes[m].output", n["output"])
		case "small":
			if out, _ := n["output"].(map[string]any); out["x"] != float64(1) {
				t.Errorf("nodes[small].output = %v, want the small output inline", n["output"])
			}
		}
	}
	// The link streams the whole output.
	res, err := http.Get(ts.URL + href)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %d %s", href, res.StatusCode, res.Header.Get("Content-Type"))
	}
	item := `{"text":"` + strings.Repeat(" ", 99_999) + `1"}`
	if want := "[" + item + "," + item + "," + item + "]"; string(body) != want {
		t.Errorf("GET %s: %d bytes, want the 3 items (%d bytes): %.60q…%.60q", href, len(body), len(want), body, body[len(body)-60:])
	}
	// A node without such a value is a 404 that names it.
	r = do(t, ts, "GET", "/v1/runs/"+runID+"/nodes/nope/output", nil)
	wantStatus(t, r, http.StatusNotFound)
	if d := r.errDetails(t); d["node_id"] != "nope" {
		t.Errorf("details %v, want node_id nope", d)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/runs/nope/nodes/m/output", nil), http.StatusNotFound)
	// The run page and the node's drawer show its size and the link.
	wantPage(t, ts, "/runs/"+runID+"/nodes/m", href)

	// A large final output: the same in the answer, on the page, and its link.
	id = createChain(t, ts, `{"name":"big final","nodes":[
		{"node_id":"m","kind":"map","items_path":"input.items","map_node":"big"},
		{"node_id":"big","kind":"tool","name":"template","input":{"template":"{{printf \"%100000d\" 1}}"}}]}`)
	runID = startAndWait(t, ts, id, `{"items":[1,2,3]}`)
	run = do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)
	final := "/v1/runs/" + runID + "/final-output"
	if f, _ := run["final_output"].(map[string]any); f["elided"] != true || f["href"] != final {
		t.Errorf("final_output %.200v, want elided with href %s", run["final_output"], final)
	}
	wantPage(t, ts, "/runs/"+runID, final)
	if r := do(t, ts, "GET", final, nil); r.status != 200 || len(r.body) != 300_037 {
		t.Errorf("GET %s: %d, %d bytes, want the 300,037 bytes of the output", final, r.status, len(r.body))
	}
}

// wantPage checks that a page names a large value by its size and link
// instead of showing it.
func wantPage(t *testing.T, ts *httptest.Server, page, href string) {
	t.Helper()
	r := do(t, ts, "GET", page, nil)
	wantStatus(t, r, http.StatusOK)
	if strings.Contains(string(r.body), strings.Repeat(" ", 99_999)) {
		t.Errorf("%s carries the 300 KB output", page)
	}
	if !strings.Contains(string(r.body), "300 KB of JSON, too large to show here") || !strings.Contains(string(r.body), `href="`+href+`"`) {
		t.Errorf("%s does not say the output is too large to show, with a link to %s", page, href)
	}
}
