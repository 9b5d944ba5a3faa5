package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/web/ops"
)

const pinnedChainDoc = `{"name":"%s","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"b","kind":"tool","name":"echo","input_map":{"y":"a.output.x"}},
	{"node_id":"c","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`

// Running a node alone through the API: from a named run, from the latest
// run by default, from pinned outputs; the run is of kind node, its parent
// the source run, and nothing else ran.
func TestRunNodeAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "pin-api"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":5}}`)
	first := r.json(t)["run_id"].(string)
	waitRun(t, ts, first)

	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/b/run", map[string]any{"from_run": first})
	wantStatus(t, r, 202)
	nodeRun := r.json(t)["run_id"].(string)
	if r.header.Get("Location") != "/v1/runs/"+nodeRun {
		t.Errorf("Location = %q", r.header.Get("Location"))
	}
	m := waitRun(t, ts, nodeRun)
	if m["kind"] != "node" || m["parent_run_id"] != first || m["status"] != "completed" || m["nodes_run"].(float64) != 1 {
		t.Fatalf("node run = %v", m)
	}
	if got := fmt.Sprint(m["final_output"]); got != "map[y:5]" {
		t.Errorf("final output = %s", got)
	}
	nodes := map[string]any{}
	for _, n := range m["nodes"].([]any) {
		nm := n.(map[string]any)
		nodes[nm["node_id"].(string)] = nm
	}
	if a, ok := nodes["a"].(map[string]any); !ok || a["reused"] != true {
		t.Errorf("a = %v; want pinned (reused)", nodes["a"])
	}
	if _, ok := nodes["c"]; ok {
		t.Errorf("c ran or was recorded in a node run: %v", nodes["c"])
	}

	// No source named: the chain's latest run that has a's output.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/b/run", `{}`)
	wantStatus(t, r, 202)
	if got := r.json(t); got["from_run"] != nodeRun || got["source"] != "latest" {
		// the node run itself is the latest and it has a's output too
		t.Errorf("default source = %v", got)
	}
	waitRun(t, ts, r.json(t)["run_id"].(string))

	// Pinned outputs, input and state.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/b/run", map[string]any{"pinned": map[string]any{"a": map[string]any{"x": "pinned"}}})
	wantStatus(t, r, 202)
	m = waitRun(t, ts, r.json(t)["run_id"].(string))
	if got := fmt.Sprint(m["final_output"]); got != "map[y:pinned]" || m["parent_run_id"] != nil {
		t.Errorf("pinned run = %v", m)
	}
	// A version that exists runs that version.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/a/run", map[string]any{"version": 1, "input": map[string]any{"x": 1}})
	wantStatus(t, r, 202)
	if r.json(t)["chain_version"].(float64) != 1 {
		t.Errorf("version: %s", r.body)
	}
	waitRun(t, ts, r.json(t)["run_id"].(string))
}

