package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/web/api"
)

// Schedules: a malformed cron is 422 invalid_cron with the field's column,
// an unknown zone 422 naming it, a bad policy names its field; a good one
// is listed with its next tick, updated and deleted.
func TestScheduleAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "sched"))
	base := "/v1/chains/" + id + "/schedules"

	r := do(t, ts, "POST", base, `{"cron":"0 9 32 * *"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "invalid_cron" || r.errDetails(t)["position"] != 5.0 || !strings.Contains(string(r.body), "day of month") {
		t.Fatalf("bad day of month: %s", r.body)
	}
	r = do(t, ts, "POST", base, `{"cron":"0 9 * * *","time_zone":"Atlantis/Capital"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "invalid_time_zone" || r.errDetails(t)["time_zone"] != "Atlantis/Capital" || !strings.Contains(string(r.body), `Atlantis/Capital`) {
		t.Fatalf("unknown zone: %s", r.body)
	}
	r = do(t, ts, "POST", base, `{"cron":"0 9 * * *","overlap":"sometimes"}`)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errDetails(t)["field"] != "overlap" {
		t.Fatalf("bad overlap: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/nope/schedules", `{"cron":"0 9 * * *"}`), http.StatusNotFound)

	r = do(t, ts, "POST", base, `{"cron":"0 9 * * 1-5","time_zone":"Europe/Paris","input":{"x":"morning"},"overlap":"queue","catch_up":"once"}`)
	wantStatus(t, r, http.StatusCreated)
	sc := r.json(t)
	if sc["enabled"] != true || sc["overlap"] != "queue" || sc["catch_up"] != "once" || sc["next_tick"] == nil {
		t.Fatalf("created: %s", r.body)
	}
	sid := sc["id"].(string)
	r = do(t, ts, "PUT", base+"/"+sid, `{"cron":"*/15 * * * *","enabled":false}`)
	wantStatus(t, r, http.StatusOK)
	if up := r.json(t); up["cron"] != "*/15 * * * *" || up["enabled"] != false || up["next_tick"] != nil || up["overlap"] != "skip" {
		t.Fatalf("updated: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id+"/triggers", nil)
	wantStatus(t, r, http.StatusOK)
	if list := r.json(t); len(list["schedules"].([]any)) != 1 || len(list["hooks"].([]any)) != 0 {
		t.Fatalf("triggers: %s", r.body)
	}
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/other/schedules/"+sid, `{"cron":"* * * * *"}`), http.StatusNotFound)
	wantStatus(t, do(t, ts, "DELETE", base+"/"+sid, nil), http.StatusNoContent)
	wantStatus(t, do(t, ts, "DELETE", base+"/"+sid, nil), http.StatusNotFound)
}

// A webhook: created with its secret shown once; a signed call starts a
// run whose input is the body and which says it was started by the hook;
// unsigned, wrongly signed, stale or non-object calls start nothing.
func TestWebhookStartsARun(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: "webhook-test-token-0123"}, testRegistry())
	auth := []string{"Authorization", "Bearer webhook-test-token-0123"}
	r := do(t, ts, "POST", "/v1/chains", fmt.Sprintf(linearDoc, "hooked"), auth...)
	wantStatus(t, r, http.StatusCreated)
	chainID := r.json(t)["id"].(string)

	r = do(t, ts, "POST", "/v1/chains/"+chainID+"/hooks", `{}`, auth...)
	wantStatus(t, r, http.StatusCreated)
	hook := r.json(t)
	hookID, secret := hook["id"].(string), hook["secret"].(string)
	if len(secret) != 64 || hook["path"] != "/v1/hooks/"+hookID {
		t.Fatalf("created hook: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/chains/"+chainID+"/triggers", nil, auth...)
	if strings.Contains(string(r.body), secret) {
		t.Fatal("the secret is shown again in the triggers list")
	}
	if r := do(t, ts, "GET", "/v1/chains/"+chainID+"/export", nil, auth...); strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), hookID) {
		t.Fatal("the exported chain carries the hook")
	}

	runCount := func() int {
		r := do(t, ts, "GET", "/v1/runs?chain="+chainID, nil, auth...)
		wantStatus(t, r, http.StatusOK)
		return len(r.json(t)["runs"].([]any))
	}
	call := func(body string, headers ...string) resp {
		return do(t, ts, "POST", "/v1/hooks/"+hookID, body, headers...) // no token: the signature is the credential
	}
	body := `{"x":"from the hook"}`
	now := time.Now()
	for _, c := range []struct {
		name, body, sig, code string
		status                int
	}{
		{"unsigned", body, "", "missing_signature", 401},
		{"wrong secret", body, api.SignHook("not-the-secret", now, []byte(body)), "bad_signature", 401},
		{"body changed", body, api.SignHook(secret, now, []byte(`{"x":"other"}`)), "bad_signature", 401},
		{"six minutes old", body, api.SignHook(secret, now.Add(-6*time.Minute), []byte(body)), "stale_signature", 401},
		{"six minutes ahead", body, api.SignHook(secret, now.Add(6*time.Minute), []byte(body)), "stale_signature", 401},
		{"malformed header", body, "v1=abc", "bad_signature", 401},
		{"an array", `[1,2]`, api.SignHook(secret, now, []byte(`[1,2]`)), "not_an_object", 400},
		{"a string", `"hi"`, api.SignHook(secret, now, []byte(`"hi"`)), "not_an_object", 400},
		{"bad JSON", `{"x":`, api.SignHook(secret, now, []byte(`{"x":`)), "bad_json", 400},
	} {
		var h []string
		if c.sig != "" {
			h = []string{api.HookSignatureHeader, c.sig}
		}
		r := call(c.body, h...)
		if r.status != c.status || r.errCode(t) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.status, r.body, c.status, c.code)
		}
	}
	if n := runCount(); n != 0 {
		t.Fatalf("refused calls started %d runs", n)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/hooks/no-such-hook", body, api.HookSignatureHeader, api.SignHook(secret, now, []byte(body))), http.StatusNotFound)

	// Senders label the body as they like: the signature decides, not the
	// Content-Type (a form-labelled unsigned call is 401, not 415).
	if r := call(body, "Content-Type", "application/x-www-form-urlencoded"); r.status != 401 || r.errCode(t) != "missing_signature" {
		t.Errorf("unsigned form-labelled call: %d %s", r.status, r.body)
	}
	r = call(body, api.HookSignatureHeader, api.SignHook(secret, time.Now().Add(-4*time.Minute), []byte(body)), "Content-Type", "text/plain")
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	if r.header.Get("Location") != "/v1/runs/"+runID {
		t.Errorf("Location %q", r.header.Get("Location"))
	}
	waitIdle(t, srv, runID)
	run := do(t, ts, "GET", "/v1/runs/"+runID, nil, auth...).json(t)
	if run["status"] != "completed" || run["started_by"] != "webhook" || run["trigger_id"] != hookID || run["input"].(map[string]any)["x"] != "from the hook" {
		t.Fatalf("the hook's run: %v", run)
	}
	r = do(t, ts, "GET", "/v1/chains/"+chainID+"/triggers", nil, auth...)
	hooks := r.json(t)["hooks"].([]any)
	fs := hooks[0].(map[string]any)["firings"].([]any)
	if len(fs) != 1 || fs[0].(map[string]any)["run_id"] != runID || hooks[0].(map[string]any)["last_fired"] == nil {
		t.Fatalf("hook firings: %s", r.body)
	}
	// The runs list says what started each run.
	r = do(t, ts, "GET", "/v1/runs?chain="+chainID, nil, auth...)
	if !strings.Contains(string(r.body), `"started_by":"webhook"`) {
		t.Fatalf("runs list: %s", r.body)
	}
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+chainID+"/hooks/"+hookID, nil, auth...), http.StatusNoContent)
	wantStatus(t, call(body, api.HookSignatureHeader, api.SignHook(secret, time.Now(), []byte(body))), http.StatusNotFound)
}

