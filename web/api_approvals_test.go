package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
)

// expenseDoc: an approval with a schema, a proposed value, a rejected edge
// and a deadline policy (extra config).
func expenseDoc(name, extra string) string {
	return `{"name":"` + name + `","nodes":[
{"node_id":"ask","kind":"interrupt","config":{"prompt":"Pay bob?","proposed":{"amount":10,"to":"bob"},"approvers":["finance"],
 "schema":{"type":"object","required":["amount"],"properties":{"amount":{"type":"number","maximum":100},"to":{"type":"string"}}}` + extra + `}},
{"node_id":"pay","kind":"tool","name":"echo"},
{"node_id":"refuse","kind":"tool","name":"echo"}],
"edges":[{"source":"ask","target":"pay"},{"source":"ask","target":"refuse","label":"rejected"}]}`
}

func pausedExpense(t *testing.T, ts *httptest.Server, chainID string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/runs", `{"input":{}}`)
	wantStatus(t, r, 202)
	runID := r.json(t)["run_id"].(string)
	if m := waitRun(t, ts, runID); m["status"] != "paused" {
		t.Fatalf("not paused: %v", m)
	}
	return runID
}

func TestAnswerApproval(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, expenseDoc("Expenses", ""))

	t.Run("modify_then_approve_is_validated_audited_and_shown", func(t *testing.T) {
		runID := pausedExpense(t, ts, id)
		// The value fails the schema: 422 naming the field; nothing is claimed.
		r := do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"approve","value":{"amount":500},"comment":"more"}`)
		wantStatus(t, r, 422)
		if r.errCode(t) != "invalid_answer" || r.errDetails(t)["field"] != "/amount" || r.errDetails(t)["node_id"] != "ask" {
			t.Fatalf("422: %s", r.body)
		}
		r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"approve","value":{"amount":42,"to":"bob"},"comment":"  capped at 42 "}`)
		wantStatus(t, r, 200)
		m := waitRun(t, ts, runID)
		if m["status"] != "completed" {
			t.Fatalf("after approve: %v", m)
		}
		if out, _ := json.Marshal(m["outputs"].(map[string]any)["pay"]); string(out) != `{"amount":42,"to":"bob"}` {
			t.Errorf("pay got %s", out)
		}
		ans := m["answers"].([]any)
		if len(ans) != 1 {
			t.Fatalf("answers: %v", m["answers"])
		}
		a := ans[0].(map[string]any)
		if a["action"] != "approve" || a["comment"] != "capped at 42" || a["by"] != "local" || a["address"] != "127.0.0.1" || a["node_id"] != "ask" || a["at"] == nil {
			t.Errorf("audit entry: %v", a)
		}
		// A second answer: 409.
		r = do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"reject"}`)
		wantStatus(t, r, 409)
		if r.errCode(t) != "already_resumed" {
			t.Fatalf("%s", r.body)
		}
	})
	t.Run("reject_takes_the_rejected_edge_with_the_comment", func(t *testing.T) {
		runID := pausedExpense(t, ts, id)
		wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"reject","comment":"not this month"}`), 200)
		m := waitRun(t, ts, runID)
		out, _ := json.Marshal(m["outputs"].(map[string]any)["refuse"])
		if !strings.Contains(string(out), `"comment":"not this month"`) || m["outputs"].(map[string]any)["pay"] != nil {
			t.Errorf("outputs: %v", m["outputs"])
		}
	})
	t.Run("bad_answers", func(t *testing.T) {
		runID := pausedExpense(t, ts, id)
		for body, want := range map[string]string{
			`{"action":"timeout"}`:                          "invalid_answer", // only the deadline times out
			`{"action":"maybe"}`:                            "invalid_answer",
			`{"action":"respond"}`:                          "invalid_answer", // respond needs a value
			`{"comment":"hi"}`:                              "invalid_answer",
			`{"action":"approve","comment":` + long + `}`:   "invalid_answer",
			`{"action":1}`:                                  "bad_json",
			`{"value":1,"resume_value":1}`:                  "bad_json",
			`{"action":"respond","value":{"amount":"ten"}}`: "invalid_answer",
		} {
			r := do(t, ts, "POST", "/v1/runs/"+runID+"/resume", body)
			if r.errCode(t) != want {
				t.Errorf("%.60s: %d %s", body, r.status, r.body)
			}
		}
		// still pending after all of them
		if m := waitRun(t, ts, runID); m["status"] != "paused" {
			t.Fatalf("status %v", m["status"])
		}
	})
}

