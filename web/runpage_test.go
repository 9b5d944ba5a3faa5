package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

const stateDoc = `{"name":"%s","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","label":"Load","input":{"v":1},"set_state":{"x":"output.v"}},
	{"node_id":"b","kind":"tool","name":"echo","input_map":{"x":"state.x"}},
	{"node_id":"c","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`

// A re-run takes a state patch and records which nodes it reused: on the
// run's node results and on its events.
func TestRerunModifiedStateMarksReused(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(stateDoc, "st"))
	runID := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`).json(t)["run_id"].(string)
	waitRun(t, ts, runID)

	r := do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", `{"from_node":"b","modified_state":{"x":42}}`)
	wantStatus(t, r, http.StatusAccepted)
	newID := r.json(t)["run_id"].(string)
	m := waitRun(t, ts, newID)
	if js, _ := json.Marshal(m["final_output"]); string(js) != `{"x":42}` {
		t.Fatalf("final output %s: the patch did not reach b", js)
	}
	reused := map[string]bool{}
	for _, n := range m["nodes"].([]any) {
		n := n.(map[string]any)
		reused[n["node_id"].(string)] = n["reused"] == true
	}
	if !reused["a"] || reused["b"] || reused["c"] {
		t.Fatalf("reused per node = %v; want a only", reused)
	}
	body := string(do(t, ts, "GET", "/v1/runs/"+newID+"/events", nil, "Accept", "text/event-stream").body)
	evReused := map[string]int{}
	for _, line := range strings.Split(body, "\n") {
		var ev engine.Event
		if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Phase != "" && ev.Reused {
			evReused[ev.NodeID]++
		}
	}
	if evReused["a"] != 2 || len(evReused) != 1 {
		t.Fatalf("events marked reused by node = %v; want a's start and done only:\n%s", evReused, body)
	}

	for _, tc := range []struct {
		body   string
		status int
		path   string
	}{
		{`{"from_node":"b","modified_state":[1]}`, 400, "modified_state"},
		{`{"from_node":"b","modified_state":"x"}`, 400, "modified_state"},
		{`{"from_node":"b","modified_state":{" ":1}}`, 422, "modified_state"},
		{`{"from_node":"b","input":[1]}`, 400, "input"},
	} {
		r := do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", tc.body)
		wantStatus(t, r, tc.status)
		if p := r.errDetails(t)["path"]; p != tc.path {
			t.Errorf("%s: error path %v, want %s (%s)", tc.body, p, tc.path, r.body)
		}
	}
}

// The page form re-runs with the edited input and state patch, and refuses
// what is not a JSON object, naming the field.
func TestPageRerunForm(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(stateDoc, "pf"))
	runID := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`).json(t)["run_id"].(string)
	waitRun(t, ts, runID)
	form := url.Values{"node": {"b"}, "input": {`{"k":1}`}, "modified_state": {`{"x":7}`}}
	res, _ := pageDo(t, ts.URL, "POST", "/runs/"+runID+"/rerun", "application/x-www-form-urlencoded", form.Encode())
	to := res.Header.Get("HX-Redirect")
	if !strings.HasPrefix(to, "/runs/") {
		t.Fatalf("no redirect to the new run: %d", res.StatusCode)
	}
	m := waitRun(t, ts, strings.TrimPrefix(to, "/runs/"))
	if js, _ := json.Marshal(m["final_output"]); string(js) != `{"x":7}` {
		t.Fatalf("final output %s", js)
	}
	if js, _ := json.Marshal(m["input"]); string(js) != `{"k":1}` {
		t.Fatalf("input %s", js)
	}
	form.Set("modified_state", `[1]`)
	_, html := pageDo(t, ts.URL, "POST", "/runs/"+runID+"/rerun", "application/x-www-form-urlencoded", form.Encode())
	if !strings.Contains(html, "modified_state") || !strings.Contains(html, "not a JSON object") {
		t.Fatalf("bad patch not named: %s", html)
	}
}

// A node run inside another (a parallel branch) that failed shows its
// error in the drawer, not "Not reached".
func TestPageDrawerNestedFailedNode(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"par","nodes":[
	{"node_id":"fan","kind":"parallel","branches":["ok","broken"],"parallel_failure_mode":"any_success"},
	{"node_id":"ok","kind":"tool","name":"echo"},
	{"node_id":"broken","kind":"tool","name":"fail","input":{"message":"this source is down"}}]}`)
	runID := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`).json(t)["run_id"].(string)
	waitRun(t, ts, runID)
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+runID+"/nodes/broken", "", "")
	if strings.Contains(html, "Not reached") || !strings.Contains(html, "this source is down") || !strings.Contains(html, "ph-error") {
		t.Fatalf("drawer of the failed branch: %s", html)
	}
	// a branch runs only with its parallel node: the re-run is offered there
	if strings.Contains(html, `id="btn-rerun"`) || !strings.Contains(html, `id="rerun-owner"`) || !strings.Contains(html, `data-node-id="fan"`) {
		t.Fatalf("a branch offers a re-run of its own: %s", html)
	}
}

