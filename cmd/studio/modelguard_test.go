package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// studio serve's agents reach a loopback model server only with
// --model-allow-private; without it the agent's answer says why and names
// the flag, and --http-allow-private does not open model calls.
func TestModelAllowPrivate(t *testing.T) {
	t.Parallel()
	bin := builtStudio(t)
	var calls atomic.Int32
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","model":"llama3","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello from the local model"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`)
	}))
	defer llm.Close()
	agents := t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "local.agent.yaml"), []byte("name: local\nmodel: {url: '"+llm.URL+"/v1', name: llama3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(flags ...string) map[string]any {
		p := startStudio(t, bin, filepath.Join(t.TempDir(), "s.db"), append([]string{"--agents", agents}, flags...)...)
		defer p.stop(t)
		code, out := p.do(t, "POST", "/v1/agents/local/run", map[string]any{"query": "hi"})
		if code != http.StatusOK {
			t.Fatalf("run %v: %d %v", flags, code, out)
		}
		return out
	}

	for _, flags := range [][]string{nil, {"--http-allow-private"}} {
		out := run(flags...)
		want := "model llama3 at " + llm.URL + "/v1/chat/completions: 127.0.0.1 is a loopback address; model calls reach loopback and private addresses only with --model-allow-private"
		if msg, _ := out["error"].(string); !strings.Contains(msg, want) {
			t.Fatalf("flags %v: answer %v\nwant an error with %s", flags, out, want)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("the model server was called %d times without the flag", n)
	}

	out := run("--model-allow-private")
	if out["answer"] != "hello from the local model" {
		t.Fatalf("with the flag: %v", out)
	}
}
