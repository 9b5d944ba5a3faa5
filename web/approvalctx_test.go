package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// refundCtxDoc: an approval whose prompt and fields read the run's input and
// an earlier node's output; rejected reaches "tell" when withEdge.
func refundCtxDoc(name string, withEdge bool) string {
	edges := `{"source":"classify","target":"ask"},{"source":"ask","target":"pay","label":"approved"},{"source":"ask","target":"tell","label":"rejected"}`
	if !withEdge {
		edges = `{"source":"classify","target":"ask"},{"source":"ask","target":"pay"},{"source":"pay","target":"tell"}`
	}
	return `{"name":"` + name + `","nodes":[
{"node_id":"classify","kind":"tool","name":"echo","input_map":{"category":"input.kind"}},
{"node_id":"ask","kind":"interrupt","label":"Manager approval","config":{"prompt":"Refund {{ input.order }} for {{ classify.output.category }}?",
 "fields":{"Order":"input.order","Category":"classify.output.category"}}},
{"node_id":"pay","kind":"tool","name":"echo"},
{"node_id":"tell","kind":"tool","name":"echo"}],
"edges":[` + edges + `]}`
}

// TestApprovalContext: the API, the inbox and the run page carry the
// rendered prompt and the approval's fields; a no down the rejected edge, or
// a no that fails the run for want of one, is "rejected" in the run and in
// both run lists, and a broken run is not.
func TestApprovalContext(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, refundCtxDoc("Refund ctx", true))
	start := func(chainID string) string {
		r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"input":{"order":"A-17","kind":"billing"}}`)
		wantStatus(t, r, http.StatusAccepted)
		runID := r.json(t)["run_id"].(string)
		if m := waitRun(t, ts, runID); m["status"] != "paused" {
			t.Fatalf("not paused: %v", m)
		}
		return runID
	}
	runID := start(id)
	m := do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)
	if p := m["pending"].([]any)[0].(map[string]any)["prompt"]; p != "Refund A-17 for billing?" {
		t.Errorf("pending prompt = %v", p)
	}
	list := do(t, ts, "GET", "/v1/interrupts?run="+runID, nil).json(t)["interrupts"].([]any)
	if got, _ := json.Marshal(list[0].(map[string]any)["fields"]); string(got) != `[{"label":"Category","value":"billing"},{"label":"Order","value":"A-17"}]` {
		t.Errorf("interrupt fields = %s", got)
	}
	_, html := pageDo(t, ts.URL, "GET", "/inbox?run="+runID, "", "")
	for _, want := range []string{`<pre class="prompt">Refund A-17 for billing?</pre>`, `id="ib-fields-0"`, `<th scope="col">Category</th><th scope="col">Order</th>`, `<td>billing</td><td>A-17</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("inbox lacks %s", want)
		}
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs/"+runID, "", "")
	for _, want := range []string{`<pre class="prompt" id="prompt">Refund A-17 for billing?</pre>`, `id="ask-fields"`, `<td>billing</td><td>A-17</td>`, `id="resume-comment"`} {
		if !strings.Contains(html, want) {
			t.Errorf("run page lacks %s", want)
		}
	}

	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"reject","comment":"no"}`), http.StatusOK)
	if m := waitRun(t, ts, runID); m["status"] != "completed" || m["outcome"] != "rejected" {
		t.Fatalf("after the no: %v %v", m["status"], m["outcome"])
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs/"+runID, "", "")
	if !strings.Contains(html, `id="run-outcome"`) {
		t.Errorf("the run page does not say a person said no")
	}

	bare := createChain(t, ts, refundCtxDoc("Refund no edge", false))
	failedNo := start(bare)
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+failedNo+"/resume", `{"action":"reject"}`), http.StatusOK)
	if m := waitRun(t, ts, failedNo); m["status"] != "failed" || m["outcome"] != "rejected" {
		t.Fatalf("a no without a rejected edge: %v %v", m["status"], m["outcome"])
	}
	broken := createChain(t, ts, `{"name":"Broken","nodes":[{"node_id":"f","kind":"tool","name":"fail"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+broken+"/runs", `{}`)
	brokenRun := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, brokenRun); m["status"] != "failed" || m["outcome"] != nil {
		t.Fatalf("broken: %v %v", m["status"], m["outcome"])
	}
	listed := map[string]any{}
	for _, x := range do(t, ts, "GET", "/v1/runs", nil).json(t)["runs"].([]any) {
		listed[x.(map[string]any)["id"].(string)] = x.(map[string]any)["outcome"]
	}
	if listed[runID] != "rejected" || listed[failedNo] != "rejected" || listed[brokenRun] != nil {
		t.Errorf("GET /v1/runs outcomes: %v", listed)
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs", "", "")
	row := func(id string) string {
		i := strings.Index(html, `data-run-id="`+id+`"`)
		if i < 0 {
			t.Fatalf("run %s not listed", id)
		}
		end := strings.Index(html[i:], "</tr>")
		return html[i : i+end]
	}
	if r := row(runID); !strings.Contains(r, `data-outcome="rejected"`) || !strings.Contains(r, "status-completed") || !strings.Contains(r, `status-rejected`) {
		t.Errorf("rejected-path run row: %s", r)
	}
	if r := row(failedNo); strings.Contains(r, "status-failed") || !strings.Contains(r, `>rejected</span>`) {
		t.Errorf("failed-for-a-no row: %s", r)
	}
	if r := row(brokenRun); !strings.Contains(r, "status-failed") || strings.Contains(r, "status-rejected") {
		t.Errorf("broken row: %s", r)
	}
	_, html = pageDo(t, ts.URL, "GET", "/chains/"+id+"/runs", "", "")
	if !strings.Contains(html, "status-rejected") {
		t.Errorf("the chain's runs page does not mark the rejected run")
	}
}

// A prompt template that does not parse stops the run before it starts,
// naming the node and the field.
func TestApprovalPromptTemplateInvalid(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, strings.Replace(refundCtxDoc("Bad prompt", true), "{{ input.order }}", "{{ input.order ", 1))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{},"version":1}`)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "config.prompt") || !strings.Contains(string(r.body), `\"ask\"`) {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}
