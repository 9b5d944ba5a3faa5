package web

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/store/vault"
)

// newVaultServer is a studio with a credentials vault whose http tool may
// reach loopback (the stub servers of these tests).
func newVaultServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	return newVaultServerConfig(t, Config{Logger: testLogger()})
}

func newVaultServerConfig(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	return newVaultServerTuned(t, cfg, nil)
}

// newVaultServerTuned is newVaultServerConfig with a say in the run
// service's options (the agents, say).
func newVaultServerTuned(t *testing.T, cfg Config, tune func(*runs.Options)) (*Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{HTTPAllowPrivate: true}))
	for _, ti := range builtin.Catalog() {
		reg.SetInputSchema(ti.Name, ti.InputSchema)
	}
	deps := testDeps(t, db, reg, func(o *runs.Options) {
		o.Credentials = v
		if tune != nil {
			tune(o)
		}
	})
	deps.Vault = v
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return srv, ts
}

const credToken = "ghp_credential-test-value-0123456789"

// A chain's http node authenticates with a stored credential: the stub gets
// the header, and the value is in no answer of the API (the credential, the
// run, its events, its nodes, the export).
func TestCredentialUsedByNameNeverShown(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+credToken {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok":true,"you_sent":%q}`, r.Header.Get("Authorization"))
	}))
	defer stub.Close()

	body := `{"name":"github","type":"bearer","fields":{"token":"` + credToken + `"},"hosts":["127.0.0.1"]}`
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", body, h["editor"]...), http.StatusForbidden)
	r := do(t, ts, "POST", "/v1/credentials", body, h["admin"]...)
	wantStatus(t, r, http.StatusCreated)
	seen := []string{string(r.body)}
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", body, h["admin"]...), http.StatusConflict)

	viewer := do(t, ts, "GET", "/v1/credentials", nil, h["viewer"]...)
	wantStatus(t, viewer, 200)
	if strings.Contains(string(viewer.body), `"set"`) || !strings.Contains(string(viewer.body), `"name":"github"`) {
		t.Fatalf("a viewer sees more than names: %s", viewer.body)
	}
	editor := do(t, ts, "GET", "/v1/credentials/github", nil, h["editor"]...)
	if !strings.Contains(string(editor.body), `"set":["token"]`) {
		t.Fatalf("an editor does not see which fields are set: %s", editor.body)
	}
	seen = append(seen, string(viewer.body), string(editor.body))

	doc := fmt.Sprintf(`{"name":"calls","nodes":[{"node_id":"get","kind":"tool","name":"http","input":{"url":%q,"auth":{"credential":"github"}}}]}`, stub.URL+"/user")
	r = do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "completed", h["editor"])
	for _, path := range []string{"/v1/runs/" + run, "/v1/runs/" + run + "/events", "/v1/chains/" + id + "/export", "/v1/chains/" + id} {
		r := do(t, ts, "GET", path, nil, h["admin"]...)
		wantStatus(t, r, 200)
		seen = append(seen, string(r.body))
	}
	if !strings.Contains(seen[len(seen)-4], `[credential]`) {
		t.Fatalf("the stub's echo was not scrubbed in the run: %s", seen[len(seen)-4])
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(credToken))
	for _, s := range seen {
		if strings.Contains(s, credToken) || strings.Contains(s, b64) {
			t.Fatalf("an answer holds the credential: %s", s)
		}
	}
	if c, _ := srv.Vault.Get(context.Background(), "github"); c.LastUsed.IsZero() {
		t.Fatal("the use was not recorded")
	}
}

