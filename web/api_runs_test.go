package web

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/runs"
)

const approvalDoc = `{"name":"approval","nodes":[
	{"node_id":"prep","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"}},
	{"node_id":"after","kind":"tool","name":"echo","input_map":{"answer":"ask.output"}}],
	"edges":[{"source":"prep","target":"ask"},{"source":"ask","target":"after"}]}`

const slowDoc = `{"name":"slow","nodes":[{"node_id":"wait","kind":"tool","name":"delay","input":{"ms":10000}}]}`

func TestStartAndGetRun(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "lin"))

	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":42}}`)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	if r.header.Get("Location") != "/v1/runs/"+runID {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	m := waitRun(t, ts, runID)
	if m["status"] != "completed" || m["chain_id"] != id {
		t.Fatalf("run: %v", m)
	}
	final := m["final_output"].(map[string]any)
	if final["x"].(float64) != 42 {
		t.Fatalf("final_output %v", final)
	}
	if len(m["nodes"].([]any)) != 2 || m["outputs"] == nil || m["started"] == nil || m["ended"] == nil {
		t.Fatalf("run detail: %v", m)
	}
	if _, ok := m["pending"].([]any); !ok {
		t.Fatalf("pending must be a list: %v", m)
	}

	// Empty body: input {}.
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/runs", nil), 202)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/runs", `{}`), 404)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":[1]}`)
	wantStatus(t, r, 400)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"inputs":{}}`)
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), `"inputs"`) {
		t.Fatalf("unknown field not named: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", "{\n\"input\": {,}}")
	wantStatus(t, r, 400)
	if !strings.Contains(string(r.body), "line 2") {
		t.Fatalf("no line: %s", r.body)
	}

	// A chain with errors is saved, unpublished, and not run: by name it
	// has no published version, and its draft is refused for its errors.
	bad := createChain(t, ts, `{"name":"bad","nodes":[{"node_id":"a","kind":"tool","name":"nope"}]}`)
	r = do(t, ts, "POST", "/v1/chains/"+bad+"/runs", `{}`)
	wantStatus(t, r, http.StatusConflict)
	if r.errCode(t) != "not_published" {
		t.Fatalf("a run of an unpublished chain: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+bad+"/runs", `{"version":"draft"}`)
	wantStatus(t, r, 422)
	if r.errCode(t) != "chain_invalid" || r.errDetails(t)["issues"] == nil {
		t.Fatalf("invalid run: %s", r.body)
	}

	wantStatus(t, do(t, ts, "GET", "/v1/runs/nope", nil), 404)
}

func TestListRunsKeyset(t *testing.T) {
	t.Parallel()
	// Each run starts 1 ms after the previous one, on the service's clock.
	var ticks atomic.Int64
	epoch := time.Now()
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) {
		o.Now = func() time.Time { return epoch.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	})
	a := createChain(t, ts, fmt.Sprintf(linearDoc, "a"))
	b := createChain(t, ts, fmt.Sprintf(linearDoc, "b"))
	var ids []string
	for i := 0; i < 3; i++ {
		r := do(t, ts, "POST", "/v1/chains/"+a+"/runs", `{}`)
		ids = append(ids, r.json(t)["run_id"].(string))
	}
	r := do(t, ts, "POST", "/v1/chains/"+b+"/runs", `{}`)
	ids = append(ids, r.json(t)["run_id"].(string))
	for _, id := range ids {
		waitRun(t, ts, id)
	}

	seen := map[string]bool{}
	path := "/v1/runs?chain_id=" + a + "&limit=2"
	pages := 0
	for path != "" {
		r := do(t, ts, "GET", path, nil)
		wantStatus(t, r, 200)
		m := r.json(t)
		for _, x := range m["runs"].([]any) {
			run := x.(map[string]any)
			if run["chain_id"] != a || seen[run["id"].(string)] {
				t.Fatalf("bad page: %s", r.body)
			}
			seen[run["id"].(string)] = true
		}
		path, _ = m["next_url"].(string)
		if next, _ := m["next"].(string); (next == "") != (path == "") {
			t.Fatalf("next/next_url disagree: %s", r.body)
		}
		pages++
	}
	if len(seen) != 3 || pages != 2 {
		t.Fatalf("paging: %d runs in %d pages", len(seen), pages)
	}
	r = do(t, ts, "GET", "/v1/runs", nil)
	var newest []string
	for _, x := range r.json(t)["runs"].([]any) {
		newest = append(newest, x.(map[string]any)["id"].(string))
	}
	if want := []string{ids[3], ids[2], ids[1], ids[0]}; !slices.Equal(newest, want) {
		t.Fatalf("all runs, newest first: %v, want %v", newest, want)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/runs?before=!!!", nil), 400)
	wantStatus(t, do(t, ts, "GET", "/v1/runs?before=bm90LWEtY3Vyc29y", nil), 400)
	wantStatus(t, do(t, ts, "GET", "/v1/runs?limit=x", nil), 400)
}

func TestResumeRun(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, approvalDoc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`)
	runID := r.json(t)["run_id"].(string)
	m := waitRun(t, ts, runID)
	if m["status"] != "paused" {
		t.Fatalf("not paused: %v", m)
	}
	pending := m["pending"].([]any)
	if len(pending) != 1 || pending[0].(map[string]any)["node_id"] != "ask" || pending[0].(map[string]any)["prompt"] != "ok?" {
		t.Fatalf("pending: %v", m["pending"])
	}

	// Absent value on a paused run: 422.
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{}`)
	wantStatus(t, r, 422)
	if r.errCode(t) != "chain_resume" {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"resume_value":1,"bogus":2}`), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"modified_state":[1]}`), 400)
	// Present null is a value.
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"resume_value":null}`)
	wantStatus(t, r, 200)
	if m := r.json(t); m["run_id"] != runID || m["status"] != "running" {
		t.Fatalf("resume: %s", r.body)
	}
	m = waitRun(t, ts, runID)
	if m["status"] != "completed" {
		t.Fatalf("after resume: %v", m)
	}
	// Nothing pending any more: 409.
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"resume_value":true}`)
	wantStatus(t, r, 409)
	if r.errCode(t) != "already_resumed" {
		t.Fatalf("%s", r.body)
	}
	// Completed, no value: 422.
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", nil), 422)
	// Unknown run: 404.
	r = do(t, ts, "POST", "/v1/runs/nope/resume", `{"resume_value":1}`)
	wantStatus(t, r, 404)
	if r.errCode(t) != "chain_checkpoint" {
		t.Fatalf("%s", r.body)
	}
}

func TestResumeFailedRunWithModifiedState(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"f","nodes":[
		{"node_id":"a","kind":"tool","name":"echo"},
		{"node_id":"b","kind":"tool","name":"fail","input_map":{"until_attempt":"state.attempts"}}],
		"edges":[{"source":"a","target":"b"}]}`)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "failed" {
		t.Fatalf("want failed: %v", m)
	}
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"modified_state":{"attempts":1}}`)
	wantStatus(t, r, 200)
	if m := waitRun(t, ts, runID); m["status"] != "completed" {
		t.Fatalf("resumed failed run: %v", m)
	}
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, slowDoc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`)
	runID := r.json(t)["run_id"].(string)
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/cancel", nil)
	wantStatus(t, r, 202)
	if m := waitRun(t, ts, runID); m["status"] != "cancelled" {
		t.Fatalf("want cancelled: %v", m)
	}
	r = do(t, ts, "POST", "/v1/runs/"+runID+"/cancel", nil)
	wantStatus(t, r, 409)
	if r.errCode(t) != "not_running" {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/nope/cancel", nil), 404)
}

func TestRerunRun(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "lin"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":7}}`)
	runID := r.json(t)["run_id"].(string)
	waitRun(t, ts, runID)

	r = do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", `{"from_node":"b"}`)
	wantStatus(t, r, 202)
	newID := r.json(t)["run_id"].(string)
	if newID == runID || r.header.Get("Location") != "/v1/runs/"+newID {
		t.Fatalf("rerun: %s", r.body)
	}
	m := waitRun(t, ts, newID)
	if m["status"] != "completed" || m["parent_run_id"] != runID || m["kind"] != "rerun" {
		t.Fatalf("rerun run: %v", m)
	}
	if m["final_output"].(map[string]any)["x"].(float64) != 7 {
		t.Fatalf("rerun output: %v", m["final_output"])
	}

	r = do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", `{"from_node":"zzz"}`)
	wantStatus(t, r, 422)
	if r.errCode(t) != "unknown_node" {
		t.Fatalf("%s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", `{}`), 422)
	wantStatus(t, do(t, ts, "POST", "/v1/runs/nope/rerun", `{"from_node":"b"}`), 404)
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/rerun", `{"from_node":1}`), 400)
}