// Every refusal of a node run names what is wrong, with the right status.
func TestRunNodeAPIErrors(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "pin-err"))
	other := createChain(t, ts, fmt.Sprintf(linearDoc, "pin-other"))
	r := do(t, ts, "POST", "/v1/chains/"+other+"/runs", `{"input":{"x":1}}`)
	otherRun := r.json(t)["run_id"].(string)
	waitRun(t, ts, otherRun)

	cases := []struct {
		name, path, body string
		status           int
		code, msg        string
	}{
		{"no run has the upstream", "/nodes/b/run", `{}`, 422, "node_run_missing_upstream", `node "b" needs the output of "a": none of the chain's last 10 runs, nor of the last 10 that reached "b", has it`},
		{"pinned lacks it", "/nodes/b/run", `{"pinned":{"c":1}}`, 422, "node_run_missing_upstream", `node "b" needs the output of "a": the pinned outputs have none`},
		{"pinned unknown node", "/nodes/b/run", `{"pinned":{"zz":1}}`, 422, "node_run_unknown_pinned", `pinned.zz: node "zz" is not in the chain`},
		{"run of another chain", "/nodes/b/run", `{"from_run":"` + otherRun + `"}`, 422, "wrong_run", "is not a run of chain"},
		{"unknown source run", "/nodes/b/run", `{"from_run":"nope"}`, 404, "not_found", `run "nope" not found`},
		{"unknown node", "/nodes/zz/run", `{}`, 404, "not_found", `node "zz" is not in version 1 of chain`},
		{"unknown version", "/nodes/b/run", `{"version":9}`, 404, "not_found", "version 9"},
		{"bad version", "/nodes/b/run", `{"version":-1}`, 400, "bad_parameter", "version must be a positive integer"},
		{"bad body", "/nodes/b/run", `{"from_run":1}`, 400, "bad_json", "from_run"},
		{"unknown field", "/nodes/b/run", `{"mocks":{}}`, 400, "bad_json", `unknown field "mocks"`},
		{"blank state key", "/nodes/a/run", `{"state":{" ":1}}`, 422, "bad_state_patch", "state"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, ts, "POST", "/v1/chains/"+id+tc.path, tc.body)
			wantStatus(t, r, tc.status)
			msg, _ := r.json(t)["error"].(map[string]any)["message"].(string)
			if r.errCode(t) != tc.code || !strings.Contains(msg, tc.msg) {
				t.Errorf("got %s; want %s containing %q", r.body, tc.code, tc.msg)
			}
		})
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/nodes/b/run", `{}`), 404)
	// A named run that lacks the output: both are named.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`)
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/b/run", map[string]any{"pinned": map[string]any{"c": 1}, "from_run": run})
	wantStatus(t, r, 202) // the run has a's output; pinned c is extra
	waitRun(t, ts, r.json(t)["run_id"].(string))
}

// A re-run chooses its version: the run's own (default) or the current
// one, where only unchanged upstream nodes are reused.
func TestRerunVersionAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "rerun-ver"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":3}}`)
	first := r.json(t)["run_id"].(string)
	waitRun(t, ts, first)
	// v2: b reads a differently; a is unchanged.
	v2 := strings.Replace(fmt.Sprintf(pinnedChainDoc, "rerun-ver"), `{"y":"a.output.x"}`, `{"z":"a.output.x"}`, 1)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `"v1"`), 200)

	r = do(t, ts, "POST", "/v1/runs/"+first+"/rerun", `{"from_node":"c","version":"current"}`)
	wantStatus(t, r, 202)
	if r.json(t)["chain_version"].(float64) != 2 {
		t.Errorf("chain_version: %s", r.body)
	}
	m := waitRun(t, ts, r.json(t)["run_id"].(string))
	reused := map[string]bool{}
	for _, n := range m["nodes"].([]any) {
		nm := n.(map[string]any)
		reused[nm["node_id"].(string)] = nm["reused"] == true
	}
	if !reused["a"] || reused["b"] || reused["c"] {
		t.Errorf("current version: reused = %v; want a only", reused)
	}
	if fmt.Sprint(m["final_output"]) != "map[z:3]" || m["chain_version"].(float64) != 2 {
		t.Errorf("current version run = %v", m)
	}
	// The run's own version: b is kept.
	r = do(t, ts, "POST", "/v1/runs/"+first+"/rerun", `{"from_node":"c","version":"run"}`)
	wantStatus(t, r, 202)
	m = waitRun(t, ts, r.json(t)["run_id"].(string))
	if fmt.Sprint(m["final_output"]) != "map[y:3]" || m["chain_version"].(float64) != 1 {
		t.Errorf("own version run = %v", m)
	}
	r = do(t, ts, "POST", "/v1/runs/"+first+"/rerun", `{"from_node":"c","version":1}`)
	wantStatus(t, r, 202)
	waitRun(t, ts, r.json(t)["run_id"].(string))

	for _, tc := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"from_node":"c","version":7}`, 404, "not_found"},
		{`{"from_node":"c","version":"latest"}`, 400, "bad_parameter"},
		{`{"from_node":"c","version":true}`, 400, "bad_json"},
		{`{"from_node":"gone","version":"current"}`, 422, "unknown_node"},
	} {
		r := do(t, ts, "POST", "/v1/runs/"+first+"/rerun", tc.body)
		wantStatus(t, r, tc.status)
		if r.errCode(t) != tc.code {
			t.Errorf("%s: %s", tc.body, r.body)
		}
	}
}

// The editor's dialog lists the chain's latest runs as sources: the latest
// that has the node's upstream chosen, the others saying what they lack;
// a node that runs only inside another is refused with the reason.
func TestRunNodeDialogPage(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	doc := `{"name":"pin-page","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"b","kind":"tool","name":"echo"},
	{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	{"node_id":"body","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"b"}]}`
	id := createChain(t, ts, doc)
	_, html := pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/b/runnode", "", "")
	if !strings.Contains(html, `id="runnode-none"`) || !strings.Contains(html, `disabled`) {
		t.Errorf("no runs yet: the dialog must say so and not offer to run:\n%s", html)
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1,"xs":[1]}}`)
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	_, html = pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/b/runnode", "", "")
	if !strings.Contains(html, `value="`+run+`" checked`) || strings.Contains(html, `id="runnode-none"`) {
		t.Errorf("the run with a's output is not the default:\n%s", html)
	}
	_, html = pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/a/runnode", "", "")
	if !strings.Contains(html, `value=""`) {
		t.Errorf("a root may run without an earlier run:\n%s", html)
	}
	_, html = pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/body/runnode", "", "")
	if !strings.Contains(html, "Cannot run this node alone") || !strings.Contains(html, `runs inside &#34;m&#34;`) {
		t.Errorf("a map body must be refused with its owner named:\n%s", html)
	}
}

