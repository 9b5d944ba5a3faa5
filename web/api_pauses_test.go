package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// A map whose three items each pause: GET lists every pause, a resume must
// name one (422 naming them), each is answered once (a second answer is
// 409) and the run completes when all are in.
func TestResumeNamedPauses(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	doc := `{"name":"many-pauses","nodes":[
{"node_id":"review","kind":"map","items_path":"input.items","map_node":"ask"},
{"node_id":"ask","kind":"tool","name":"interrupt","input_map":{"prompt":"item"}}],"edges":[]}`
	id := createChain(t, ts, doc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"items":["a","b","c"]}}`)
	runID := r.json(t)["run_id"].(string)
	m := waitRun(t, ts, runID)
	if m["status"] != "paused" {
		t.Fatalf("not paused: %v", m)
	}
	pending := m["pending"].([]any)
	if len(pending) != 3 {
		t.Fatalf("pending: %v", pending)
	}
	prompts := map[string]any{}
	for _, x := range pending {
		p := x.(map[string]any)
		if p["node_id"] != "review" || p["since"] == nil {
			t.Fatalf("pending entry: %v", p)
		}
		prompts[p["pause_id"].(string)] = p["prompt"]
	}
	if prompts["review[0]"] != "a" || prompts["review[1]"] != "b" || prompts["review[2]"] != "c" {
		t.Fatalf("pending prompts: %v", prompts)
	}
	resume := func(body string) resp { return do(t, ts, "POST", "/v1/runs/"+runID+"/resume", body) }
	r = resume(`{"resume_value":1}`)
	wantStatus(t, r, 422)
	if r.errCode(t) != "chain_resume" || !strings.Contains(string(r.body), "review[0], review[1], review[2]") {
		t.Fatalf("no pause_id: %s", r.body)
	}
	wantStatus(t, resume(`{"resume_value":1,"pause_id":7}`), 400)
	wantStatus(t, resume(`{"resume_value":1,"pause_id":""}`), 400)
	wantStatus(t, resume(`{"pause_id":"review[1]"}`), 400)
	r = resume(`{"resume_value":1,"pause_id":"review[9]"}`)
	wantStatus(t, r, 422)
	if !strings.Contains(string(r.body), `review[9]`) {
		t.Fatalf("unknown pause: %s", r.body)
	}
	wantStatus(t, resume(`{"resume_value":"B","pause_id":"review[1]"}`), 200)
	r = resume(`{"resume_value":"again","pause_id":"review[1]"}`)
	wantStatus(t, r, 409)
	if r.errCode(t) != "already_resumed" || !strings.Contains(string(r.body), "review[1]") {
		t.Fatalf("second answer: %s", r.body)
	}
	m = waitRun(t, ts, runID)
	if m["status"] != "paused" || len(m["pending"].([]any)) != 2 {
		t.Fatalf("after one answer: %v", m)
	}
	wantStatus(t, resume(`{"resume_value":"C","pause_id":"review[2]"}`), 200)
	wantStatus(t, resume(`{"resume_value":"A","pause_id":"review[0]"}`), 200)
	m = waitRun(t, ts, runID)
	if m["status"] != "completed" {
		t.Fatalf("after every answer: %v", m)
	}
	out, _ := json.Marshal(m["final_output"])
	if string(out) != `["A","B","C"]` {
		t.Fatalf("final output %s (run %v)", out, m)
	}
}

// The run page shows one answer form per pending pause, each naming its
// pause; answering one from the page leaves the others waiting.
func TestRunPageAnswersEachPause(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"page-pauses","nodes":[
{"node_id":"review","kind":"map","items_path":"input.items","map_node":"ask"},
{"node_id":"ask","kind":"tool","name":"interrupt","input_map":{"prompt":"item"}}],"edges":[]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"items":["a","b"]}}`)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "paused" {
		t.Fatalf("not paused: %v", m)
	}
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+runID+"/controls", "", "")
	for _, want := range []string{`name="pause_id" value="review[0]"`, `name="pause_id" value="review[1]"`, `id="btn-resume-value"`, `id="btn-resume-value-2"`, `<pre class="prompt" id="prompt-2">b</pre>`} {
		if !strings.Contains(html, want) {
			t.Fatalf("controls lack %s:\n%s", want, html)
		}
	}
	if strings.Contains(html, `id="btn-approve"`) { // a tool's pause takes a value, as in the inbox
		t.Fatalf("a tool's pause offers Approve:\n%s", html)
	}
	res, body := pageDo(t, ts.URL, "POST", "/runs/"+runID+"/resume", "application/x-www-form-urlencoded", "decision=value&value=%22B%22&pause_id=review%5B1%5D")
	if res.StatusCode != 200 && res.StatusCode != 303 || strings.Contains(body, "Could not resume") {
		t.Fatalf("resume from the page: %d %s", res.StatusCode, body)
	}
	m := waitRun(t, ts, runID)
	pending := m["pending"].([]any)
	if m["status"] != "paused" || len(pending) != 1 || pending[0].(map[string]any)["pause_id"] != "review[0]" {
		t.Fatalf("after the page's answer: %v", m)
	}
}
