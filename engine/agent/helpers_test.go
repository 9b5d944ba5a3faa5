package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/anthropic"
	"github.com/chainstudio/studio/engine/llm/gemini"
	"github.com/chainstudio/studio/engine/llm/openai"
)

// chatRequest is the chat-completions request body as the fake server
// reads it off the wire.
type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
	Stream      bool      `json:"stream,omitempty"`
}

// reply is what the fake model answers to one call: n is the 1-based call
// number for that model name.
type reply func(n int, req chatRequest, r *http.Request) (status int, content string)

// fakeLLM is a local OpenAI-compatible chat-completions server.
type fakeLLM struct {
	*httptest.Server
	mu      sync.Mutex
	calls   map[string]int
	reqs    []chatRequest
	headers []http.Header
	replies map[string]reply
}

func newFakeLLM(t *testing.T, replies map[string]reply) *fakeLLM {
	t.Helper()
	f := &fakeLLM{calls: map[string]int{}, replies: replies}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":"not found: `+r.URL.Path+`"}`, http.StatusNotFound)
			return
		}
		var req chatRequest
		body, _ := io.ReadAll(r.Body) // read it all, so a client that gives up cancels r.Context()
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.calls[req.Model]++
		n := f.calls[req.Model]
		f.reqs = append(f.reqs, req)
		f.headers = append(f.headers, r.Header.Clone())
		fn := f.replies[req.Model]
		f.mu.Unlock()
		if fn == nil {
			http.Error(w, `{"error":"no such model `+req.Model+`"}`, http.StatusNotFound)
			return
		}
		status, content := fn(n, req, r)
		if status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write([]byte(content))
			return
		}
		if req.Stream {
			streamText(w, content)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
		})
	}))
	t.Cleanup(f.Close)
	return f
}

// streamText answers a streamed request as the Chat Completions API does:
// the content in a few chunks, the finish reason, then [DONE].
func streamText(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for rest := content; rest != ""; {
		piece := clip.Prefix(rest, max(4, len(content)/3))
		chunk(map[string]any{"content": piece}, nil)
		rest = rest[len(piece):]
	}
	chunk(map[string]any{}, "stop")
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
}

func (f *fakeLLM) url() string { return f.URL + "/v1" }

func (f *fakeLLM) count(model string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[model]
}

func say(content string) reply {
	return func(int, chatRequest, *http.Request) (int, string) { return http.StatusOK, content }
}

// parseSet builds a set from YAML documents (one agent each); "%URL%" is
// replaced by url.
func parseSet(t *testing.T, url string, docs ...string) (*Set, error) {
	t.Helper()
	var defs []*Definition
	for i, doc := range docs {
		doc = strings.ReplaceAll(doc, "%URL%", url)
		d, err := Parse([]byte(doc), "")
		if err != nil {
			return nil, err
		}
		_ = i
		defs = append(defs, d)
	}
	return NewSet(defs, LoadOptions{Tools: func(name string) bool { _, ok := builtin.Tools(builtin.Options{})[name]; return ok }, Providers: testProviders})
}

func mustSet(t *testing.T, url string, docs ...string) *Set {
	t.Helper()
	s, err := parseSet(t, url, docs...)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)
	return reg
}

// runAgent runs agent name's chain on a fresh engine and returns the engine
// result and the API response.
func runAgent(t *testing.T, s *Set, name string, query any, ctxv map[string]any) (*engine.Result, *Response) {
	t.Helper()
	return runAgentOn(t, &Runtime{Set: s}, name, query, ctxv)
}

// runAgentOn is runAgent on a runtime the test configured (its model
// client's environment, say); the registry is the test registry.
func runAgentOn(t *testing.T, rt *Runtime, name string, query any, ctxv map[string]any) (*engine.Result, *Response) {
	t.Helper()
	s := rt.Set
	reg := testRegistry()
	rt.Registry = reg
	eng := engine.New(engine.Options{Registry: reg, Agent: rt.RunNode})
	c, ok := s.RunChain(name)
	if !ok {
		t.Fatalf("no agent %q", name)
	}
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), RunInput(query, "sess-1", ctxv), engine.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, s.Report(name, res)
}

// link finds a link of a report by node id.
func link(t *testing.T, r *Response, id string) LinkReport {
	t.Helper()
	if r.Chain == nil {
		t.Fatalf("no chain in the response")
	}
	for _, l := range r.Chain.Links {
		if l.NodeID == id {
			return l
		}
	}
	t.Fatalf("no link %q in %s", id, dumpLinks(r))
	return LinkReport{}
}

func dumpLinks(r *Response) string {
	b, _ := json.MarshalIndent(r.Chain, "", "  ")
	return string(b)
}

// wantLink checks a link's status (and reason for skipped links).
func wantLink(t *testing.T, r *Response, id, status, reason string) LinkReport {
	t.Helper()
	l := link(t, r, id)
	if l.Status != status || l.Reason != reason {
		t.Fatalf("link %s: status %q reason %q, want %q %q\n%s", id, l.Status, l.Reason, status, reason, dumpLinks(r))
	}
	return l
}

func wantErrContains(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("error does not contain %q:\n%v", s, err)
		}
	}
}

// toolAgent is a tool: transform agent whose data is the JMESPath expression
// over {query, context, session_id}.
func toolAgent(name, expression, chain string) string {
	doc := "name: " + name + "\ntool: transform\ninput:\n  expression: '" + expression + "'\n"
	if chain != "" {
		doc += "spec:\n  chain:\n" + chain
	}
	return doc
}

// testProviders are the provider kinds the studio offers, as a host lists
// them.
var testProviders = llm.Kinds{openai.Kind, anthropic.Kind, gemini.Kind}
