package web

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// viewRun is the run a node view fragment shows (its data-run-id).
func viewRun(t *testing.T, body []byte) string {
	t.Helper()
	m := regexp.MustCompile(`class="nv-data" data-run-id="([^"]*)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no node view data in %.400s", body)
	}
	return string(m[1])
}

// The node view's data: what a node received in a run (a root the run's
// input, a node its upstream node's output), what it did there, the run's
// input on demand, the run picker; the latest run where the node ran itself
// is the default, not one where it was only pinned.
func TestNodeViewFragment(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "nodeview"))
	view := func(node, q string) resp {
		t.Helper()
		r := do(t, ts, "GET", "/chains/"+id+"/nodes/"+node+"/view"+q, nil)
		wantStatus(t, r, http.StatusOK)
		return r
	}

	// never run: it says so
	if r := view("b", ""); !strings.Contains(string(r.body), "has not run yet") || viewRun(t, r.body) != "" {
		t.Errorf("no run yet: %.600s", r.body)
	}

	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":5,"who":"Ada"}}`)
	first := r.json(t)["run_id"].(string)
	waitRun(t, ts, first)

	b := string(view("b", "").body)
	for _, want := range []string{
		`data-run-id="` + first + `"`, `data-from="[&#34;a&#34;]"`, "the output of a, read as <code>output</code>",
		`data-part="received" data-prefix="output"`, `data-segs="[&#34;x&#34;]"`, // a's output {x: 5}
		`id="nv-output-table"`, `>y</button>`, // b's output {y: 5}
		"What its tool got", `data-part="input"`, // b has an input map; the run's input on demand
		`id="nv-pin" data-run-id="` + first + `" data-node-id="b"`, // b ran: its output can be pinned
	} {
		if !strings.Contains(b, want) {
			t.Errorf("b's view lacks %s:\n%.3000s", want, b)
		}
	}
	a := string(view("a", "").body)
	if !strings.Contains(a, "the run&#39;s input, read as <code>input</code>") || !strings.Contains(a, `data-segs="[&#34;who&#34;]"`) || strings.Contains(a, `id="nv-more-input"`) {
		t.Errorf("a root receives the run's input:\n%.3000s", a)
	}
	if in := string(view("b", "?part=input&run="+first).body); !strings.Contains(in, `data-part="input" data-prefix="input"`) || !strings.Contains(in, "&#34;Ada&#34;") || strings.Contains(in, "nv-data") {
		t.Errorf("the run's input alone: %.1500s", in)
	}

	// c run alone from the first run pins b there: b's view stays on the
	// run where b itself ran, and shows the node run when asked for it
	r = do(t, ts, "POST", "/v1/chains/"+id+"/nodes/c/run", map[string]any{"from_run": first})
	wantStatus(t, r, http.StatusAccepted)
	nodeRun := r.json(t)["run_id"].(string)
	waitRun(t, ts, nodeRun)
	if got := viewRun(t, view("b", "").body); got != first {
		t.Errorf("b's default run = %s, want %s where b ran (not the node run of c %s)", got, first, nodeRun)
	}
	if p := string(view("b", "?run="+nodeRun).body); !strings.Contains(p, "kept from an earlier run") || strings.Contains(p, `id="nv-pin"`) {
		t.Errorf("b in c's node run is kept from the first, and not offered to pin: %.2000s", p)
	}
	if got := viewRun(t, view("c", "").body); got != nodeRun {
		t.Errorf("c's default run = %s, want its node run %s", got, nodeRun)
	}

	// the picker: the runs "Run this node" offers, the shown one chosen
	p := string(do(t, ts, "GET", "/chains/"+id+"/nodes/b/view/runs?run="+first, nil).body)
	if !strings.Contains(p, `<select id="nv-run"`) || !strings.Contains(p, `value="`+first+`" selected`) {
		t.Errorf("picker: %s", p)
	}

	// refusals name what is wrong
	other := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "nodeview-other"))
	for _, c := range []struct {
		path   string
		status int
		says   string
	}{
		{"/chains/" + id + "/nodes/zz/view", 404, `node &#34;zz&#34; is not in the saved chain`},
		{"/chains/" + id + "/nodes/b/view?run=nope", 404, "nope"},
		{"/chains/" + other + "/nodes/b/view?run=" + first, 422, "is not a run of chain"},
		{"/chains/" + id + "/nodes/b/view?all=everything", 400, "all must be received, input, node_input or output"},
		{"/chains/" + id + "/nodes/b/view?part=other", 400, "part must be input"},
		{"/chains/" + id + "/nodes/zz/view/runs", 404, `zz`},
		{"/chains/nochain/nodes/b/view", 404, ""},
	} {
		r := do(t, ts, "GET", c.path, nil)
		if r.status != c.status || !strings.Contains(string(r.body), c.says) {
			t.Errorf("GET %s = %d %.300s; want %d saying %q", c.path, r.status, r.body, c.status, c.says)
		}
	}
}

