package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A server's answer to a request that carried a stored credential is
// withheld from viewers and approvers, on every door that shows a run:
// the run's answer, its events, the value routes, the pages, the diff and
// the expression preview. Editors see it, and so does everyone once
// --viewers-see-credentialed-output is set.
func TestCredentialedOutputsWithheldFromViewers(t *testing.T) {
	t.Parallel()
	const answer = "upstream-private-answer"
	var calls atomic.Int32
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"account":"%s-%d"}`, answer, calls.Add(1)) // two runs differ
	}))
	defer stub.Close()

	for _, open := range []bool{false, true} {
		srv, ts := newVaultServerConfig(t, Config{Logger: testLogger(), ViewersSeeCredentialed: open})
		h := roleTokens(t, srv)
		wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"github","type":"bearer","fields":{"token":"`+credToken+`"},"hosts":["127.0.0.1"]}`, h["admin"]...), http.StatusCreated)
		// get calls with the credential; plain echoes a constant after it.
		doc := fmt.Sprintf(`{"name":"calls","nodes":[
			{"node_id":"get","kind":"tool","name":"http","input":{"url":%q,"auth":{"credential":"github"}}},
			{"node_id":"plain","kind":"tool","name":"echo","input":{"visible":"yes"}}],
			"edges":[{"source":"get","target":"plain"}]}`, stub.URL+"/user")
		r := do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
		wantStatus(t, r, http.StatusCreated)
		id := r.json(t)["id"].(string)
		run := func() string {
			r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
			wantStatus(t, r, http.StatusAccepted)
			run := r.json(t)["run_id"].(string)
			waitStatus(t, ts, run, "completed", h["editor"])
			return run
		}
		a, b := run(), run()
		type door struct{ method, path, body string }
		doors := []door{
			{"GET", "/v1/runs/" + a, ""}, {"GET", "/v1/runs/" + a + "/events", ""}, {"GET", "/v1/runs/" + a + "/nodes/get/output", ""},
			{"GET", "/runs/" + a + "/nodes/get", ""}, {"GET", "/runs/" + a + "/events", ""},
			{"GET", "/v1/runs/" + a + "/diff/" + b, ""}, {"GET", "/runs/" + a + "/diff/" + b, ""},
			{"POST", "/v1/chains/" + id + "/expr/preview", `{"node":"plain","field":"input_map.x","expr":"get.output.body","run_id":"` + a + `"}`},
			// the node view: get's own output, and what plain received from it
			{"GET", "/chains/" + id + "/nodes/get/view?run=" + a, ""}, {"GET", "/chains/" + id + "/nodes/plain/view?run=" + a, ""},
		}
		for _, role := range []string{"viewer", "approver", "editor", "admin"} {
			hides := !open && (role == "viewer" || role == "approver")
			for _, d := range doors {
				var body any
				if d.body != "" {
					body = d.body
				}
				r := do(t, ts, d.method, d.path, body, h[role]...)
				wantStatus(t, r, http.StatusOK)
				if got := strings.Contains(string(r.body), answer); got == hides {
					t.Errorf("open=%v %s %s %s: shows the credentialed answer: %v\n%.600s", open, role, d.method, d.path, got, r.body)
				}
			}
			for _, p := range []string{"/runs/" + a, "/runs/" + a + "/timeline"} { // they show no outputs, to anyone
				if r := do(t, ts, "GET", p, nil, h[role]...); r.status != http.StatusOK || strings.Contains(string(r.body), answer) {
					t.Errorf("%s GET %s: %d, shows the answer", role, p, r.status)
				}
			}
			if hides { // what did not come from the credentialed call still shows
				r := do(t, ts, "GET", "/v1/runs/"+a, nil, h[role]...)
				if !strings.Contains(string(r.body), `"visible":"yes"`) || !strings.Contains(string(r.body), `"withheld"`) {
					t.Errorf("%s: the run's answer hides the plain node's output or does not say what is withheld: %s", role, r.body)
				}
			}
		}
	}
}

// A run whose final output is the credentialed call's answer withholds it
// there too, on the run's answer, the final-output route and the page's
// controls.
func TestCredentialedFinalOutputWithheld(t *testing.T) {
	t.Parallel()
	const answer = "upstream-private-answer"
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"account":%q}`, answer)
	}))
	defer stub.Close()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"github","type":"bearer","fields":{"token":"`+credToken+`"},"hosts":["127.0.0.1"]}`, h["admin"]...), http.StatusCreated)
	doc := fmt.Sprintf(`{"name":"last","nodes":[{"node_id":"get","kind":"tool","name":"http","input":{"url":%q,"auth":{"credential":"github"}}}]}`, stub.URL+"/user")
	r := do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "completed", h["editor"])
	for _, p := range []string{"/v1/runs/" + run, "/v1/runs/" + run + "/final-output", "/runs/" + run + "/controls"} {
		for role, hides := range map[string]bool{"viewer": true, "editor": false} {
			r := do(t, ts, "GET", p, nil, h[role]...)
			wantStatus(t, r, http.StatusOK)
			if got := strings.Contains(string(r.body), answer); got == hides {
				t.Errorf("%s GET %s: shows the answer: %v\n%.600s", role, p, got, r.body)
			}
		}
	}
}
