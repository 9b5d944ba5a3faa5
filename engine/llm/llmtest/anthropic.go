package llmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Anthropic is an Anthropic Messages API server on loopback answering each
// POST /v1/messages with the next turn of its script: when the request
// asks for a stream, as the API's SSE events (message_start, a text block
// in several text_delta events, a tool_use block per call with its input
// split over input_json_delta events, message_delta with the stop reason
// and usage, message_stop), else as one Message.
type Anthropic struct {
	*httptest.Server
	script
}

// NewAnthropic starts the server; it closes when the test ends. Requests
// past the script are answered 500. A model's url is the server's URL
// (the SDK adds /v1/messages).
func NewAnthropic(t testing.TB, turns ...Turn) *Anthropic {
	t.Helper()
	f := &Anthropic{script: script{t: t, turns: turns}}
	fail := func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(anthropicError(status, msg))
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			fail(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
			return
		}
		req, n, ts, ok := f.take(w, r, fail)
		if !ok {
			return
		}
		w.Header().Set("Request-Id", "req_fake")
		if ts.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ts.Status)
			_, _ = w.Write(errorBody(ts, anthropicError))
			return
		}
		model, _ := req["model"].(string)
		stop := "end_turn"
		if len(ts.Calls) > 0 {
			stop = "tool_use"
		}
		in, out := 10*n, 3
		if req["stream"] != true || ts.Whole {
			var content []any
			if ts.Text != "" {
				content = append(content, map[string]any{"type": "text", "text": ts.Text})
			}
			for _, c := range ts.Calls {
				content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": f.object(c)})
			}
			if content == nil {
				content = []any{}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
				"content": content, "stop_reason": stop, "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": in, "output_tokens": out}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(v map[string]any) {
			b, _ := json.Marshal(v)
			_, _ = w.Write([]byte("event: " + v["type"].(string) + "\ndata: " + string(b) + "\n\n"))
			fl.Flush()
		}
		send(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_fake", "type": "message", "role": "assistant",
			"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
		index := 0
		if ts.Text != "" {
			send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
			send(map[string]any{"type": "ping"})
			for _, w := range words(ts.Text) {
				send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": w}})
			}
			if ts.Cut {
				return
			}
			send(map[string]any{"type": "content_block_stop", "index": index})
			index++
		}
		if ts.Cut || !hold(ts, r) {
			return
		}
		for _, c := range ts.Calls {
			send(map[string]any{"type": "content_block_start", "index": index,
				"content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}}})
			// The API's first input delta is often empty.
			half := len(c.Args) / 2
			for _, piece := range []string{"", c.Args[:half], c.Args[half:]} {
				send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
			}
			send(map[string]any{"type": "content_block_stop", "index": index})
			index++
		}
		send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": out}})
		send(map[string]any{"type": "message_stop"})
	}))
	t.Cleanup(f.Close)
	return f
}

// anthropicErrorTypes are the API's error types by status.
var anthropicErrorTypes = map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
	404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}

func anthropicError(status int, msg string) any {
	typ := anthropicErrorTypes[status]
	if typ == "" {
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_fake"}
}