// Validation names a missing credential, one of a type an HTTP request
// cannot carry, and one limited to other chains; importing a chain that
// names a missing credential saves it with the problem shown.
func TestCredentialReferencesValidated(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	for _, b := range []string{
		`{"name":"llm","type":"openai","fields":{"api_key":"sk-0123456789"}}`,
		`{"name":"narrow","type":"bearer","fields":{"token":"narrow-0123456789"},"chains":["some-other-chain"]}`,
	} {
		wantStatus(t, do(t, ts, "POST", "/v1/credentials", b, h["admin"]...), http.StatusCreated)
	}
	node := func(cred string) string {
		return fmt.Sprintf(`{"name":"v-%s","nodes":[{"node_id":"get","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/","auth":{"credential":%q}}}]}`, cred, cred)
	}
	for cred, rule := range map[string]string{"missing": "unknown_credential", "llm": "credential_type", "narrow": "credential_not_allowed"} {
		r := do(t, ts, "POST", "/v1/chains/import", node(cred), h["editor"]...)
		wantStatus(t, r, http.StatusCreated)
		if !strings.Contains(string(r.body), `"rule":"`+rule+`"`) || !strings.Contains(string(r.body), `\"`+cred+`\"`) {
			t.Errorf("%s: no %s issue naming it: %s", cred, rule, r.body)
		}
		id := r.json(t)["id"].(string)
		r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{},"version":"draft"}`, h["editor"]...)
		want := http.StatusUnprocessableEntity
		if cred == "narrow" { // a draft naming a chain-limited credential needs the publish permission first
			want = http.StatusForbidden
		}
		if r.status != want {
			t.Errorf("%s: a run of the chain: %d %s", cred, r.status, r.body)
		}
	}
}

// An editor cannot get a credential's value by pointing an http node at a
// server of its own: the request is refused before it is sent, and the run
// says which credential and which host, and how an admin opens it. A
// credential without allowed hosts shows as unusable.
func TestCredentialNotSentToAnEditorsServer(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	var stolen atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stolen.Add(1) }))
	defer attacker.Close()
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"github","type":"bearer","fields":{"token":"`+credToken+`"},"hosts":["127.0.0.1"]}`, h["admin"]...), http.StatusCreated)
	r := do(t, ts, "POST", "/v1/credentials", `{"name":"nowhere","type":"bearer","fields":{"token":"`+credToken+`"}}`, h["admin"]...)
	wantStatus(t, r, http.StatusCreated)
	if m := r.json(t); m["usable"] != false {
		t.Fatalf("a bearer credential without hosts: %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/credentials/github", nil, h["editor"]...)
	if m := r.json(t); fmt.Sprint(m["hosts"]) != "[127.0.0.1]" || m["usable"] != true {
		t.Fatalf("hosts in the API: %s", r.body)
	}
	doc := fmt.Sprintf(`{"name":"steal","nodes":[{"node_id":"get","kind":"tool","name":"http","input":{"url":%q,"auth":{"credential":"github"}}}]}`, attackerURL+"/steal")
	r = do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := r.json(t)["run_id"].(string)
	waitStatus(t, ts, run, "failed", h["editor"])
	r = do(t, ts, "GET", "/v1/runs/"+run, nil, h["editor"]...)
	for _, want := range []string{`credential \"github\" may not be sent to localhost:`, "Settings → Credentials"} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("the run does not say %s: %s", want, r.body)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the editor's server got %d requests", n)
	}
	page := do(t, ts, "GET", "/settings/credentials", nil, h["admin"]...)
	if !strings.Contains(string(page.body), "no allowed hosts: unusable") || !strings.Contains(string(page.body), "127.0.0.1") {
		t.Fatalf("the page does not show the hosts: %s", page.body)
	}
}

// Bad input to the credentials API: precise refusals, nothing stored.
func TestCredentialAPIRefusals(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	for _, b := range []string{
		`{"name":"a b","type":"bearer","fields":{"token":"x"}}`,
		`{"name":"x","type":"nope","fields":{"token":"x"}}`,
		`{"name":"x","type":"basic","fields":{"username":"u"}}`,
		`{"name":"x","type":"bearer","fields":{"token":"a\r\nX-Injected: 1"}}`,
		`{"name":"x","type":"bearer","fields":{"token":7}}`,
		`{"name":"x","type":"bearer","fields":{"token":"x"},"hosts":["*.com"]}`,
		`{"name":"x","type":"bearer","fields":{"token":"x"},"hosts":["https://u:p@api.example.com/"]}`,
	} {
		r := do(t, ts, "POST", "/v1/credentials", b, h["admin"]...)
		if r.status != http.StatusUnprocessableEntity || r.errCode(t) != "invalid_credential" {
			t.Errorf("%s: %d %s", b, r.status, r.body)
		}
	}
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":`, h["admin"]...), http.StatusBadRequest)
	if r := do(t, ts, "GET", "/v1/credentials", nil, h["admin"]...); !strings.Contains(string(r.body), `"credentials":[]`) {
		t.Fatalf("refused adds stored something: %s", r.body)
	}
	wantStatus(t, do(t, ts, "PATCH", "/v1/credentials/none", `{"fields":{"token":"x"}}`, h["admin"]...), http.StatusNotFound)
	wantStatus(t, do(t, ts, "DELETE", "/v1/credentials/none", nil, h["admin"]...), http.StatusNotFound)
}