// A node with several upstream nodes receives the outputs of those whose
// edges into it fired in the run (a branch's other way does not count), as
// the node run gives them.
func TestNodeViewSeveralUpstream(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"nodeview-join","nodes":[
		{"node_id":"r","kind":"branch","condition":"input.go"},
		{"node_id":"t","kind":"tool","name":"echo","input":{"way":"yes"}},
		{"node_id":"f","kind":"tool","name":"echo","input":{"way":"no"}},
		{"node_id":"j","kind":"tool","name":"echo"},
		{"node_id":"s","kind":"tool","name":"echo","input":{"side":1}},
		{"node_id":"m","kind":"tool","name":"echo"}],
		"edges":[{"source":"r","target":"t","label":"true"},{"source":"r","target":"f","label":"false"},
		{"source":"t","target":"j"},{"source":"f","target":"j"},
		{"source":"t","target":"m"},{"source":"s","target":"m"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"go":true}}`)
	run := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, run); m["status"] != "completed" {
		t.Fatalf("run: %v", m)
	}
	j := string(do(t, ts, "GET", "/chains/"+id+"/nodes/j/view?run="+run, nil).body)
	if !strings.Contains(j, `data-from="[&#34;t&#34;]"`) || !strings.Contains(j, `&#34;yes&#34;`) {
		t.Errorf("j received t's output only:\n%.2000s", j)
	}
	m := string(do(t, ts, "GET", "/chains/"+id+"/nodes/m/view?run="+run, nil).body)
	if !strings.Contains(m, `data-from="[&#34;s&#34;,&#34;t&#34;]"`) || !strings.Contains(m, "by node id") || !strings.Contains(m, `data-segs="[&#34;s&#34;]"`) {
		t.Errorf("m received s's and t's outputs, keyed:\n%.2000s", m)
	}
}

// A large value is shown as a preview, cut at a line, with "Show all";
// all= shows it whole.
func TestNodeViewPreview(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(pinnedChainDoc, "nodeview-big"))
	items := make([]string, 3000)
	for i := range items {
		items[i] = fmt.Sprintf("item %d of a long list", i)
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": map[string]any{"x": items}})
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	cut := do(t, ts, "GET", "/chains/"+id+"/nodes/b/view?run="+run, nil)
	if !strings.Contains(string(cut.body), `class="linklike nv-show-all" data-part="received"`) || strings.Contains(string(cut.body), "item 2999 of") {
		t.Errorf("not a preview: %d bytes", len(cut.body))
	}
	if !strings.Contains(string(cut.body), "list (3000 items)") {
		t.Errorf("the table names the list's length")
	}
	all := do(t, ts, "GET", "/chains/"+id+"/nodes/b/view?all=received&run="+run, nil)
	if !strings.Contains(string(all.body), "item 2999 of") || strings.Contains(string(all.body), `nv-show-all" data-part="received"`) {
		t.Errorf("all=received is not whole")
	}
}

// BenchmarkNodeView1MB: the node view's data (GET
// /chains/{id}/nodes/{node}/view) for a node whose input, its upstream
// node's output, is about 1.1 MB: what the server spends before the view
// can show it (the browser's part is logged by e2e/nodeview.test.mjs).
//
//	go test ./web -run '^$' -bench NodeView1MB -benchtime 50x
func BenchmarkNodeView1MB(b *testing.B) {
	_, ts := newTestServer(b)
	id := createChain(b, ts, fmt.Sprintf(pinnedChainDoc, "nodeview-1mb"))
	rows := make([]map[string]any, 9000)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "name": fmt.Sprintf("row %d", i), "text": strings.Repeat("x", 80)}
	}
	r := do(b, ts, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": map[string]any{"x": rows}})
	wantStatus(b, r, http.StatusAccepted)
	waitRun(b, ts, r.json(b)["run_id"].(string))
	size := 0
	b.ResetTimer()
	for range b.N {
		r := do(b, ts, "GET", "/chains/"+id+"/nodes/b/view", nil)
		wantStatus(b, r, http.StatusOK)
		size = len(r.body)
	}
	b.ReportMetric(float64(size), "bytes/view")
}
