package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// The branch example's shape: fetch echoes the items, check routes on
// whether there are any, process or skip_log runs, report joins.
const diffBranchDoc = `{"name":"%s","nodes":[
	{"node_id":"fetch","kind":"tool","name":"echo","label":"Fetch items","input_map":{"items":"input.items"}},
	{"node_id":"check","kind":"branch","condition":"length(output.items) > ` + "`0`" + `","true_node":"process","false_node":"skip_log"},
	{"node_id":"process","kind":"tool","name":"transform","input":{"expression":"{count: length(items)}"},"input_map":{"data":"fetch.output"}},
	{"node_id":"skip_log","kind":"tool","name":"echo","input":{"message":"no items"}},
	{"node_id":"report","kind":"tool","name":"echo"}%s],
	"edges":[{"source":"fetch","target":"check"},{"source":"process","target":"report"},{"source":"skip_log","target":"report"}%s]}`

// startAndWait starts a run of chain id with input and waits for its end.
func startAndWait(t *testing.T, ts *httptest.Server, id, input string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":`+input+`}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "completed" {
		t.Fatalf("run %s: %v", runID, m)
	}
	return runID
}

func diffNode(t *testing.T, m map[string]any, id string) map[string]any {
	t.Helper()
	for _, n := range m["nodes"].([]any) {
		if n := n.(map[string]any); n["node_id"] == id {
			return n
		}
	}
	t.Fatalf("no node %s: %v", id, m["nodes"])
	return nil
}

func TestRunDiffAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(diffBranchDoc, "diffs", "", ""))
	a := startAndWait(t, ts, id, `{"items":[1,2]}`)
	b := startAndWait(t, ts, id, `{"items":[]}`)

	r := do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	if m["a"].(map[string]any)["run_id"] != a || m["b"].(map[string]any)["run_id"] != b || m["same_version"] != true || m["same"] != false {
		t.Fatalf("runs: %s", r.body)
	}
	div := m["divergence"].(map[string]any)
	if div["node_id"] != "fetch" || fmt.Sprint(div["what"]) != "[output]" {
		t.Fatalf("divergence %v", div)
	}
	check := diffNode(t, m, "check")
	route := check["route"].(map[string]any)
	if fmt.Sprint(route["out_a"]) != "[check->process]" || fmt.Sprint(route["out_b"]) != "[check->skip_log]" {
		t.Fatalf("check's route: %v", route)
	}
	process := diffNode(t, m, "process")
	if process["a"].(map[string]any)["status"] != "done" || process["b"].(map[string]any)["status"] != "skip" || process["b"].(map[string]any)["reason"] != "branch_not_taken" {
		t.Fatalf("process: %v", process)
	}
	if _, ok := process["a"].(map[string]any)["duration_ms"].(float64); !ok {
		t.Fatalf("a done node has a duration: %v", process)
	}
	fetch := diffNode(t, m, "fetch")
	paths := fetch["output"].(map[string]any)["paths"].([]any)
	if len(paths) != 2 || paths[0].(map[string]any)["path"] != "items[0]" || paths[0].(map[string]any)["op"] != "removed" {
		t.Fatalf("fetch's output diff: %v", fetch["output"])
	}
	if m["final_output"].(map[string]any)["changed"] != true || m["differing"].(float64) != 5 {
		t.Fatalf("final output and count: %s", r.body)
	}

	// A run compared with itself: nothing differs.
	r = do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+a, nil)
	wantStatus(t, r, http.StatusOK)
	if m := r.json(t); m["same"] != true || m["divergence"] != nil || m["differing"].(float64) != 0 {
		t.Fatalf("a run against itself: %s", r.body)
	}

	// Unknown runs: 404 naming the run, on either side.
	for _, p := range []string{"/v1/runs/nope/diff/" + b, "/v1/runs/" + a + "/diff/nope"} {
		r = do(t, ts, "GET", p, nil)
		wantStatus(t, r, http.StatusNotFound)
		if r.errCode(t) != "not_found" || !strings.Contains(string(r.body), `run \"nope\" not found`) {
			t.Fatalf("%s: %s", p, r.body)
		}
	}

	// Runs of another chain are refused, naming both.
	other := createChain(t, ts, fmt.Sprintf(linearDoc, "other"))
	o := startAndWait(t, ts, other, `{"x":1}`)
	r = do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+o, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "different_chains" || r.errDetails(t)["b"].(map[string]any)["chain_id"] != other ||
		!strings.Contains(string(r.body), `chain \"other\"`) {
		t.Fatalf("different chains: %s", r.body)
	}
}

