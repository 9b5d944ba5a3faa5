package web

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/web/api"
)

// Edits after a chain is published are a draft: runs by the API without a
// version, webhooks and skill calls keep running the published version
// until Publish moves it; the draft runs when asked for by name.
func TestDraftAndPublished(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "pub"))

	r := do(t, ts, "GET", "/v1/chains/"+id, nil)
	wantStatus(t, r, http.StatusOK)
	ch := r.json(t)
	if pub := ch["published"].(map[string]any); pub["version"] != 1.0 || ch["unpublished_changes"] != false {
		t.Fatalf("a new chain is published at version 1: %s", r.body)
	}

	// An edit: b now says which version it is.
	draft := strings.Replace(fmt.Sprintf(linearDoc, "pub"), `{"node_id":"b","kind":"tool","name":"echo"}`,
		`{"node_id":"b","kind":"tool","name":"echo","input":{"from":"draft"}}`, 1)
	r = do(t, ts, "PUT", "/v1/chains/"+id, draft, "If-Match", `"v1"`)
	wantStatus(t, r, http.StatusOK)
	if ch := r.json(t); ch["version"] != 2.0 || ch["unpublished_changes"] != true || ch["published"].(map[string]any)["version"] != 1.0 {
		t.Fatalf("after an edit: %s", r.body)
	}

	runAt := func(body string) (int, map[string]any) {
		t.Helper()
		r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", body)
		wantStatus(t, r, http.StatusAccepted)
		m := r.json(t)
		return int(m["chain_version"].(float64)), waitRun(t, ts, m["run_id"].(string))
	}
	if v, run := runAt(`{"input":{"x":1}}`); v != 1 || run["final_output"] != nil && strings.Contains(fmt.Sprint(run["final_output"]), "draft") {
		t.Fatalf("a run without a version ran version %d: %v", v, run["final_output"])
	}
	if v, run := runAt(`{"input":{"x":1},"version":"current"}`); v != 2 || !strings.Contains(fmt.Sprint(run["final_output"]), "draft") {
		t.Fatalf(`version "current" ran version %d: %v`, v, run["final_output"])
	}
	if v, _ := runAt(`{"version":1}`); v != 1 {
		t.Fatalf("version 1 ran version %d", v)
	}
	if v, _ := runAt(`{"version":"draft"}`); v != 2 {
		t.Fatalf(`version "draft" ran version %d, want the newest`, v)
	}
	for body, code := range map[string]string{`{"version":"newest"}`: "bad_parameter", `{"version":0}`: "bad_parameter", `{"version":{}}`: "bad_json"} {
		if r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", body); r.status != http.StatusBadRequest || r.errCode(t) != code {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"version":9}`), http.StatusNotFound)

	// Publish: a stale If-Match changes nothing; then the draft is published
	// with who and why, and runs without a version run it.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{"message":"ready"}`, "If-Match", `"v1"`)
	if r.status != http.StatusPreconditionFailed {
		t.Fatalf("stale If-Match: %d %s", r.status, r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{"message":"ready"}`, "If-Match", `"v2"`)
	wantStatus(t, r, http.StatusOK)
	ch = r.json(t)
	pub := ch["published"].(map[string]any)
	if pub["version"] != 2.0 || pub["message"] != "ready" || pub["by"] != "local" || ch["unpublished_changes"] != false {
		t.Fatalf("published: %s", r.body)
	}
	if at, err := time.Parse(time.RFC3339Nano, pub["at"].(string)); err != nil || time.Since(at) > time.Minute {
		t.Fatalf("published at %v (%v)", pub["at"], err)
	}
	if v, run := runAt(`{"input":{"x":1}}`); v != 2 || !strings.Contains(fmt.Sprint(run["final_output"]), "draft") {
		t.Fatalf("after Publish a run without a version ran version %d: %v", v, run["final_output"])
	}
	r = do(t, ts, "GET", "/v1/chains?name=pub", nil)
	wantStatus(t, r, http.StatusOK)
	if row := r.json(t)["chains"].([]any)[0].(map[string]any); row["published_version"] != 2.0 {
		t.Fatalf("list row: %v", row)
	}

	// An older version can be published again (a rollback).
	r = do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{"version":1,"message":"roll back"}`)
	wantStatus(t, r, http.StatusOK)
	if ch := r.json(t); ch["published"].(map[string]any)["version"] != 1.0 || ch["unpublished_changes"] != true {
		t.Fatalf("rolled back: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{"version":7}`), http.StatusNotFound)
	if r := do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{"message":"`+strings.Repeat("m", 501)+`"}`); r.errCode(t) != "message_too_long" {
		t.Fatalf("long message: %d %s", r.status, r.body)
	}
}

// A draft with validation errors is saved but cannot be published: the
// answer names the issue, and the published version stays.
func TestPublishRefusesAnInvalidDraft(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "broken"))
	bad := `{"name":"broken","nodes":[{"node_id":"a","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"nope"}]}`
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, bad, "If-Match", `"v1"`), http.StatusOK)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{}`)
	if r.status != http.StatusUnprocessableEntity || r.errCode(t) != "chain_invalid" || !strings.Contains(string(r.body), "nope") ||
		!strings.Contains(string(r.body), "version 2 cannot be published") {
		t.Fatalf("publishing an invalid draft: %d %s", r.status, r.body)
	}
	r = do(t, ts, "GET", "/v1/chains/"+id, nil)
	if r.json(t)["published"].(map[string]any)["version"] != 1.0 {
		t.Fatalf("the refused publish moved it: %s", r.body)
	}
	// The published version still runs.
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`)
	wantStatus(t, r, http.StatusAccepted)
}

// A webhook that fires while the chain is being edited runs the published
// version, not the half-edited draft.
func TestWebhookRunsThePublishedVersion(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "hooked-pub"))
	r := do(t, ts, "POST", "/v1/chains/"+id+"/hooks", `{}`)
	wantStatus(t, r, http.StatusCreated)
	hook := r.json(t)
	draft := strings.Replace(fmt.Sprintf(linearDoc, "hooked-pub"), `"edges":[{"source":"a","target":"b"}]`, `"edges":[]`, 1)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, draft, "If-Match", `"v1"`), http.StatusOK)
	body := `{"x":"hook"}`
	r = do(t, ts, "POST", "/v1/hooks/"+hook["id"].(string), body, api.HookSignatureHeader, api.SignHook(hook["secret"].(string), time.Now(), []byte(body)))
	wantStatus(t, r, http.StatusAccepted)
	if v := r.json(t)["chain_version"]; v != 1.0 {
		t.Fatalf("the hook ran version %v, want the published 1", v)
	}
}