// Editors publish ordinary chains, but not one that is triggered or names
// a chain-limited credential, nor run the draft of one that names such a
// credential: a publisher or an admin does. The refusal says why and who
// may.
func TestPublishGateForTriggeredAndCredentialChains(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	plain := `{"name":"plain","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"x":1}}]}`
	r := do(t, ts, "POST", "/v1/chains", plain, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	plainID := r.json(t)["id"].(string)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+plainID+"/publish", `{}`, h["editor"]...), http.StatusOK)

	// A chain with a webhook.
	r = do(t, ts, "POST", "/v1/chains", strings.Replace(plain, `"plain"`, `"hooked"`, 1), h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	hookedID := r.json(t)["id"].(string)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+hookedID+"/hooks", `{}`, h["editor"]...), http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+hookedID+"/publish", `{}`, h["editor"]...)
	if r.status != http.StatusForbidden || r.errCode(t) != "publish_required" || !strings.Contains(string(r.body), "it has a webhook") || !strings.Contains(string(r.body), "publisher") {
		t.Fatalf("an editor publishes a chain with a webhook: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+hookedID+"/publish", `{}`, h["publisher"]...), http.StatusOK)

	// A chain naming a credential limited to it.
	doc := `{"name":"narrow","nodes":[{"node_id":"get","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/","auth":{"credential":"narrow"}}}]}`
	r = do(t, ts, "POST", "/v1/chains", doc, h["editor"]...)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"narrow","type":"bearer","fields":{"token":"narrow-0123456789"},"hosts":["127.0.0.1"],"chains":["`+id+`"]}`, h["admin"]...), http.StatusCreated)
	// The editor's draft, v2, sends it elsewhere on the allowed host.
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id, strings.Replace(doc, "127.0.0.1:1/", "127.0.0.1:2/other", 1), append([]string{"If-Match", `"v1"`}, h["editor"]...)...), http.StatusOK)
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"version":"current"}`, h["editor"]...)
	if r.status != http.StatusForbidden || r.errCode(t) != "publish_required" || !strings.Contains(string(r.body), `credential \"narrow\"`) {
		t.Fatalf("an editor runs the draft of a chain with a limited credential: %d %s", r.status, r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{}`, h["editor"]...)
	if r.status != http.StatusForbidden || r.errCode(t) != "publish_required" {
		t.Fatalf("an editor publishes a chain with a limited credential: %d %s", r.status, r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"version":"current"}`, h["publisher"]...), http.StatusAccepted)
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/publish", `{}`, h["admin"]...), http.StatusOK)
	// The published version is what an admin looked at: an editor runs it.
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`, h["editor"]...), http.StatusAccepted)
}

// The Settings → Credentials form sets the allowed hosts (one a line); a
// save that leaves them empty keeps them; a bad one is said on the page.
func TestCredentialsPageSetsHosts(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	form := url.Values{"name": {"gh"}, "type": {"bearer"}, "field.token": {credToken}, "all_chains": {"1"}, "hosts": {"api.github.com\r\n*.githubusercontent.com\r\n"}}
	if res := postForm(t, ts, "/settings/credentials", form, h["admin"]...); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d", res.StatusCode)
	}
	form.Set("hosts", "")
	form.Set("field.token", "")
	if res := postForm(t, ts, "/settings/credentials", form, h["admin"]...); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save again: %d", res.StatusCode)
	}
	cr, err := srv.Vault.Get(context.Background(), "gh")
	if err != nil || strings.Join(cr.Hosts, " ") != "api.github.com *.githubusercontent.com" {
		t.Fatalf("hosts: %+v %v", cr, err)
	}
	status, body := pageForm(t, ts, "/settings/credentials", url.Values{"name": {"gh"}, "type": {"bearer"}, "hosts": {"*.com"}}, append([]string{"Origin", ts.URL}, h["admin"]...)...)
	if status != http.StatusUnprocessableEntity || !strings.Contains(body, `allowed host &#34;*.com&#34;`) {
		t.Fatalf("a bad host: %d %s", status, body)
	}
}

// The Credentials page warns of a model credential whose base URL the
// studio's address policy will refuse, naming the flag that opens it.
func TestCredentialsPageWarnsOfARefusedBaseURL(t *testing.T) {
	t.Parallel()
	srv, ts := newVaultServer(t)
	h := roleTokens(t, srv)
	for _, b := range []string{
		`{"name":"local-llm","type":"openai_compatible","fields":{"base_url":"http://127.0.0.1:11434/v1"}}`,
		`{"name":"hosted-llm","type":"openai_compatible","fields":{"base_url":"https://llm.example.com/v1","api_key":"sk-0123456789"}}`,
	} {
		wantStatus(t, do(t, ts, "POST", "/v1/credentials", b, h["admin"]...), http.StatusCreated)
	}
	r := do(t, ts, "GET", "/settings/credentials", nil, h["admin"]...)
	wantStatus(t, r, http.StatusOK)
	body := string(r.body)
	if strings.Count(body, "--model-allow-private") != 1 || !strings.Contains(body, "127.0.0.1 is a loopback address") {
		t.Fatalf("the page does not warn of the refused base URL (once, for local-llm):\n%s", body)
	}
}
