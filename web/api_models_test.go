package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/sqlite"
)

// newModelsServer starts a studio with the agents files declares, whose
// model calls go through modelHTTP.
func newModelsServer(t *testing.T, files map[string]string, modelHTTP *http.Client, tune ...func(*Server)) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := testRegistry()
	set, err := agent.LoadDir(dir, agent.LoadOptions{Tools: func(n string) bool { _, ok := reg.Get(n); return ok }, Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	deps := testDeps(t, db, reg, func(o *runs.Options) { o.Agents = set; o.ModelHTTP = modelHTTP })
	deps.ModelHTTP = modelHTTP
	srv, err := New(Config{Logger: testLogger()}, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	for _, f := range tune {
		f(srv)
	}
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return ts
}

// fakeOpenAIModels answers GET /v1/models with two models; GET
// /nolist/v1/models is a 404 (a server without a list), /broken/v1/models
// a 500 that echoes the key it was sent.
func fakeOpenAIModels(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"object":"list","data":[{"id":"llama3:latest","object":"model"},{"id":"qwen2","object":"model"}]}`)
		case "/slow/v1/models":
			<-r.Context().Done() // answers only when the studio gives up
		case "/broken/v1/models":
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"overloaded, key `+r.Header.Get("Authorization")+`"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"404 page not found"}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func modelAgentFiles(base string) map[string]string {
	return map[string]string{
		"local.agent.yaml":   "name: local\nmodel: {url: '" + base + "/v1', name: llama3}\n",
		"missing.agent.yaml": "name: missing\nmodel: {url: '" + base + "/v1', name: mistral}\n",
		"nolist.agent.yaml":  "name: nolist\nmodel: {url: '" + base + "/nolist/v1', name: m}\n",
		"broken.agent.yaml":  "name: broken\nmodel: {url: '" + base + "/broken/v1', name: m, api_key_env: STUDIO_TEST_MODELS_KEY}\n",
		"nokey.agent.yaml":   "name: nokey\nmodel: {url: '" + base + "/v1', name: m, api_key_env: STUDIO_TEST_MODELS_UNSET}\n",
		"slow.agent.yaml":    "name: slow\nmodel: {url: '" + base + "/slow/v1', name: m}\n",
		"tooly.agent.yaml":   "name: tooly\ntool: echo\n",
	}
}

// A server that does not answer within the list's time is a failed server.
func TestAgentModelsTimeout(t *testing.T) {
	t.Parallel()
	llm := fakeOpenAIModels(t)
	ts := newModelsServer(t, modelAgentFiles(llm.URL), builtin.ModelHTTPClient(true), func(s *Server) { s.ModelListWait = 100 * time.Millisecond })
	r := do(t, ts, "GET", "/v1/agents/slow/models", nil)
	wantStatus(t, r, http.StatusBadGateway)
	if !strings.Contains(string(r.body), "model m: the server did not answer the model list within 100ms") {
		t.Fatalf("slow: %s", r.body)
	}
}

func TestAgentModels(t *testing.T) {
	t.Setenv("STUDIO_TEST_MODELS_KEY", "sk-test-secret-key")
	llm := fakeOpenAIModels(t)
	ts := newModelsServer(t, modelAgentFiles(llm.URL), builtin.ModelHTTPClient(true))

	r := do(t, ts, "GET", "/v1/agents/local/models", nil)
	wantStatus(t, r, http.StatusOK)
	out := r.json(t)
	if out["agent"] != "local" || out["provider"] != "openai" || out["model"] != "llama3" || out["url"] != llm.URL+"/v1" ||
		out["listed"] != true || out["has_model"] != true || len(out["models"].([]any)) != 2 {
		t.Fatalf("local: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/missing/models", nil)
	wantStatus(t, r, http.StatusOK)
	if out := r.json(t); out["has_model"] != false || out["listed"] != true {
		t.Fatalf("missing: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/nolist/models", nil)
	wantStatus(t, r, http.StatusOK)
	if out := r.json(t); out["listed"] != false || len(out["models"].([]any)) != 0 || !strings.Contains(out["reason"].(string), "does not list its models") {
		t.Fatalf("nolist: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/broken/models", nil)
	wantStatus(t, r, http.StatusBadGateway)
	if msg := string(r.body); !strings.Contains(msg, "model_server_error") || !strings.Contains(msg, "overloaded") || strings.Contains(msg, "sk-test-secret-key") {
		t.Fatalf("broken: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/nokey/models", nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "model_unusable") || !strings.Contains(string(r.body), "STUDIO_TEST_MODELS_UNSET") {
		t.Fatalf("nokey: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/tooly/models", nil)
	wantStatus(t, r, http.StatusConflict)
	if !strings.Contains(string(r.body), "not_model_agent") {
		t.Fatalf("tooly: %s", r.body)
	}

	r = do(t, ts, "GET", "/v1/agents/nobody/models", nil)
	wantStatus(t, r, http.StatusNotFound)
}

// Without --model-allow-private the loopback server is refused, and the
// answer says so in the guard's words.
func TestAgentModelsAddressRefused(t *testing.T) {
	t.Parallel()
	llm := fakeOpenAIModels(t)
	ts := newModelsServer(t, modelAgentFiles(llm.URL), builtin.ModelHTTPClient(false))
	r := do(t, ts, "GET", "/v1/agents/local/models", nil)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	want := "model llama3 at " + llm.URL + "/v1/models: 127.0.0.1 is a loopback address; model calls reach loopback and private addresses only with --model-allow-private"
	if !strings.Contains(string(r.body), "model_address_refused") || !strings.Contains(string(r.body), want) {
		t.Fatalf("refused: %s\nwant %s", r.body, want)
	}
}

func TestProviders(t *testing.T) {
	t.Parallel()
	ts := newModelsServer(t, nil, nil)
	r := do(t, ts, "GET", "/v1/providers", nil)
	wantStatus(t, r, http.StatusOK)
	got := string(r.body)
	for _, want := range []string{`{"name":"openai","credential_types":["openai","openai_compatible"],"default_url":null,"lists_models":true}`,
		`"name":"anthropic","credential_types":["anthropic"],"default_url":"https://api.anthropic.com"`} {
		if !strings.Contains(got, want) {
			t.Fatalf("providers: %s\nwant %s", got, want)
		}
	}
}

// A model agent's page says where its calls go (the URL redacted, the key
// by its source, never its value) and offers the model list.
func TestAgentPageModel(t *testing.T) {
	t.Parallel()
	ts := newModelsServer(t, map[string]string{
		"hidden.agent.yaml": "name: hidden\nmodel: {url: 'http://admin:pw@127.0.0.1:9/v1?api_key=K', name: llama3, api_key_env: SOME_KEY}\n",
		"cloud.agent.yaml":  "name: cloud\nmodel: {provider: anthropic, name: claude-x, credential: anthropic-key}\n",
		"tooly.agent.yaml":  "name: tooly\ntool: echo\n",
	}, nil)
	get := func(path string) string {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
		return string(b)
	}
	body := get("/agents/hidden")
	for _, want := range []string{`id="agent-model"`, `data-model="llama3"`, "<dd>openai</dd>", "<code>http://***@127.0.0.1:9/v1?api_key=***</code>",
		"environment variable <code>SOME_KEY</code>", `id="list-models"`, `role="alert"`} {
		if !strings.Contains(body, want) {
			t.Errorf("hidden: the page lacks %q", want)
		}
	}
	if strings.Contains(body, "pw@") || strings.Contains(body, "api_key=K") {
		t.Errorf("hidden: the page shows the URL's secrets")
	}
	body = get("/agents/cloud")
	for _, want := range []string{"<dd>anthropic</dd>", "the provider&#39;s default, https://api.anthropic.com", "credential <code>anthropic-key</code>"} {
		if !strings.Contains(body, want) {
			t.Errorf("cloud: the page lacks %q", want)
		}
	}
	if body = get("/agents/tooly"); strings.Contains(body, `id="agent-model"`) {
		t.Errorf("a tool agent's page has a model section")
	}
}