// A synchronous hook answers with the final output when the run ends in
// time, and 202 with the run id when it does not.
func TestWebhookSync(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	fast := createChain(t, ts, fmt.Sprintf(linearDoc, "fast"))
	slow := createChain(t, ts, `{"name":"slow","nodes":[{"node_id":"wait","kind":"tool","name":"delay","input":{"ms":30000}}]}`)
	hook := func(doc string, timeoutMS int) (string, string) {
		r := do(t, ts, "POST", "/v1/chains/"+doc+"/hooks", fmt.Sprintf(`{"sync":true,"sync_timeout_ms":%d}`, timeoutMS))
		wantStatus(t, r, http.StatusCreated)
		m := r.json(t)
		return m["id"].(string), m["secret"].(string)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+fast+"/hooks", `{"sync":true,"sync_timeout_ms":600000}`), http.StatusUnprocessableEntity)

	id, secret := hook(fast, 10000)
	body := `{"x":"sync"}`
	r := do(t, ts, "POST", "/v1/hooks/"+id, body, api.HookSignatureHeader, api.SignHook(secret, time.Now(), []byte(body)))
	wantStatus(t, r, http.StatusOK)
	if m := r.json(t); m["status"] != "completed" || m["final_output"] == nil {
		t.Fatalf("sync answer: %s", r.body)
	}

	id, secret = hook(slow, 300)
	start := time.Now()
	r = do(t, ts, "POST", "/v1/hooks/"+id, `{}`, api.HookSignatureHeader, api.SignHook(secret, time.Now(), []byte(`{}`)))
	wantStatus(t, r, http.StatusAccepted)
	if took := time.Since(start); took > 10*time.Second { // the run itself takes 30s
		t.Fatalf("the sync timeout of 300ms answered after %v", took)
	}
	runID := r.json(t)["run_id"].(string)
	service(srv).Cancel(runID)
	waitIdle(t, srv, runID)
}

