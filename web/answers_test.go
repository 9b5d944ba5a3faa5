package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/internal/testutil"
)

// pageForm posts the run page's answer form.
func pageForm(t *testing.T, ts *httptest.Server, path string, form url.Values, headers ...string) (int, string) {
	t.Helper()
	res, body := pageDo(t, ts.URL, "POST", path, "application/x-www-form-urlencoded", form.Encode(), headers...)
	return res.StatusCode, body
}

// paletteInterruptDoc: an interrupt node as the palette adds it (a prompt
// only: no schema, proposed value or outcome edges), then a step after it.
const paletteInterruptDoc = `{"name":"palette-interrupt","nodes":[
	{"node_id":"prep","kind":"tool","name":"echo","input_map":{"amount":"input.amount"}},
	{"node_id":"ask","kind":"interrupt","label":"Check the amount","config":{"prompt":"Pay it?"}},
	{"node_id":"after","kind":"tool","name":"echo","input_map":{"answer":"ask.output"}}],
	"edges":[{"source":"prep","target":"ask"},{"source":"ask","target":"after"}]}`

// The same decision on the same pause means one thing whichever door it
// comes through: the API, the run page's form, and the inbox (which posts
// the body static/js/inbox.js builds to the answer URL it is given). Reject
// without a rejected edge fails the run at the node; approve outputs the
// proposed value (the node's input) and the run goes on; each is audited
// as what was clicked.
func TestAnswerFromEveryDoorIsOneAnswer(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, paletteInterruptDoc)
	paused := func() string {
		t.Helper()
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"amount":7}}`)
		wantStatus(t, r, 202)
		run := r.json(t)["run_id"].(string)
		if m := waitRun(t, ts, run); m["status"] != "paused" {
			t.Fatalf("not paused: %v", m)
		}
		return run
	}
	doors := map[string]func(run, action string){
		"api": func(run, action string) {
			wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"action":"`+action+`"}`), 200)
		},
		"run page": func(run, action string) {
			code, body := pageForm(t, ts, "/runs/"+run+"/resume", url.Values{"decision": {action}, "pause_id": {"ask"}})
			if code != 200 && code != 303 || strings.Contains(body, "Could not resume") {
				t.Fatalf("page answer %s: %d %s", action, code, body)
			}
		},
		"inbox": func(run, action string) {
			items := do(t, ts, "GET", "/v1/interrupts?run="+run, nil).json(t)["interrupts"].([]any)
			if len(items) != 1 {
				t.Fatalf("inbox: %v", items)
			}
			it := items[0].(map[string]any)
			body, _ := json.Marshal(map[string]any{"action": action, "pause_id": it["node_id"]})
			wantStatus(t, do(t, ts, "POST", it["answer_url"].(string), string(body)), 200)
		},
	}
	type outcome struct {
		Status, Action, ErrCode, After string
		Rejected                       bool // the run's error says the node was rejected
	}
	for _, action := range []string{engine.ActionApprove, engine.ActionReject} {
		got := map[string]outcome{}
		for door, answer := range doors {
			run := paused()
			answer(run, action)
			var m map[string]any
			testutil.Eventually(t, 10*time.Second, func() error {
				m = do(t, ts, "GET", "/v1/runs/"+run, nil).json(t)
				if st := m["status"]; st == "running" || st == "paused" || st == "queued" {
					return fmt.Errorf("the run of %s answered from %s is %v", action, door, st)
				}
				return nil
			})
			o := outcome{Status: m["status"].(string)}
			if a := m["answers"].([]any); len(a) == 1 {
				o.Action = a[0].(map[string]any)["action"].(string)
			}
			if e, _ := m["error"].(map[string]any); e != nil {
				o.ErrCode, _ = e["code"].(string)
				msg, _ := e["message"].(string)
				o.Rejected = strings.Contains(msg, "rejected by local")
			}
			if out, ok := m["outputs"].(map[string]any)["after"]; ok {
				b, _ := json.Marshal(out)
				o.After = string(b)
			}
			got[door] = o
		}
		want := outcome{Status: "completed", Action: "approve", After: `{"answer":{"amount":7}}`}
		if action == engine.ActionReject {
			want = outcome{Status: "failed", Action: "reject", ErrCode: engine.CodeNodeError, Rejected: true}
		}
		for door, o := range got {
			if o != want {
				t.Errorf("%s from %s: %+v, want %+v (every door: %+v)", action, door, o, want, got)
			}
		}
	}
}

