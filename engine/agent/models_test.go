package agent

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/tool"
)

// fakeModelList is an OpenAI-compatible server whose GET /v1/models answers
// status and body; it records the paths asked.
func fakeModelList(t *testing.T, status int, body string) (*httptest.Server, *[]string) {
	t.Helper()
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &paths
}

func TestModels(t *testing.T) {
	t.Parallel()
	srv, paths := fakeModelList(t, 200, `{"object":"list","data":[{"id":"llama3","object":"model"},{"id":"qwen2","object":"model"}]}`)
	mc := &ModelClient{HTTP: builtin.ModelHTTPClient(true), Providers: testProviders}
	for _, url := range []string{srv.URL + "/v1", srv.URL + "/v1/chat/completions?api-version=2024-06-01"} {
		ids, err := mc.Models(context.Background(), &Model{Name: "llama3", URL: url})
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		if strings.Join(ids, ",") != "llama3,qwen2" {
			t.Fatalf("%s: ids = %v", url, ids)
		}
	}
	if got := strings.Join(*paths, ","); got != "GET /v1/models,GET /v1/models" {
		t.Fatalf("asked %s", got)
	}
	// A credential's base_url is where the list is asked.
	ctx := tool.WithCredentials(context.Background(), fakeCredentials{"local": {Name: "local", Type: "openai_compatible",
		Values: map[string]any{"api_key": providerKey, "base_url": srv.URL + "/v1"}}})
	if ids, err := mc.Models(ctx, &Model{Name: "llama3", Credential: "local"}); err != nil || len(ids) != 2 {
		t.Fatalf("with a credential: %v, %v", ids, err)
	}
}

func TestModelsFailures(t *testing.T) {
	t.Parallel()
	ctx := tool.WithCredentials(context.Background(), fakeCredentials{"llm": {Name: "llm", Type: "openai", Hosts: []string{"127.0.0.1"}, Values: map[string]any{"api_key": providerKey}}})
	mc := &ModelClient{HTTP: builtin.ModelHTTPClient(true), Providers: testProviders}

	none, _ := fakeModelList(t, 404, `{"error":"not found"}`)
	_, err := mc.Models(ctx, &Model{Name: "m", URL: none.URL + "/v1", Credential: "llm"})
	var le *ModelListError
	if !errors.As(err, &le) || le.Refused || !errors.Is(err, llm.ErrNoModelList) {
		t.Fatalf("404: err = %v, want a ModelListError wrapping ErrNoModelList", err)
	}

	broken, _ := fakeModelList(t, 500, `{"error":{"message":"bad key `+providerKey+`"}}`)
	_, err = mc.Models(ctx, &Model{Name: "m", URL: broken.URL + "/v1", Credential: "llm"})
	if !errors.As(err, &le) || errors.Is(err, llm.ErrNoModelList) {
		t.Fatalf("500: err = %v, want a ModelListError", err)
	}
	if msg := err.Error(); strings.Contains(msg, providerKey) || !strings.Contains(msg, "model m at "+broken.URL+"/v1/models: ") || !strings.Contains(msg, "500") {
		t.Fatalf("500: message %q", msg)
	}

	// Not the server's fault: the studio cannot call the model.
	_, err = mc.Models(context.Background(), &Model{Name: "m", URL: broken.URL + "/v1", APIKeyEnv: "NOPE_NOT_SET_ANYWHERE"})
	if err == nil || errors.As(err, &le) || !strings.Contains(err.Error(), "NOPE_NOT_SET_ANYWHERE") {
		t.Fatalf("unset key: err = %v", err)
	}
}

// Without --model-allow-private a loopback model server is refused, in
// words that name the model, the URL, why and the flag.
func TestModelCallAddressRefused(t *testing.T) {
	t.Parallel()
	srv, paths := fakeModelList(t, 200, `{}`)
	mc := &ModelClient{HTTP: builtin.ModelHTTPClient(false), Providers: testProviders}
	m := &Model{Name: "llama3", URL: srv.URL + "/v1"}
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := mc.Chat(context.Background(), "", m, []Message{{Role: "user", Content: "hi"}})
	want := "model llama3 at http://" + host + "/v1/chat/completions: 127.0.0.1 is a loopback address; model calls reach loopback and private addresses only with --model-allow-private"
	if err == nil || err.Error() != want {
		t.Fatalf("chat: err = %v\nwant %s", err, want)
	}
	if !errors.Is(err, tool.ErrDenied) {
		t.Fatalf("chat: %v does not wrap tool.ErrDenied", err)
	}
	_, err = mc.Models(context.Background(), &Model{Name: "llama3", URL: srv.URL + "/v1"})
	var le *ModelListError
	if !errors.As(err, &le) || !le.Refused || !strings.HasSuffix(err.Error(), "only with --model-allow-private") {
		t.Fatalf("models: err = %v, want a refusal", err)
	}
	if len(*paths) != 0 {
		t.Fatalf("the server was reached: %v", *paths)
	}
}

func TestProviderInfos(t *testing.T) {
	t.Parallel()
	infos := ProviderInfos(testProviders)
	if len(infos) != len(testProviders) || infos[0].Name != DefaultProvider || infos[0].DefaultURL != "" {
		t.Fatalf("infos = %+v", infos)
	}
	for _, p := range infos {
		if len(p.CredentialTypes) == 0 || !p.ListsModels {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
}
