package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
)

const gateDoc = `{"name":"held","nodes":[{"node_id":"g","kind":"tool","name":"gate"}]}`

// With one slot, a second run waits as queued (the start answer, the run's
// JSON, the runs filter and its event stream say so, with its place in
// line), a third is refused with 429 and Retry-After, and cancelling the
// queued run ends it cancelled at once.
func TestAPIRunQueue(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	defer open()
	_, ts := newTestServerOpts(t, Config{}, reg, func(o *runs.Options) { o.MaxRunning, o.MaxQueued = 1, 1 })
	chainID := createChain(t, ts, gateDoc)
	first := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{}`)
	wantStatus(t, first, http.StatusAccepted)
	if st := first.json(t)["status"]; st != "running" {
		t.Fatalf("first run: %v, want running", st)
	}
	second := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{}`)
	wantStatus(t, second, http.StatusAccepted)
	if st := second.json(t)["status"]; st != "queued" {
		t.Fatalf("second run: %v, want queued", st)
	}
	id := second.json(t)["run_id"].(string)
	m := do(t, ts, "GET", "/v1/runs/"+id, nil).json(t)
	if m["status"] != "queued" || m["queue_position"] != float64(1) || m["active"] != true {
		t.Fatalf("queued run: status %v position %v active %v", m["status"], m["queue_position"], m["active"])
	}
	list := do(t, ts, "GET", "/v1/runs?status=queued", nil).json(t)["runs"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != id {
		t.Fatalf("runs?status=queued: %v", list)
	}

	if mt := string(do(t, ts, "GET", "/metrics", nil).body); !strings.Contains(mt, "studio_runs_queued 1") || !strings.Contains(mt, "studio_runs_active 1") {
		t.Errorf("metrics do not show 1 running and 1 queued run")
	}
	full := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{}`)
	wantStatus(t, full, http.StatusTooManyRequests)
	if full.errCode(t) != "queue_full" || full.header.Get("Retry-After") == "" {
		t.Fatalf("full queue: %s, Retry-After %q", full.body, full.header.Get("Retry-After"))
	}

	res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+id+"/events")
	if err != nil {
		t.Fatal(err)
	}
	f, err := newSSEReader(res.Body).next()
	res.Body.Close()
	if err != nil || f.Event != "queued" {
		t.Fatalf("first frame of a queued run's stream: %+v %v, want event queued", f, err)
	}

	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+id+"/cancel", nil), http.StatusAccepted)
	if m := waitRun(t, ts, id); m["status"] != "cancelled" {
		t.Fatalf("cancelled queued run: %v", m["status"])
	}
	open()
	if m := waitRun(t, ts, first.json(t)["run_id"].(string)); m["status"] != "completed" {
		t.Fatalf("first run: %v", m["status"])
	}
}

// A run's event stream takes so many watchers, then answers 503 with
// Retry-After naming the limit.
func TestAPIWatcherLimit(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	defer open()
	_, ts := newTestServerOpts(t, Config{}, reg, func(o *runs.Options) { o.MaxWatchersPerRun = 1 })
	id := startChainRun(t, ts, gateDoc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, err := openSSE(ctx, ts.Client(), ts.URL+"/v1/runs/"+id+"/events")
	if err != nil || first.StatusCode != http.StatusOK {
		t.Fatalf("first watcher: %v %v", first, err)
	}
	defer first.Body.Close()
	r := do(t, ts, "GET", "/v1/runs/"+id+"/events", nil, "Accept", "text/event-stream")
	wantStatus(t, r, http.StatusServiceUnavailable)
	if r.errCode(t) != "too_many_watchers" || r.header.Get("Retry-After") == "" {
		t.Fatalf("second watcher: %s, Retry-After %q", r.body, r.header.Get("Retry-After"))
	}
}

// A run over a budget ends failed with budget_exceeded naming the budget,
// and the server keeps serving; a chain over a ceiling is refused with the
// ceiling and its flag named.
func TestAPIRunBudgetsAndCeilings(t *testing.T) {
	t.Parallel()
	lim := chain.Limits{MaxNodeExecutions: 20, MaxIterations: 1000}
	_, ts := newTestServerOpts(t, Config{Limits: lim}, testRegistry(), func(o *runs.Options) { o.Limits = lim })
	loop := `{"name":"loop","nodes":[
		{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"a","max_iterations":MAX}]}`
	id := startChainRun(t, ts, strings.Replace(loop, "MAX", "500", 1))
	m := waitRun(t, ts, id)
	e, _ := m["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	if m["status"] != "failed" || e["code"] != engine.CodeBudget || d["budget"] != "node_executions" {
		t.Fatalf("run over its node budget: status %v error %v", m["status"], e)
	}
	if n := m["nodes_run"].(float64); n > 22 {
		t.Fatalf("%v nodes ran with a budget of 20", n)
	}

	chainID := createChain(t, ts, strings.Replace(strings.Replace(loop, "MAX", "2000000000", 1), `"loop"`, `"greedy"`, 1))
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"version":"draft"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "over_ceiling") || !strings.Contains(string(r.body), "--max-iterations") {
		t.Fatalf("a chain over the max_iterations ceiling: %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/runs/"+id, nil), http.StatusOK) // still serving
}
