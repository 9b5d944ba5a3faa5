package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/runs"
)

// definedAgentServer is a studio with credentials and no agent files, whose
// agent nodes may define their agents, guarded as `studio serve` is
// without --model-allow-private.
func definedAgentServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	set, err := agent.NewSet(nil, agent.LoadOptions{Providers: testProviders, URLRefused: builtin.ModelURLRefused})
	if err != nil {
		t.Fatal(err)
	}
	return newVaultServerTuned(t, Config{Logger: testLogger()}, func(o *runs.Options) { o.Agents = set })
}

// An agent defined in its node is checked like every node: its config's
// mistakes, a credential of a type its provider does not take and a model
// URL the host will refuse are issues naming the field.
func TestDefinedAgentValidation(t *testing.T) {
	t.Parallel()
	srv, ts := definedAgentServer(t)
	h := roleTokens(t, srv)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"claude","type":"anthropic","fields":{"api_key":"sk-ant-test"}}`, h["admin"]...), http.StatusCreated)

	doc := func(config string) string {
		return `{"name":"d","nodes":[{"node_id":"ask","kind":"agent","config":` + config + `}]}`
	}
	type want struct{ rule, severity, field, says string }
	for _, tc := range []struct {
		name   string
		config string
		want   []want
	}{
		{"fits", `{"model":{"provider":"anthropic","credential":"claude","name":"claude-sonnet-4-5"},"prompt":"{{ query }}"}`, nil},
		{"wrong credential type", `{"model":{"credential":"claude","name":"gpt-4o-mini"}}`,
			[]want{{"credential_type", "error", "config.model.credential", "the openai provider takes openai or openai_compatible"}}},
		{"prompt and name", `{"model":{"provider":"anthropic","credential":"claude"},"prompt":"{{ query "}`,
			[]want{{"config_check", "error", "config.model.name", "model.name is required"}, {"config_check", "error", "config.prompt", "config.prompt"}}},
		{"private model url", `{"model":{"url":"http://10.1.2.3/v1","name":"llama3"}}`,
			[]want{{"host_policy", "warning", "config.model.url", "--model-allow-private"}}},
		{"schema type", `{"model":{"provider":"anthropic","credential":"claude","name":"m","temperature":"warm"}}`,
			[]want{{"input_schema", "error", "config.model.temperature", "want a number"}}},
	} {
		r := do(t, ts, "POST", "/v1/validate", doc(tc.config), h["editor"]...)
		wantStatus(t, r, http.StatusOK)
		issues := r.json(t)["issues"].([]any)
		if len(tc.want) == 0 && len(issues) > 0 {
			t.Errorf("%s: %s", tc.name, r.body)
		}
	next:
		for _, w := range tc.want {
			for _, is := range issues {
				m := is.(map[string]any)
				if m["rule"] == w.rule && m["severity"] == w.severity && m["field"] == w.field && m["node_id"] == "ask" && strings.Contains(m["message"].(string), w.says) {
					continue next
				}
			}
			t.Errorf("%s: no %+v in %s", tc.name, w, r.body)
		}
	}
}

// GET /v1/models asks the server a model block names for its models, as the
// agent node's form is filled in; a viewer may not (it calls out).
func TestListModelsOfAModelBlock(t *testing.T) {
	t.Parallel()
	srv, ts := definedAgentServer(t)
	h := roleTokens(t, srv)
	models := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"llama3.1:latest","object":"model"},{"id":"qwen2.5:7b","object":"model"}]}`)
	}))
	defer models.Close()

	q := "/v1/models?url=" + url.QueryEscape(models.URL+"/v1") + "&name=llama3.1"
	wantStatus(t, do(t, ts, "GET", q, nil, h["viewer"]...), http.StatusForbidden)
	r := do(t, ts, "GET", q, nil, h["editor"]...)
	wantStatus(t, r, http.StatusOK)
	m := r.json(t)
	if m["listed"] != true || m["has_model"] != true || fmt.Sprint(m["models"]) != "[llama3.1:latest qwen2.5:7b]" || m["provider"] != "openai" {
		t.Fatalf("models: %s", r.body)
	}
	for _, bad := range []struct{ q, path string }{
		{"?provider=acme", "provider"},
		{"?url=ftp://x", "url"},
		{"?model=x", "model"},
	} {
		r := do(t, ts, "GET", "/v1/models"+bad.q, nil, h["editor"]...)
		wantStatus(t, r, http.StatusBadRequest)
		if d := r.errDetails(t); d["path"] != bad.path {
			t.Errorf("%s: %s", bad.q, r.body)
		}
	}
}