var long = `"` + strings.Repeat("x", engine.MaxAnswerComment+1) + `"`

func TestAnsweredByToken(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{Token: strings.Repeat("k", 24)}, testRegistry())
	auth := "Authorization"
	bearer := "Bearer " + strings.Repeat("k", 24)
	// approvers name the token's role: the token is an admin, not "finance"
	r := do(t, ts, "POST", "/v1/chains", strings.Replace(expenseDoc("Tok", ""), `["finance"]`, `["admin"]`, 1), auth, bearer)
	wantStatus(t, r, 201)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, auth, bearer)
	runID := r.json(t)["run_id"].(string)
	for range 200 {
		if do(t, ts, "GET", "/v1/runs/"+runID, nil, auth, bearer).json(t)["status"] == "paused" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A forwarded header does not change the recorded address: no proxy is trusted.
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"approve"}`, auth, bearer, "X-Forwarded-For", "203.0.113.9"), 200)
	var a map[string]any
	for range 200 {
		m := do(t, ts, "GET", "/v1/runs/"+runID, nil, auth, bearer).json(t)
		if ans, _ := m["answers"].([]any); len(ans) == 1 {
			a = ans[0].(map[string]any)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a["by"] != "token" || a["address"] != "127.0.0.1" {
		t.Errorf("audit: %v", a)
	}
}

func TestInbox(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	exp := createChain(t, ts, expenseDoc("Expenses", `,"timeout":"2h"`))
	hire := createChain(t, ts, strings.ReplaceAll(expenseDoc("Hiring", `,"timeout":"1h"`), "Pay bob?", "Hire Ada?"))
	plain := createChain(t, ts, approvalDoc)
	r1 := pausedExpense(t, ts, exp)
	r2 := pausedExpense(t, ts, hire)
	r3 := do(t, ts, "POST", "/v1/chains/"+plain+"/runs", `{"input":{}}`).json(t)["run_id"].(string)
	waitRun(t, ts, r3)

	list := func(q string) []map[string]any {
		t.Helper()
		r := do(t, ts, "GET", "/v1/interrupts"+q, nil)
		wantStatus(t, r, 200)
		var out []map[string]any
		for _, x := range r.json(t)["interrupts"].([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	runs := func(l []map[string]any) []string {
		var ids []string
		for _, it := range l {
			ids = append(ids, it["run_id"].(string))
		}
		return ids
	}
	all := list("")
	if got := runs(all); len(got) != 3 || got[0] != r1 || got[1] != r2 || got[2] != r3 {
		t.Fatalf("waiting order %v, want %v", got, []string{r1, r2, r3})
	}
	first := all[0]
	if first["chain_name"] != "Expenses" || first["prompt"] != "Pay bob?" || first["on_timeout"] != "reject" || first["deadline"] == nil ||
		first["waiting_since"] == nil || first["answer_url"] != "/v1/runs/"+r1+"/resume" || first["schema"] == nil {
		t.Errorf("entry: %v", first)
	}
	if a := first["approvers"].([]any); len(a) != 1 || a[0] != "finance" {
		t.Errorf("approvers: %v", first["approvers"])
	}
	if acts := all[2]["actions"].([]any); len(acts) != 3 || all[2]["deadline"] != nil {
		t.Errorf("plain interrupt: %v", all[2])
	}
	if got := runs(list("?sort=deadline")); got[0] != r2 || got[1] != r1 || got[2] != r3 {
		t.Errorf("deadline order %v", got)
	}
	if got := runs(list("?chain=" + hire)); len(got) != 1 || got[0] != r2 {
		t.Errorf("chain filter %v", got)
	}
	if got := runs(list("?q=ADA")); len(got) != 1 || got[0] != r2 {
		t.Errorf("text filter %v", got)
	}
	if got := runs(list("?limit=1")); len(got) != 1 {
		t.Errorf("limit %v", got)
	}
	for _, q := range []string{"?sort=random", "?limit=0", "?limit=1000", "?q=" + strings.Repeat("a", 201)} {
		r := do(t, ts, "GET", "/v1/interrupts"+q, nil)
		if r.status != 400 || r.errCode(t) != "bad_parameter" {
			t.Errorf("%.30s: %d %s", q, r.status, r.body)
		}
	}
	// Answered from the list: it leaves it.
	wantStatus(t, do(t, ts, "POST", all[0]["answer_url"].(string), `{"action":"approve"}`), 200)
	waitRun(t, ts, r1)
	if got := runs(list("")); len(got) != 2 || got[0] != r2 {
		t.Errorf("after answering: %v", got)
	}
}

// TestDeadlineSweep: with a fake clock past the deadline, the sweeper
// applies on_timeout through the resume path, once; a late person gets 409;
// the escalation webhook (a loopback server, let through the guard only
// because the test allows private addresses) hears the pause and the near
// deadline once each.
func TestDeadlineSweep(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var heard []map[string]any
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		mu.Lock()
		heard = append(heard, m)
		mu.Unlock()
	}))
	defer hook.Close()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, expenseDoc("Timed", `,"timeout":"1h","on_timeout":"default","default_value":{"amount":0},"escalation":"`+hook.URL+`/hook","notify_before":"10m"`))
	runID := pausedExpense(t, ts, id)
	started := time.Now()
	clock := started
	sw := runs.NewSweeper(runs.SweeperOptions{Store: srv.DB, Runs: srv.Runs, Now: func() time.Time { return clock }, Logger: testLogger(),
		Notify: builtin.GuardedClient(builtin.Options{HTTPAllowPrivate: true})})
	ctx := context.Background()
	sweep := func(at time.Duration) runs.SweepResult {
		t.Helper()
		clock = started.Add(at)
		res, err := sw.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := sweep(0); res.Notified != 1 || res.TimedOut != 0 {
		t.Fatalf("at the pause: %+v", res)
	}
	if res := sweep(40 * time.Minute); res.Notified != 0 || res.TimedOut != 0 {
		t.Fatalf("40 minutes in: %+v", res)
	}
	if res := sweep(51 * time.Minute); res.Notified != 1 {
		t.Fatalf("51 minutes in: %+v", res)
	}
	if res := sweep(61 * time.Minute); res.TimedOut != 1 {
		t.Fatalf("past the deadline: %+v", res)
	}
	m := waitRun(t, ts, runID)
	if out, _ := json.Marshal(m["outputs"].(map[string]any)["pay"]); string(out) != `{"amount":0}` {
		t.Errorf("default answer: pay got %s (%v)", out, m["status"])
	}
	if a := m["answers"].([]any); len(a) != 1 || a[0].(map[string]any)["action"] != "timeout" || a[0].(map[string]any)["by"] != "deadline" {
		t.Errorf("audit: %v", m["answers"])
	}
	if res := sweep(2 * time.Hour); res.TimedOut != 0 || res.Notified != 0 {
		t.Errorf("swept twice: %+v", res)
	}
	r := do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"approve"}`)
	wantStatus(t, r, 409)
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 2 || heard[0]["event"] != store.EscalationPaused || heard[1]["event"] != store.EscalationDeadlineNear || heard[0]["run_id"] != runID || heard[1]["deadline"] == nil {
		t.Errorf("webhook heard %v", heard)
	}
}