// A parallel node that collected a failing branch (continue, the default)
// shows done with its output, the {"error": …} entry in place, and says in
// its drawer that a branch failed and was handled.
func TestPageDrawerCollectedFailure(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"par","nodes":[
	{"node_id":"fan","kind":"parallel","branches":["ok","broken"]},
	{"node_id":"ok","kind":"tool","name":"echo","input":{"v":"good"}},
	{"node_id":"broken","kind":"tool","name":"fail","input":{"message":"this source is down"}}]}`)
	runID := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`).json(t)["run_id"].(string)
	if r := waitRun(t, ts, runID); r["status"] != "partial" {
		t.Fatalf("run: %v", r)
	}
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+runID+"/nodes/fan", "", "")
	if !strings.Contains(html, "ph-done") || !strings.Contains(html, `id="drawer-partial"`) || !strings.Contains(html, "this source is down") ||
		strings.Contains(html, `id="drawer-error"`) {
		t.Fatalf("drawer of the parallel node: %s", html)
	}
}

// Labels are what people read; the id is beside them.
func TestPageRunLabels(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(stateDoc, "lb"))
	runID := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`).json(t)["run_id"].(string)
	waitRun(t, ts, runID)
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+runID, "", "")
	if !strings.Contains(html, `<span class="node-label">Load</span> <code class="node-id">a</code>`) {
		t.Fatalf("timeline lacks the label beside the id")
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs/"+runID+"/nodes/a", "", "")
	if !strings.Contains(html, `<span class="node-label">Load</span> <code class="node-id">a</code>`) {
		t.Fatalf("drawer lacks the label beside the id: %s", html)
	}
}

// An agent's run page is titled with the agent's name and links back to it.
func TestPageAgentRunTitle(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	if _, err := srv.DB.CreateRun(ctx, store.Run{ID: "ag1", ChainName: "__chain__sales-qualifier", Kind: "agent", Status: chain.StatusCompleted, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, html := pageDo(t, ts.URL, "GET", "/runs/ag1", "", "")
	if !strings.Contains(html, "<title>Run of agent sales-qualifier · Chain Studio</title>") || !strings.Contains(html, `href="/agents/sales-qualifier"`) || strings.Contains(html, "__chain__") {
		t.Fatalf("agent run page: %s", html)
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs", "", "")
	if !strings.Contains(html, `href="/agents/sales-qualifier"`) || strings.Contains(html, "__chain__") {
		t.Fatalf("runs list shows the compiled chain's name: %s", html)
	}
}

// GET /v1/runs filters by status and chain, pages both ways, and names a bad
// parameter.
func TestListRunsFiltersAndPages(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	a := createChain(t, ts, fmt.Sprintf(linearDoc, "a"))
	b := createChain(t, ts, fmt.Sprintf(linearDoc, "b"))
	t0 := time.Now().Add(-time.Hour)
	for i := 0; i < 6; i++ {
		ch, st := a, chain.StatusCompleted
		if i%2 == 1 {
			ch, st = b, chain.StatusFailed
		}
		if _, err := srv.DB.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), ChainID: ch, ChainVersion: 1, ChainName: "x", Status: st, Started: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(m map[string]any) string {
		var s []string
		for _, r := range m["runs"].([]any) {
			s = append(s, r.(map[string]any)["id"].(string))
		}
		return strings.Join(s, " ")
	}
	m := do(t, ts, "GET", "/v1/runs?status=failed&limit=2", nil).json(t)
	if ids(m) != "r5 r3" || m["next_url"] == nil || m["prev"] != "" {
		t.Fatalf("failed page 1: %v", m)
	}
	m2 := do(t, ts, "GET", m["next_url"].(string), nil).json(t)
	if ids(m2) != "r1" || m2["prev_url"] == nil {
		t.Fatalf("failed page 2: %v", m2)
	}
	if back := do(t, ts, "GET", m2["prev_url"].(string), nil).json(t); ids(back) != "r5 r3" {
		t.Fatalf("newer than page 2: %v", back)
	}
	if m := do(t, ts, "GET", "/v1/runs?chain="+a, nil).json(t); ids(m) != "r4 r2 r0" {
		t.Fatalf("chain a: %v", ids(m))
	}
	for _, q := range []string{"status=done", "limit=101", "before=x&after=y", "after=!!"} {
		r := do(t, ts, "GET", "/v1/runs?"+q, nil)
		wantStatus(t, r, 400)
		p, _ := r.errDetails(t)["parameter"].(string)
		if p == "" || !strings.Contains(q, p) {
			t.Errorf("%s: parameter %q (%s)", q, p, r.body)
		}
	}
	// the page takes the same filters
	_, html := pageDo(t, ts.URL, "GET", "/runs?status=failed&chain="+b, "", "")
	if strings.Count(html, `data-status="failed"`) != 3 || strings.Contains(html, `data-status="completed"`) {
		t.Fatalf("runs page filter: %s", html)
	}
}

// The properties panel says what the selected node will receive.
func TestPagePropsReceives(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	body := `{"node":{"node_id":"send","kind":"tool","name":"echo","input":{"to":"x"}},"node_ids":["shape","send"],
	 "doc":{"name":"x","nodes":[{"node_id":"shape","kind":"tool"}],"edges":[{"source":"shape","target":"send"}]}}`
	_, html := pageDo(t, ts.URL, "POST", "/fragments/props", "application/json", body)
	if !strings.Contains(html, `id="receives"`) || !strings.Contains(html, "is not passed because a static input is set") {
		t.Fatalf("props: %s", html)
	}
}