// A schedule saved through the API fires on the scheduler's fake clock: the
// run executes, says it was started by the schedule, and the firing is
// listed with it.
func TestScheduleFiresARun(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	chainID := createChain(t, ts, fmt.Sprintf(linearDoc, "timed"))
	r := do(t, ts, "POST", "/v1/chains/"+chainID+"/schedules", `{"cron":"*/10 * * * *","time_zone":"Asia/Tokyo","input":{"x":"tick"}}`)
	wantStatus(t, r, http.StatusCreated)
	sc := r.json(t)
	tick, err := time.Parse(time.RFC3339, sc["next_tick"].(string))
	if err != nil || tick.Minute()%10 != 0 {
		t.Fatalf("next tick %v %v", sc["next_tick"], err)
	}
	now := tick.Add(-time.Second)
	sched, err := runs.NewScheduler(runs.SchedulerOptions{Store: srv.DB, Starter: srv.Runs, Now: func() time.Time { return now }, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sched.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	r = do(t, ts, "GET", "/v1/runs?chain="+chainID, nil)
	if n := len(r.json(t)["runs"].([]any)); n != 0 {
		t.Fatalf("%d runs before the tick", n)
	}
	now = tick.Add(2 * time.Second)
	if _, err := sched.FireDue(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sched.FireDue(ctx); err != nil { // the same tick: nothing more
		t.Fatal(err)
	}
	r = do(t, ts, "GET", "/v1/runs?chain="+chainID, nil)
	list := r.json(t)["runs"].([]any)
	if len(list) != 1 {
		t.Fatalf("%d runs after one tick: %s", len(list), r.body)
	}
	runID := list[0].(map[string]any)["id"].(string)
	run := waitRun(t, ts, runID)
	if run["status"] != "completed" || run["started_by"] != "schedule" || run["trigger_id"] != sc["id"] || run["input"].(map[string]any)["x"] != "tick" {
		t.Fatalf("the scheduled run: %v", run)
	}
	r = do(t, ts, "GET", "/v1/chains/"+chainID+"/triggers", nil)
	got := r.json(t)["schedules"].([]any)[0].(map[string]any)
	f := got["firings"].([]any)[0].(map[string]any)
	if f["run_id"] != runID || f["outcome"] != "started" || got["last_tick"] != tick.UTC().Format(time.RFC3339) {
		t.Fatalf("schedule after its tick: %s", r.body)
	}
}

// A trigger cannot be added to a chain never published (there is nothing
// for it to run); a signed call to the hook of a chain whose published
// version has validation errors (the sub-chain it calls was deleted since)
// is 422 and starts nothing; a body over 1 MiB is 413.
func TestWebhookRefusals(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	blank := createChain(t, ts, `{"name":"never-published","nodes":[{"node_id":"a","kind":"tool","name":"no-such-tool"}]}`)
	for path, body := range map[string]string{"/hooks": `{}`, "/schedules": `{"cron":"0 * * * *"}`} {
		r := do(t, ts, "POST", "/v1/chains/"+blank+path, body)
		wantStatus(t, r, http.StatusConflict)
		if r.errCode(t) != "not_published" || !strings.Contains(string(r.body), "publish it first") {
			t.Fatalf("POST %s on a chain never published: %s", path, r.body)
		}
	}
	sub := createChain(t, ts, `{"name":"sub","nodes":[{"node_id":"e","kind":"tool","name":"echo"}]}`)
	bad := createChain(t, ts, `{"name":"broken","nodes":[{"node_id":"a","kind":"skill","name":"sub"}]}`)
	wantStatus(t, do(t, ts, "DELETE", "/v1/chains/"+sub, nil), http.StatusNoContent)
	r := do(t, ts, "POST", "/v1/chains/"+bad+"/hooks", `{}`)
	wantStatus(t, r, http.StatusCreated)
	id, secret := r.json(t)["id"].(string), r.json(t)["secret"].(string)
	r = do(t, ts, "POST", "/v1/hooks/"+id, `{}`, api.HookSignatureHeader, api.SignHook(secret, time.Now(), []byte(`{}`)))
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if r.errCode(t) != "chain_invalid" {
		t.Fatalf("invalid chain: %s", r.body)
	}
	big := `{"x":"` + strings.Repeat("a", api.MaxHookBody) + `"}`
	r = do(t, ts, "POST", "/v1/hooks/"+id, big, api.HookSignatureHeader, api.SignHook(secret, time.Now(), []byte(big)))
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if n := len(do(t, ts, "GET", "/v1/runs?chain="+bad, nil).json(t)["runs"].([]any)); n != 0 {
		t.Fatalf("%d runs started", n)
	}
}
