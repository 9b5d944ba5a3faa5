// Package llmtest holds scripted fakes of model servers for tests: each
// listens on loopback and speaks a provider's real wire format, streaming
// included, so that the official SDK on the other side cannot tell.
package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Turn is what the scripted model answers to one request: text (in
// pieces when streamed), tool calls, or an error status.
type Turn struct {
	Text   string
	Calls  []Call
	Status int // non-200: an error answer with Body
	// Body is the error body: sent as written when it is a JSON object,
	// else the message of an error in the provider's own shape.
	Body   string
	Header map[string]string
	// Cut stops the stream in the middle, after the text: without [DONE]
	// (OpenAI), message_stop (Anthropic) or the chunk with the finish
	// reason (Gemini).
	Cut bool
	// Hold, when set, is waited for after the text is streamed and before
	// the calls are: a test sees the text arrive while the turn is open.
	Hold <-chan struct{}
	// Refusal is the model declining (OpenAI's refusal field; the
	// OpenAI fake only).
	Refusal string
	// Whole answers a request for a stream with the whole reply, as a
	// server that ignores stream: true does: the JSON reply (OpenAI,
	// Anthropic), or for Gemini's :streamGenerateContent the JSON array of
	// its chunks (what the API sends without alt=sse), Content-Type
	// application/json.
	Whole bool
}

// Call is one tool call of a turn; Args is its JSON arguments as sent.
type Call struct{ ID, Name, Args string }

// OpenAI is an OpenAI Chat Completions server on loopback answering each request
// with the next turn of its script, streamed (SSE chunks, tool-call
// arguments split over chunks, usage last) when the request asks for it.
type OpenAI struct {
	*httptest.Server
	script
}

// NewOpenAI starts the server; it closes when the test ends. Requests past
// the script are answered 500.
func NewOpenAI(t testing.TB, turns ...Turn) *OpenAI {
	t.Helper()
	f := &OpenAI{script: script{t: t, turns: turns}}
	fail := func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(openAIError(status, msg))
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, n, ts, ok := f.take(w, r, fail)
		if !ok {
			return
		}
		if ts.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ts.Status)
			_, _ = w.Write(errorBody(ts, openAIError))
			return
		}
		finish := "stop"
		if len(ts.Calls) > 0 {
			finish = "tool_calls"
		}
		usage := map[string]any{"prompt_tokens": 10 * n, "completion_tokens": 3, "total_tokens": 10*n + 3}
		if req["stream"] != true || ts.Whole {
			msg := map[string]any{"role": "assistant", "content": ts.Text}
			if ts.Refusal != "" {
				msg["refusal"] = ts.Refusal
			}
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
		for _, w := range words(ts.Text) {
			send(choice(map[string]any{"content": w}, nil))
		}
		for _, w := range words(ts.Refusal) {
			send(choice(map[string]any{"refusal": w}, nil))
		}
		if ts.Cut || !hold(ts, r) {
			return
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

func openAIError(_ int, msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": "fake_error"}}
}