// config.approvers is enforced, not only shown: a name or role not listed
// gets 403 not_an_approver naming who may (an admin too), on the API and
// the page form; a listed name or role answers.
func TestApproversAreEnforced(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)
	run := pausedWhileRunning(t, srv, ts, runningPauseDoc("named-approvers", `,"approvers":["approver1","finance"]`), h["editor"])

	r := do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"action":"approve"}`, h["admin"]...)
	if r.status != 403 || r.errCode(t) != "not_an_approver" || !strings.Contains(string(r.body), "approver1, finance") {
		t.Fatalf("an admin not among the approvers: %d %s", r.status, r.body)
	}
	if d := r.errDetails(t); d["pause_id"] != "ask" || d["user"] != "admin1" {
		t.Fatalf("details: %v", d)
	}
	code, body := pageForm(t, ts, "/runs/"+run+"/resume", url.Values{"decision": {"reject"}, "pause_id": {"ask"}}, h["admin"]...)
	if code != 403 || !strings.Contains(body, "may be answered only by approver1, finance") {
		t.Fatalf("page form from an admin not among the approvers: %d %s", code, body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"action":"approve"}`, h["approver"]...), http.StatusOK)

	// A role listed lets in whoever has it.
	run2 := pausedWhileRunning(t, srv, ts, runningPauseDoc("role-approvers", `,"approvers":["admin"]`), h["editor"])
	r = do(t, ts, "POST", "/v1/runs/"+run2+"/resume", `{"action":"approve"}`, h["approver"]...)
	if r.status != 403 || r.errCode(t) != "not_an_approver" {
		t.Fatalf("approver not among the approvers: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run2+"/resume", `{"action":"approve"}`, h["admin"]...), http.StatusOK)
}

// An answer cannot patch state: approve with modified_state is refused with
// 422 naming the field, nothing is claimed, and the run still waits.
func TestAnswerCannotPatchState(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, expenseDoc("NoPatch", ""))
	runID := pausedExpense(t, ts, id)
	r := do(t, ts, "POST", "/v1/runs/"+runID+"/resume", `{"action":"approve","modified_state":{"payee":"mallory","amount":99999}}`)
	wantStatus(t, r, 422)
	if r.errCode(t) != engine.CodeAnswerPatchesState || r.errDetails(t)["field"] != "modified_state" {
		t.Fatalf("answer with a state patch: %s", r.body)
	}
	m := do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)
	if a, _ := m["answers"].([]any); m["status"] != "paused" || len(a) != 0 {
		t.Fatalf("after the refusal: %v", m)
	}
}

