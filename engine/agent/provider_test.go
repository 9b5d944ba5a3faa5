package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// fakeCredentials is a credential store holding secrets by name.
type fakeCredentials map[string]*tool.Secret

func (f fakeCredentials) Credential(_ context.Context, name string) (*tool.Secret, error) {
	s, ok := f[name]
	if !ok {
		return nil, fmt.Errorf("no credential %q", name)
	}
	return s, nil
}

const providerKey = "sk-provider-secret-1234"

// wire is what a fake provider saw of one call.
type wire struct {
	path, key string
	body      map[string]any
}

// fakeProvider is a loopback server answering POST path with answer (for
// model "good") or a 401 whose message echoes the key it was sent.
func fakeProvider(t *testing.T, path, keyHeader string, answer string) (*httptest.Server, func() []wire) {
	t.Helper()
	var mu sync.Mutex
	var seen []wire
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		key := r.Header.Get(keyHeader)
		mu.Lock()
		seen = append(seen, wire{path: r.URL.Path, key: key, body: body})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, strings.Split(path, "NAME")[0]) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"not found"}}`))
			return
		}
		if strings.Contains(r.URL.Path+fmt.Sprint(body["model"]), "bad") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","code":401,"status":"UNAUTHENTICATED","message":"key %s is not valid"}}`, key)
			return
		}
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []wire {
		mu.Lock()
		defer mu.Unlock()
		return append([]wire(nil), seen...)
	}
}

// runAgentCtx is runAgentOn with the run's context (its credential store).
func runAgentCtx(t *testing.T, ctx context.Context, rt *Runtime, name string) *Response {
	t.Helper()
	reg := testRegistry()
	rt.Registry = reg
	eng := engine.New(engine.Options{Registry: reg, Agent: rt.RunNode})
	c, ok := rt.Set.RunChain(name)
	if !ok {
		t.Fatalf("no agent %q", name)
	}
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, c), RunInput("Who are you?", "sess-1", nil), engine.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rt.Set.Report(name, res)
}

