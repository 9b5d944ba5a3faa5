// Package llmtest holds scripted fakes of model servers for tests: each
// listens on loopback and speaks a provider's real wire format, streaming
// included, so that the official SDK on the other side cannot tell.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Turn is what the scripted model answers to one request: text (in
// pieces when streamed), tool calls, or an error status.
type Turn struct {
	Text   string
	Calls  []Call
	Status int    // non-200: an error answer with Body
	Body   string // the error body
	Header map[string]string
	Cut    bool // the stream stops in the middle, without [DONE]
	// Hold, when set, is waited for after the text is streamed and before
	// the calls are: a test sees the text arrive while the turn is open.
	Hold <-chan struct{}
}

// Call is one tool call of a turn; Args is its JSON arguments as sent.
type Call struct{ ID, Name, Args string }

// OpenAI is an OpenAI Chat Completions server on loopback answering each request
// with the next turn of its script, streamed (SSE chunks, tool-call
// arguments split over chunks, usage last) when the request asks for it.
type OpenAI struct {
	*httptest.Server
	mu    sync.Mutex
	turns []Turn
	seen  []map[string]any
}

// NewOpenAI starts the server; it closes when the test ends. Requests past
// the script are answered 500.
func NewOpenAI(t testing.TB, turns ...Turn) *OpenAI {
	t.Helper()
	f := &OpenAI{turns: turns}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, req)
		n := len(f.seen)
		f.mu.Unlock()
		if n > len(f.turns) {
			http.Error(w, `{"error":{"message":"the script has no turn `+fmt.Sprint(n)+`"}}`, http.StatusInternalServerError)
			return
		}
		ts := f.turns[n-1]
		for k, v := range ts.Header {
			w.Header().Set(k, v)
		}
		if ts.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ts.Status)
			_, _ = w.Write([]byte(ts.Body))
			return
		}
		finish := "stop"
		if len(ts.Calls) > 0 {
			finish = "tool_calls"
		}
		usage := map[string]any{"prompt_tokens": 10 * n, "completion_tokens": 3, "total_tokens": 10*n + 3}
		if req["stream"] != true {
			msg := map[string]any{"role": "assistant", "content": ts.Text}
			if len(ts.Calls) > 0 {
				var calls []any
				for _, c := range ts.Calls {
					calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
				}
				msg["tool_calls"] = calls
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "m",
				"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(v map[string]any) {
			v["id"], v["object"], v["model"] = "c", "chat.completion.chunk", "m"
			b, _ := json.Marshal(v)
			_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
			fl.Flush()
		}
		choice := func(delta map[string]any, fin any) map[string]any {
			return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
		}
		send(choice(map[string]any{"role": "assistant", "content": ""}, nil))
		for _, w := range strings.SplitAfter(ts.Text, " ") {
			if w != "" {
				send(choice(map[string]any{"content": w}, nil))
			}
		}
		if ts.Cut {
			return
		}
		if ts.Hold != nil {
			select {
			case <-ts.Hold:
			case <-r.Context().Done():
				return
			}
		}
		for i, c := range ts.Calls {
			half := len(c.Args) / 2
			send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args[:half]}}}}, nil))
			send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Args[half:]}}}}, nil))
		}
		send(choice(map[string]any{}, finish))
		send(map[string]any{"choices": []any{}, "usage": usage})
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	}))
	t.Cleanup(f.Close)
	return f
}

// Requests are the request bodies received so far, in order.
func (f *OpenAI) Requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.seen...)
}
