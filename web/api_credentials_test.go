package web

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
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
	deps := testDeps(t, db, reg, func(o *runs.Options) { o.Credentials = v })
	deps.Vault = v
	srv, err := New(Config{Logger: testLogger()}, deps)
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

	body := `{"name":"github","type":"bearer","fields":{"token":"` + credToken + `"}}`
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
	if c, _ := srv.vault.Get(context.Background(), "github"); c.LastUsed.IsZero() {
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
		r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: a run of the chain: %d %s", cred, r.status, r.body)
		}
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