func TestAgentThroughEachProvider(t *testing.T) {
	t.Parallel()
	cases := []struct {
		provider, credType, path, keyHeader, keyPrefix, answer, reply string
		// url is the model's url given the fake's; "" leaves it out (the
		// credential's base_url gives it).
		url func(srv string) string
		// system finds the system prompt in the request body.
		system func(body map[string]any) any
	}{
		{provider: "openai", credType: "openai", path: "/v1/chat/completions", keyHeader: "Authorization", keyPrefix: "Bearer ",
			answer: `{"id":"c1","object":"chat.completion","created":0,"model":"good-2026","choices":[{"index":0,"message":{"role":"assistant","content":"I am GPT."},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}`,
			reply:  "I am GPT.", url: func(s string) string { return s + "/v1" },
			system: func(b map[string]any) any { return b["messages"].([]any)[0].(map[string]any)["content"] }},
		{provider: "openai", credType: "openai_compatible", path: "/v1/chat/completions", keyHeader: "Authorization", keyPrefix: "Bearer ",
			answer: `{"id":"c1","object":"chat.completion","created":0,"model":"good-2026","choices":[{"index":0,"message":{"role":"assistant","content":"I am local."},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}`,
			reply:  "I am local.", url: func(string) string { return "" },
			system: func(b map[string]any) any { return b["messages"].([]any)[0].(map[string]any)["content"] }},
		{provider: "anthropic", credType: "anthropic", path: "/v1/messages", keyHeader: "X-Api-Key",
			answer: `{"id":"msg_1","type":"message","role":"assistant","model":"good-2026","content":[{"type":"text","text":"I am Claude."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":4}}`,
			reply:  "I am Claude.", url: func(s string) string { return s },
			system: func(b map[string]any) any {
				if blocks, ok := b["system"].([]any); ok && len(blocks) > 0 {
					return blocks[0].(map[string]any)["text"]
				}
				return b["system"]
			}},
		{provider: "gemini", credType: "gemini", path: "/v1beta/models/NAME:generateContent", keyHeader: "X-Goog-Api-Key",
			answer: `{"candidates":[{"content":{"role":"model","parts":[{"text":"I am Gemini."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":4,"totalTokenCount":15},"modelVersion":"good-2026"}`,
			reply:  "I am Gemini.", url: func(s string) string { return s },
			system: func(b map[string]any) any {
				return b["systemInstruction"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
			}},
	}
	for _, tc := range cases {
		t.Run(tc.provider+"/"+tc.credType, func(t *testing.T) {
			t.Parallel()
			srv, seen := fakeProvider(t, tc.path, tc.keyHeader, tc.answer)
			// A provider key goes to its provider's API unless an admin
			// lists the host; an openai_compatible one to its base_url.
			secret := &tool.Secret{Name: "llm", Type: tc.credType, Values: map[string]any{"api_key": providerKey}, Hosts: []string{"127.0.0.1"}}
			if tc.credType == "openai_compatible" {
				secret.Values["base_url"] = srv.URL + "/v1"
				secret.Hosts = nil
			}
			ctx := tool.WithCredentials(context.Background(), fakeCredentials{"llm": secret})
			doc := func(name string) string {
				d := "name: " + name + "\nsystem_prompt: Be brief.\nmodel:\n  provider: " + tc.provider + "\n  name: " + name + "\n  credential: llm\n  stream: false\n"
				if u := tc.url(srv.URL); u != "" {
					d += "  url: '" + u + "'\n"
				}
				return d
			}
			s := mustSet(t, "", doc("good"), doc("bad"))
			rt := &Runtime{Set: s, Model: ModelClient{Providers: testProviders, Getenv: func(string) string { t.Error("api_key_env is read"); return "" }}}

			good, _ := s.Get("good")
			bad, _ := s.Get("bad")
			r := runAgentCtx(t, ctx, rt, "good")
			if r.Result["answer"] != tc.reply {
				t.Fatalf("answer %+v (error %q)", r.Result, r.Error)
			}
			w := seen()[0]
			if want := strings.ReplaceAll(tc.path, "NAME", "good"); w.path != want {
				t.Fatalf("path %q, want %q", w.path, want)
			}
			if w.key != tc.keyPrefix+providerKey {
				t.Fatalf("%s %q, want the credential's key", tc.keyHeader, w.key)
			}
			if got := tc.system(w.body); got != "Be brief." {
				t.Fatalf("system prompt %v in %v", got, w.body)
			}
			a, err := rt.Model.Chat(ctx, "good", good.Model, []Message{{Role: "user", Content: "hi"}})
			if err != nil || a.Content != tc.reply || a.Model != "good-2026" || a.InputTokens != 11 || a.OutputTokens != 4 || !a.Reported {
				t.Fatalf("answer %+v, %v", a, err)
			}

			r = runAgentCtx(t, ctx, rt, "bad")
			_, err = rt.Model.Chat(ctx, "bad", bad.Model, []Message{{Role: "user", Content: "hi"}})
			wantErrContains(t, err, "model bad at http://127.0.0.1:", strings.ReplaceAll(tc.path, "NAME", "bad")+": "+tc.provider+": ", "401", "is not valid")
			if !strings.Contains(r.Error, "401") {
				t.Fatalf("the run does not say what the server said: %q", r.Error)
			}
			for _, e := range []string{err.Error(), r.Error} {
				if strings.Contains(e, providerKey) {
					t.Fatalf("the key is in an error: %s", e)
				}
			}
		})
	}
}

// A model's key goes only to its credential's allowed hosts: a model whose
// url points elsewhere is refused before anything is sent, and so is a
// redirect from the allowed server to another host.
func TestModelKeyOnlyToAllowedHosts(t *testing.T) {
	t.Parallel()
	var stolen atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stolen.Add(1) }))
	t.Cleanup(attacker.Close)
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
	bouncer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, attackerURL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(bouncer.Close)
	msgs := []Message{{Role: "user", Content: "hi"}}
	mc := &ModelClient{Providers: testProviders}
	for _, tc := range []struct {
		name  string
		sec   *tool.Secret
		model Model
		want  []string
	}{
		{"openai key, no list, url elsewhere", &tool.Secret{Name: "llm", Type: "openai", Values: map[string]any{"api_key": providerKey}},
			Model{Name: "m", URL: attackerURL + "/v1", Credential: "llm"}, []string{`credential "llm" may not be sent to localhost:`, "api.openai.com"}},
		{"anthropic key, no list, url elsewhere", &tool.Secret{Name: "llm", Type: "anthropic", Values: map[string]any{"api_key": providerKey}},
			Model{Provider: "anthropic", Name: "m", URL: attackerURL, Credential: "llm"}, []string{`credential "llm" may not be sent to localhost:`, "api.anthropic.com"}},
		{"listed host redirects elsewhere", &tool.Secret{Name: "llm", Type: "anthropic", Values: map[string]any{"api_key": providerKey}, Hosts: []string{"127.0.0.1"}},
			Model{Provider: "anthropic", Name: "m", URL: bouncer.URL, Credential: "llm", Stream: new(bool)}, []string{`credential "llm" may not be sent to localhost:`, "127.0.0.1"}},
		{"listed host redirects elsewhere (gemini)", &tool.Secret{Name: "llm", Type: "gemini", Values: map[string]any{"api_key": providerKey}, Hosts: []string{"127.0.0.1"}},
			Model{Provider: "gemini", Name: "m", URL: bouncer.URL, Credential: "llm", Stream: new(bool)}, []string{`credential "llm" may not be sent to localhost:`, "127.0.0.1"}},
	} {
		ctx := tool.WithCredentials(context.Background(), fakeCredentials{"llm": tc.sec})
		_, err := mc.Chat(ctx, "a", &tc.model, msgs)
		wantErrContains(t, err, tc.want...)
		if strings.Contains(err.Error(), providerKey) {
			t.Fatalf("%s: the key is in the error: %v", tc.name, err)
		}
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the host not on the list got %d requests", n)
	}
}