// TestEscalationGuard: without --http-allow-private the loopback webhook
// is refused by the guard and never reached.
func TestEscalationGuard(t *testing.T) {
	t.Parallel()
	reached := false
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	defer hook.Close()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, expenseDoc("Guarded", `,"escalation":"`+hook.URL+`"`))
	pausedExpense(t, ts, id)
	sw := runs.NewSweeper(runs.SweeperOptions{Store: srv.DB, Runs: srv.Runs, Logger: testLogger(), Notify: builtin.GuardedClient(builtin.Options{})})
	res, err := sw.Sweep(context.Background())
	if err != nil || res.Failed != 1 || res.Notified != 0 || reached {
		t.Errorf("res %+v err %v reached %v", res, err, reached)
	}
}

// TestRunPageAnswers: the run page's Approve answers an interrupt node with
// the approve action (its proposed value), records who and the comment, and
// the page then lists the answer.
func TestRunPageAnswers(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, expenseDoc("Page", ""))
	runID := pausedExpense(t, ts, id)
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+runID, "", "")
	if !strings.Contains(html, "Approve goes on with the proposed value") || !strings.Contains(html, `id="open-inbox"`) ||
		!strings.Contains(html, `<th scope="col">amount</th><th scope="col">to</th></tr></thead> <tbody><tr><td>10</td><td>bob</td>`) {
		t.Fatalf("paused run page: %s", html)
	}
	res, body := pageDo(t, ts.URL, "POST", "/runs/"+runID+"/resume", "application/x-www-form-urlencoded", "decision=approve&comment=fine+by+me")
	if res.StatusCode != 200 && res.StatusCode != 303 {
		t.Fatalf("resume: %d %s", res.StatusCode, body)
	}
	m := waitRun(t, ts, runID)
	if out, _ := json.Marshal(m["outputs"].(map[string]any)["pay"]); string(out) != `{"amount":10,"to":"bob"}` {
		t.Errorf("pay got %s", out)
	}
	a := m["answers"].([]any)[0].(map[string]any)
	if a["action"] != "approve" || a["comment"] != "fine by me" || a["by"] != "local" {
		t.Errorf("audit: %v", a)
	}
	_, html = pageDo(t, ts.URL, "GET", "/runs/"+runID, "", "")
	if !strings.Contains(html, `id="run-answers"`) || !strings.Contains(html, "fine by me") {
		t.Errorf("run page lists no answer")
	}

	plain := createChain(t, ts, approvalDoc)
	r := do(t, ts, "POST", "/v1/chains/"+plain+"/runs", `{"input":{}}`).json(t)["run_id"].(string)
	waitRun(t, ts, r)
	pageDo(t, ts.URL, "POST", "/runs/"+r+"/resume", "application/x-www-form-urlencoded", "decision=approve")
	m = waitRun(t, ts, r)
	// An interrupt with a prompt only: Approve is the same approve the API
	// and the inbox send (the proposed value: the node's input).
	if a := m["answers"].([]any)[0].(map[string]any); a["action"] != "approve" || a["value"] != nil {
		t.Errorf("plain interrupt: %v", a)
	}
}

// TestToolsListInterruptConfig: the catalogue gives forms the interrupt
// node's config schema.
func TestToolsListInterruptConfig(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	m := do(t, ts, "GET", "/v1/tools", nil).json(t)
	cs := m["kinds"].(map[string]any)["interrupt"].(map[string]any)["config_schema"].(map[string]any)
	props := cs["properties"].(map[string]any)
	for _, k := range []string{"prompt", "schema", "proposed", "deadline", "timeout", "on_timeout", "default_value", "escalation", "notify_before", "approvers"} {
		if props[k] == nil {
			t.Errorf("config_schema lacks %s", k)
		}
	}
}