// Runs of two versions compare: the nodes only one version has are added
// or removed, and the first divergence is where the new version's run
// first did something else.
func TestRunDiffAcrossVersions(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(diffBranchDoc, "versions", "", ""))
	a := startAndWait(t, ts, id, `{"items":[1]}`)
	// v2: an audit step after report, and skip_log removed.
	v2 := strings.Replace(fmt.Sprintf(diffBranchDoc, "versions", `,{"node_id":"audit","kind":"tool","name":"echo","input":{"audited":true}}`, `,{"source":"report","target":"audit"}`),
		`"false_node":"skip_log"`, `"false_node":"report"`, 1)
	v2 = strings.Replace(v2, `{"node_id":"skip_log","kind":"tool","name":"echo","input":{"message":"no items"}},`, "", 1)
	v2 = strings.Replace(v2, `,{"source":"skip_log","target":"report"}`, "", 1)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, v2, "If-Match", `"v1"`), http.StatusOK)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{}`), http.StatusOK) // runs by id run the published version
	b := startAndWait(t, ts, id, `{"items":[1]}`)

	r := do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	if m["same_version"] != false || fmt.Sprint(m["nodes_added"]) != "[audit]" || fmt.Sprint(m["nodes_removed"]) != "[skip_log]" {
		t.Fatalf("versions: %s", r.body)
	}
	if div := m["divergence"].(map[string]any); div["node_id"] != "report" || fmt.Sprint(div["what"]) != "[route]" {
		t.Fatalf("divergence %v: report fired to audit only in b", div)
	}
	audit := diffNode(t, m, "audit")
	if audit["change"] != "added" || audit["a"] != nil || audit["b"].(map[string]any)["status"] != "done" {
		t.Fatalf("audit: %v", audit)
	}
	if sk := diffNode(t, m, "skip_log"); sk["change"] != "removed" || sk["b"] != nil || sk["what"] != nil {
		t.Fatalf("skip_log was skipped in a, so removed but no divergence: %v", sk)
	}
	if rt := diffNode(t, m, "report")["route"].(map[string]any); fmt.Sprint(rt["out_a"]) != "[]" || fmt.Sprint(rt["out_b"]) != "[report->audit]" {
		t.Fatalf("report's route: %v", rt)
	}
}

func TestRunDiffPages(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(diffBranchDoc, "pages", "", ""))
	first := startAndWait(t, ts, id, `{"items":[1,2]}`)
	a := startAndWait(t, ts, id, `{"items":[1,2]}`)
	b := startAndWait(t, ts, id, `{"items":[]}`)
	last := startAndWait(t, ts, id, `{"items":[3]}`)

	r := do(t, ts, "GET", "/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	page := string(r.body)
	for _, want := range []string{`data-divergence="fetch"`, `id="divergence-link"`, "Fetch items", "first divergence", "Nodes that differ (5)",
		`<code>items[0]</code>`, "branch_not_taken", `href="/runs/` + b + `/diff/` + a + `"`, "Both ran the same chain version."} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	wantStatus(t, do(t, ts, "GET", "/runs/nope/diff/"+b, nil), http.StatusNotFound)

	// The page's canvas draws from /v1: the comparison, with the edges each
	// run fired, and the runs' chain version.
	r = do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	d := r.json(t)
	firedA, firedB := fmt.Sprint(d["fired_a"]), fmt.Sprint(d["fired_b"])
	if firedA == firedB || !strings.Contains(firedA, "fetch->") || d["divergence"].(map[string]any)["node_id"] != "fetch" {
		t.Fatalf("the comparison's fired edges: a %s, b %s: %s", firedA, firedB, r.body)
	}
	for _, k := range []string{"fired_a", "fired_b"} {
		var ids []string
		for _, id := range d[k].([]any) {
			ids = append(ids, id.(string))
		}
		if !slices.IsSorted(ids) {
			t.Errorf("%s is not sorted: %v", k, ids)
		}
	}
	v := int(d["b"].(map[string]any)["chain_version"].(float64))
	r = do(t, ts, "GET", fmt.Sprintf("/v1/chains/%s/versions/%d", id, v), nil)
	if r.json(t)["doc"].(map[string]any)["name"] != "pages" {
		t.Fatalf("run b's chain version: %s", r.body)
	}

	// "Compare with…" on b's page offers the runs around it, the previous
	// one chosen; the first run of the chain defaults to the next one.
	r = do(t, ts, "GET", "/runs/"+b+"/compare-with", nil)
	wantStatus(t, r, http.StatusOK)
	frag := string(r.body)
	for _, run := range []string{first, a, last} {
		if !strings.Contains(frag, `value="`+run+`"`) {
			t.Errorf("the select lacks run %s: %s", run, frag)
		}
	}
	if strings.Contains(frag, `value="`+b+`"`) || !strings.Contains(frag, `value="`+a+`" selected`) || !strings.Contains(frag, "(previous run)") {
		t.Fatalf("the previous run is chosen, the run itself is not offered: %s", frag)
	}
	r = do(t, ts, "GET", "/runs/"+first+"/compare-with", nil)
	if !strings.Contains(string(r.body), `value="`+a+`" selected`) || !strings.Contains(string(r.body), "(next run)") {
		t.Fatalf("the first run defaults to the next: %s", r.body)
	}

	// The form's target sends to the comparison, the chosen run as a.
	req, _ := http.NewRequest("GET", ts.URL+"/runs/"+b+"/compare?with="+a, nil)
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs/"+a+"/diff/"+b {
		t.Fatalf("compare: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	r = do(t, ts, "GET", "/runs/"+b+"/compare", nil)
	wantStatus(t, r, http.StatusBadRequest)

	// The run page loads the control.
	r = do(t, ts, "GET", "/runs/"+b, nil)
	if !strings.Contains(string(r.body), `hx-get="/runs/`+b+`/compare-with"`) {
		t.Fatalf("the run page has no Compare with… slot")
	}
}

// Ad-hoc runs (A2E requests) have no saved chain: two runs of a chain of
// the same name compare, and one of them against a saved chain's run is
// refused. A paused run compares as far as it got.
func TestRunDiffAdHocAndPaused(t *testing.T) {
	t.Parallel()
	_, ts := newA2EServer(t)
	body := strings.Replace(seedSimpleLinearChain, `"streaming":true`, `"streaming":false`, 1)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", body), http.StatusOK)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", strings.Replace(body, `"/data/input.txt"`, `"/data/other.txt"`, 1)), http.StatusOK)
	r := do(t, ts, "GET", "/v1/runs?limit=100", nil)
	var adhoc []string
	for _, x := range r.json(t)["runs"].([]any) {
		if x := x.(map[string]any); x["kind"] == "a2e" {
			adhoc = append(adhoc, x["id"].(string))
		}
	}
	if len(adhoc) != 2 {
		t.Fatalf("a2e runs: %s", r.body)
	}
	newer, older := adhoc[0], adhoc[1]
	r = do(t, ts, "GET", "/v1/runs/"+older+"/diff/"+newer, nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	// the second request changed read's input: another document of the same name
	if m["same_version"] != false || m["divergence"].(map[string]any)["node_id"] != "read" || fmt.Sprint(diffNode(t, m, "read")["edited"]) != "[input]" {
		t.Fatalf("ad-hoc runs: %s", r.body)
	}
	if p := diffNode(t, m, "read")["output"].(map[string]any)["paths"].([]any)[0].(map[string]any); p["path"] != "content" || p["new"] != "contents of /data/other.txt" {
		t.Fatalf("read's output: %v", p)
	}

	saved := createChain(t, ts, approvalDoc)
	r = do(t, ts, "POST", "/v1/chains/"+saved+"/runs", `{"input":{"x":1}}`)
	paused := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, paused); m["status"] != "paused" {
		t.Fatalf("run: %v", m)
	}
	r = do(t, ts, "GET", "/v1/runs/"+older+"/diff/"+paused, nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "different_chains" || !strings.Contains(string(r.body), "ad-hoc chain") {
		t.Fatalf("ad-hoc against saved: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/runs/"+paused+"/diff/"+paused, nil)
	wantStatus(t, r, http.StatusOK)
	if ask := diffNode(t, r.json(t), "ask"); ask["a"].(map[string]any)["status"] != "paused" || ask["change"] != "same" {
		t.Fatalf("a paused node: %v", ask)
	}
	if after := diffNode(t, r.json(t), "after"); after["a"].(map[string]any)["status"] != "not_reached" {
		t.Fatalf("a node after the pause: %v", after)
	}
}

// Nodes run inside a parallel node keep no record of their own: what they
// did comes from their events, so a branch that failed in one run only is
// named.
func TestRunDiffParallelBranches(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	doc := `{"name":"par","nodes":[
		{"node_id":"fan","kind":"parallel","branches":["ok","maybe"],"parallel_failure_mode":"any_success"},
		{"node_id":"ok","kind":"tool","name":"echo","input":{"source":"ok"}},
		{"node_id":"maybe","kind":"tool","name":"transform","input_map":{"data":"input"},"input":{"expression":"{n: length(items)}"}}]}`
	id := createChain(t, ts, doc)
	a := startAndWait(t, ts, id, `{"items":[1]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"items":5}}`) // length(5) fails: a branch error
	b := r.json(t)["run_id"].(string)
	waitRun(t, ts, b)
	r = do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	maybe := diffNode(t, m, "maybe")
	if maybe["a"].(map[string]any)["status"] != "done" || maybe["b"].(map[string]any)["status"] != "error" || maybe["b"].(map[string]any)["error"] == nil {
		t.Fatalf("the failed branch: %v", maybe)
	}
	if ok := diffNode(t, m, "ok"); ok["change"] != "same" || ok["a"].(map[string]any)["status"] != "done" {
		t.Fatalf("the branch that did the same: %v", ok)
	}
	if div := m["divergence"].(map[string]any); div["node_id"] != "fan" {
		t.Fatalf("the owner comes first: %v", div)
	}
}

// The comparison shows the two runs' inputs first: the API compares them
// path by path, and the page prints them above everything else it compares.
func TestRunDiffShowsTheInputsFirst(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(diffBranchDoc, "inputs", "", ""))
	a := startAndWait(t, ts, id, `{"items":[1,2],"who":"ann"}`)
	b := startAndWait(t, ts, id, `{"items":[1,2],"who":"bob"}`)

	r := do(t, ts, "GET", "/v1/runs/"+a+"/diff/"+b, nil)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	in := m["input"].(map[string]any)
	paths := in["paths"].([]any)
	if in["changed"] != true || len(paths) != 1 || paths[0].(map[string]any)["path"] != "who" ||
		paths[0].(map[string]any)["old"] != "ann" || paths[0].(map[string]any)["new"] != "bob" {
		t.Fatalf("input diff: %v", in)
	}
	if m["same"] != false {
		t.Fatalf("runs started with different inputs are not the same: %s", r.body)
	}

	page := string(do(t, ts, "GET", "/runs/"+a+"/diff/"+b, nil).body)
	at := strings.Index(page, `id="rundiff-input"`)
	if at < 0 {
		t.Fatalf("the page does not show the inputs")
	}
	if v := strings.Index(page, `id="rundiff-verdict"`); v < at {
		t.Errorf("the inputs come after the verdict (%d < %d)", v, at)
	}
	block := page[at:strings.Index(page, `id="rundiff-verdict"`)]
	for _, want := range []string{"differs", `id="input-diff"`, "<code>who</code>", `id="input-a"`, `&#34;ann&#34;`, `id="input-b"`, `&#34;bob&#34;`} {
		if !strings.Contains(block, want) {
			t.Errorf("the inputs block lacks %q:\n%s", want, block)
		}
	}

	// the same input: said once, shown once
	c := startAndWait(t, ts, id, `{"items":[1,2],"who":"ann"}`)
	page = string(do(t, ts, "GET", "/runs/"+a+"/diff/"+c, nil).body)
	block = page[strings.Index(page, `id="rundiff-input"`):strings.Index(page, `id="rundiff-verdict"`)]
	if !strings.Contains(block, "the same") || strings.Contains(block, `id="input-b"`) || !strings.Contains(block, "A and B") {
		t.Errorf("the same input:\n%s", block)
	}
}