// The inbox card names the node by its label, the id beside it (a map
// item's pause by its node's label and the pause id).
func TestInboxCardNamesTheNodeByItsLabel(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, paletteInterruptDoc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"amount":7}}`)
	run := r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	_, html := pageDo(t, ts.URL, "GET", "/inbox?run="+run, "", "")
	if !strings.Contains(html, `<span class="node-label">Check the amount</span> <code class="node-id">ask</code>`) {
		t.Errorf("the card does not name the node by its label:\n%s", html)
	}

	maps := createChain(t, ts, `{"name":"labelled-map","nodes":[
{"node_id":"review","kind":"map","label":"Review each","items_path":"input.items","map_node":"ask"},
{"node_id":"ask","kind":"tool","name":"interrupt","input_map":{"prompt":"item"}}],"edges":[]}`)
	r = do(t, ts, "POST", "/v1/chains/"+maps+"/runs", `{"input":{"items":["a"]}}`)
	run = r.json(t)["run_id"].(string)
	waitRun(t, ts, run)
	_, html = pageDo(t, ts.URL, "GET", "/inbox?run="+run, "", "")
	if !strings.Contains(html, `<span class="node-label">Review each</span> <code class="node-id">review</code> <code class="pause-id">review[0]</code>`) {
		t.Errorf("a map item's card:\n%s", html)
	}
}

// statePatches returns the outputs of the run's state_patch events, read
// from its event stream (a run that ended: the stream replays and closes).
func statePatches(t *testing.T, ts *httptest.Server, run string, auth ...string) []map[string]any {
	t.Helper()
	r := do(t, ts, "GET", "/v1/runs/"+run+"/events", nil, auth...)
	wantStatus(t, r, 200)
	var out []map[string]any
	for _, line := range strings.Split(string(r.body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !strings.Contains(data, `"phase":"state_patch"`) { // the last frame is the run, not an event
			continue
		}
		var e engine.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if e.Phase == engine.PhaseStatePatch {
			out = append(out, e.Output.(map[string]any))
		}
	}
	return out
}

// Every state patch is an event with the patch and who sent it, on the
// run's timeline: the resume of a failed run (API) and a re-run (page form).
func TestStatePatchesAreRecordedWithTheirSender(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)
	r := do(t, ts, "POST", "/v1/chains", `{"name":"f","nodes":[
		{"node_id":"a","kind":"tool","name":"echo"},
		{"node_id":"b","kind":"tool","name":"fail","input_map":{"until_attempt":"state.attempts"}}],
		"edges":[{"source":"a","target":"b"}]}`, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{}`, h["editor"]...)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "failed", h["viewer"])
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"modified_state":{"attempts":1}}`, h["editor"]...), 200)
	waitStatus(t, ts, run, "completed", h["viewer"])
	p := statePatches(t, ts, run, h["viewer"]...)
	if b, _ := json.Marshal(p); string(b) != `[{"by":"editor1","patch":{"attempts":1}}]` {
		t.Fatalf("state patch events of the resumed run: %s", b)
	}
	_, html := pageDo(t, ts.URL, "GET", "/runs/"+run, "", "", h["viewer"]...)
	if !strings.Contains(html, `state patched by editor1: {&#34;attempts&#34;:1}`) {
		t.Errorf("the timeline does not show the patch:\n%s", html)
	}

	code, body := pageForm(t, ts, "/runs/"+run+"/rerun", url.Values{"node": {"b"}, "modified_state": {`{"attempts":2,"note":"try"}`}}, h["admin"]...)
	if code != 303 && code != 200 || strings.Contains(body, "Could not") {
		t.Fatalf("re-run from the page: %d %s", code, body)
	}
	var rerun string
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, x := range do(t, ts, "GET", "/v1/runs", nil, h["viewer"]...).json(t)["runs"].([]any) {
			if m := x.(map[string]any); m["parent_run_id"] == run && m["status"] != "running" && m["status"] != "queued" {
				rerun = m["id"].(string)
				return nil
			}
		}
		return fmt.Errorf("the re-run of %s has not ended", run)
	})
	if b, _ := json.Marshal(statePatches(t, ts, rerun, h["viewer"]...)); string(b) != `[{"by":"admin1","patch":{"attempts":2,"note":"try"}}]` {
		t.Fatalf("state patch events of the re-run: %s", b)
	}
}

// The approvers of an interrupt inside a sub-chain (a skill node's chain)
// are enforced too: its pause "<skill>/<inner id>" is checked against the
// inner interrupt's approvers.
func TestApproversOfASubChainsPauseAreEnforced(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{}, testRegistry())
	h := roleTokens(t, srv)
	wantStatus(t, do(t, ts, "POST", "/v1/chains", `{"name":"inner-approval","nodes":[
	{"node_id":"q","kind":"interrupt","config":{"prompt":"inner?","approvers":["admin1"]}}],"edges":[]}`, h["editor"]...), http.StatusCreated)
	r := do(t, ts, "POST", "/v1/chains", `{"name":"outer","nodes":[
	{"node_id":"sk","kind":"skill","name":"inner-approval"},{"node_id":"after","kind":"tool","name":"echo"}],
	"edges":[{"source":"sk","target":"after"}]}`, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "paused", h["viewer"])
	r = do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"value":"yes","pause_id":"sk/q"}`, h["approver"]...)
	if r.status != 403 || r.errCode(t) != "not_an_approver" || !strings.Contains(string(r.body), "admin1") {
		t.Fatalf("approver answers a sub-chain pause only admin1 may: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+run+"/resume", `{"value":"yes","pause_id":"sk/q"}`, h["admin"]...), http.StatusOK)
	waitStatus(t, ts, run, "completed", h["viewer"])
}