// When none of the chain's latest runs has what a node needs, the dialog
// (and the API's default source) goes on to the older runs that reached
// the node, found by the store, instead of saying "run the whole chain".
func TestRunNodeSearchesOlderRunsThatReachedTheNode(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"pin-older","nodes":[
	{"node_id":"gate","kind":"branch","condition":"input.go","true_node":"a","false_node":"stop"},
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"b","kind":"tool","name":"echo"},
	{"node_id":"stop","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"b"}]}`)
	start := func(input string) string {
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":`+input+`}`)
		wantStatus(t, r, 202)
		run := r.json(t)["run_id"].(string)
		waitRun(t, ts, run)
		return run
	}
	old := start(`{"go":true,"x":7}`)
	for i := 0; i < ops.SourceRunsChecked+1; i++ {
		start(`{"go":false}`) // a and b skipped: no output of a
	}
	_, html := pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/b/runnode", "", "")
	if !strings.Contains(html, `value="`+old+`" checked`) || strings.Contains(html, `id="runnode-none"`) || !strings.Contains(html, `id="runnode-searched"`) {
		t.Fatalf("the older run that reached b is not offered and chosen:\n%s", html)
	}
	if n := strings.Count(html, `name="from_run"`); n != ops.SourceRunsChecked+1 {
		t.Errorf("the latest %d runs and the one found: %d choices", ops.SourceRunsChecked, n)
	}
	if strings.Contains(html, `id="runnode-more"`) {
		t.Errorf("no older run reached b: nothing more to search:\n%s", html)
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/nodes/b/run", `{}`)
	wantStatus(t, r, 202)
	if m := r.json(t); m["from_run"] != old || m["source"] != "latest" {
		t.Fatalf("the API's default source: %v", m)
	}
	if res, _ := pageDo(t, ts.URL, "GET", "/chains/"+id+"/nodes/b/runnode?before=!!", "", ""); res.StatusCode != 400 {
		t.Errorf("a bad cursor: %d", res.StatusCode)
	}
}
