package web

import (
	"net/http"
	"strings"
	"testing"
)

// GET /v1/templates lists the templates; POST /v1/templates/{id}/chains
// makes a chain of one, under the name given or the template's (made
// free); an unknown template is 404 and a taken name 409.
func TestTemplatesAPI(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	list := do(t, ts, "GET", "/v1/templates", nil)
	wantStatus(t, list, http.StatusOK)
	var tmpl map[string]any
	for _, x := range list.json(t)["templates"].([]any) {
		if x.(map[string]any)["id"] == "webhook-notify" {
			tmpl = x.(map[string]any)
		}
	}
	if tmpl == nil || tmpl["name"] == "" || tmpl["description"] == "" || tmpl["nodes"].(float64) < 3 || tmpl["tests"].(float64) < 2 {
		t.Fatalf("templates: %s", list.body)
	}
	r := do(t, ts, "POST", "/v1/templates/webhook-notify/chains", `{"name":"Uptime"}`)
	wantStatus(t, r, http.StatusCreated)
	if ch := r.json(t); ch["name"] != "Uptime" || len(ch["doc"].(map[string]any)["nodes"].([]any)) != int(tmpl["nodes"].(float64)) {
		t.Fatalf("created: %s", r.body)
	}
	for i, want := range []string{tmpl["name"].(string), tmpl["name"].(string) + " (2)"} {
		r := do(t, ts, "POST", "/v1/templates/webhook-notify/chains", nil)
		wantStatus(t, r, http.StatusCreated)
		if got := r.json(t)["name"]; got != want {
			t.Fatalf("chain %d from the template is named %v, want %q", i+1, got, want)
		}
	}
	for body, want := range map[string]string{`{"name":"Uptime"}`: "name_taken", `{"name":7}`: "bad_json"} {
		if r := do(t, ts, "POST", "/v1/templates/webhook-notify/chains", body); r.errCode(t) != want {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	if r := do(t, ts, "POST", "/v1/templates/nope/chains", `{}`); r.status != http.StatusNotFound || r.errCode(t) != "not_found" {
		t.Errorf("unknown template: %d %s", r.status, r.body)
	}
}

// The LLM triage names its model key as a credential: in a studio without
// it, the chain made from the template says so (its one issue, an error
// naming the credential and where to add it); once an admin adds it, the
// chain has no issue at all.
func TestTemplateNamesItsMissingCredential(t *testing.T) {
	t.Parallel()
	_, ts := definedAgentServer(t)
	r := do(t, ts, "POST", "/v1/templates/llm-triage/chains", nil)
	wantStatus(t, r, http.StatusCreated)
	ch := r.json(t)
	issues := ch["issues"].([]any)
	if len(issues) != 1 {
		t.Fatalf("issues: %v", issues)
	}
	is := issues[0].(map[string]any)
	if is["rule"] != "unknown_credential" || is["severity"] != "error" || is["node_id"] != "classify" ||
		!strings.Contains(is["message"].(string), `"openai-api"`) || !strings.Contains(is["message"].(string), "Settings → Credentials") {
		t.Fatalf("the missing credential: %v", is)
	}
	// an http credential will not do for a model
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"openai-api","type":"bearer","fields":{"token":"sk-test"},"hosts":["api.openai.com"]}`), http.StatusCreated)
	r = do(t, ts, "GET", "/v1/chains/"+ch["id"].(string), nil)
	if issues := r.json(t)["issues"].([]any); len(issues) != 1 || issues[0].(map[string]any)["rule"] != "credential_type" {
		t.Fatalf("with a bearer credential: %v", issues)
	}
	wantStatus(t, do(t, ts, "DELETE", "/v1/credentials/openai-api", nil), http.StatusNoContent)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"openai-api","type":"openai","fields":{"api_key":"sk-test"}}`), http.StatusCreated)
	r = do(t, ts, "GET", "/v1/chains/"+ch["id"].(string), nil)
	wantStatus(t, r, http.StatusOK)
	if issues := r.json(t)["issues"].([]any); len(issues) != 0 {
		t.Fatalf("with the credential: %v", issues)
	}
}