func TestModelCredentialErrors(t *testing.T) {
	t.Parallel()
	mc := &ModelClient{Providers: testProviders}
	msgs := []Message{{Role: "user", Content: "hi"}}
	secret := func(typ string) context.Context {
		return tool.WithCredentials(context.Background(), fakeCredentials{"llm": {Name: "llm", Type: typ, Values: map[string]any{"api_key": providerKey}}})
	}
	cases := []struct {
		ctx  context.Context
		m    Model
		want []string
	}{
		{secret("anthropic"), Model{Name: "m", URL: "http://127.0.0.1:1/v1", Credential: "llm"},
			[]string{`credential "llm" is of type anthropic, which the openai provider cannot use (it takes openai or openai_compatible)`}},
		{secret("openai_compatible"), Model{Provider: "anthropic", Name: "m", Credential: "llm"},
			[]string{`credential "llm" is of type openai_compatible, which the anthropic provider cannot use (it takes anthropic)`}},
		{secret("bearer"), Model{Provider: "gemini", Name: "m", Credential: "llm"},
			[]string{`credential "llm" is of type bearer, which the gemini provider cannot use (it takes gemini)`}},
		{secret("openai"), Model{Name: "m", Credential: "llm"},
			[]string{"model.url is required", `credential "llm" gives no base URL`}},
		{context.Background(), Model{Name: "m", URL: "http://127.0.0.1:1/v1", Credential: "llm"},
			[]string{`model.credential "llm"`, "this host has no credential store"}},
		{secret("openai"), Model{Name: "m", URL: "http://127.0.0.1:1/v1", Credential: "other"},
			[]string{`credential "other": no credential "other"`}},
	}
	for _, tc := range cases {
		_, err := mc.Chat(tc.ctx, "a", &tc.m, msgs)
		wantErrContains(t, err, tc.want...)
		if strings.Contains(err.Error(), providerKey) {
			t.Fatalf("the key is in an error: %v", err)
		}
		if tc.ctx == context.Background() && !errors.Is(err, tool.ErrNoCredentials) {
			t.Fatalf("no store is not ErrNoCredentials: %v", err)
		}
	}
}

func TestModelBlockRules(t *testing.T) {
	t.Parallel()
	cases := []struct{ doc, want string }{
		{"name: a\nmodel: {provider: mistral, url: 'http://x/v1', name: m}\n", `model.provider "mistral" is not a provider the studio knows (openai, anthropic, gemini)`},
		{"name: a\nmodel: {url: 'http://x/v1', name: m, credential: llm, api_key_env: K}\n", "model.credential and model.api_key_env are both set"},
		{"name: a\nmodel: {name: m}\n", "model.url is required"},
		{"name: a\nmodel: {provider: openai, name: m, api_key_env: K}\n", "model.url is required"},
		{"name: a\nmodel: {provider: anthropic, url: 'ftp://x', name: m}\n", `model.url "ftp://x" must start with http:// or https://`},
		{"name: a\nmodel: {provider: anthropic, name: claude-x, credential: llm}\n", ""},
		{"name: a\nmodel: {provider: gemini, name: gemini-x}\n", ""},
		{"name: a\nmodel: {name: m, credential: llm}\n", ""},
		{"name: a\nmodel: {provider: openai, url: 'http://x/v1', name: m, credential: llm}\n", ""},
	}
	for _, tc := range cases {
		_, err := parse([]byte(tc.doc), "agents/a.agent.yaml", testProviders)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.doc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), `agents/a.agent.yaml: agent "a": `+tc.want) {
			t.Errorf("%q:\n got %v\nwant agents/a.agent.yaml: agent \"a\": %s", tc.doc, err, tc.want)
		}
	}
}

func TestOpenAIURLForms(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.RequestURI())
		mu.Unlock()
		// No Content-Type: gateways that mislabel their JSON keep working.
		_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`))
	}))
	defer srv.Close()
	forms := map[string]string{
		srv.URL + "/v1":  "/v1/chat/completions",
		srv.URL + "/v1/": "/v1/chat/completions",
		srv.URL + "/openai/deployments/x/chat/completions?api-version=1": "/openai/deployments/x/chat/completions?api-version=1",
		srv.URL + "/gateway/complete":                                    "/gateway/complete",
	}
	mc := &ModelClient{Providers: testProviders}
	for url, want := range forms {
		out, err := mc.Complete(context.Background(), &Model{URL: url, Name: "m"}, []Message{{Role: "user", Content: "x"}})
		mu.Lock()
		last := ""
		if len(got) > 0 {
			last = got[len(got)-1]
		}
		mu.Unlock()
		if err != nil || out != "ok" || last != want {
			t.Fatalf("%s: %q %v, sent to %s, want %s", url, out, err, last, want)
		}
	}
}
