package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Gemini is a Gemini API server on loopback answering each
// POST /v1beta/models/{model}:generateContent (one response) and
// :streamGenerateContent?alt=sse (a chunk per word of text, then a chunk
// per call, the last with finishReason STOP) with the next turn of its
// script. Calls are functionCall parts with their Args as the args object
// and no id (the API gives none; the provider makes them up), each signed
// with thoughtSignature base64("sig-"+ID) as thinking models do, so a test
// can check the signature comes back; Signature gives the value.
type Gemini struct {
	*httptest.Server
	script
}

// Signature is the thoughtSignature the fake gives call c, as sent
// (base64).
func Signature(c Call) string {
	return base64.StdEncoding.EncodeToString([]byte("sig-" + c.ID))
}

// NewGemini starts the server; it closes when the test ends. Requests past
// the script are answered 500. A model's url is the server's URL (the SDK
// adds /v1beta/models/…).
func NewGemini(t testing.TB, turns ...Turn) *Gemini {
	t.Helper()
	f := &Gemini{script: script{t: t, turns: turns}}
	fail := func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(geminiError(status, msg))
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, found := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
		model, method, _ := strings.Cut(rest, ":")
		streamed := method == "streamGenerateContent"
		if r.Method != http.MethodPost || !found || model == "" || (!streamed && method != "generateContent") {
			fail(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
			return
		}
		_, n, ts, ok := f.take(w, r, fail)
		if !ok {
			return
		}
		if ts.Status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ts.Status)
			_, _ = w.Write(errorBody(ts, geminiError))
			return
		}
		usage := map[string]any{"promptTokenCount": 10 * n, "candidatesTokenCount": 3, "totalTokenCount": 10*n + 3}
		chunk := func(parts []any, finish bool, usage map[string]any) map[string]any {
			cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
			if finish {
				cand["finishReason"] = "STOP"
			}
			return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": model, "responseId": "resp_fake"}
		}
		call := func(c Call) map[string]any {
			return map[string]any{"functionCall": map[string]any{"name": c.Name, "args": f.object(c)}, "thoughtSignature": Signature(c)}
		}
		if !streamed {
			parts := []any{}
			if ts.Text != "" {
				parts = append(parts, map[string]any{"text": ts.Text})
			}
			for _, c := range ts.Calls {
				parts = append(parts, call(c))
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(chunk(parts, true, usage))
			return
		}
		var whole []any // the chunks, when the turn is answered whole
		var send func(v map[string]any)
		if ts.Whole {
			send = func(v map[string]any) { whole = append(whole, v) }
			defer func() {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(whole)
			}()
		} else {
			if r.URL.Query().Get("alt") != "sse" {
				fail(w, http.StatusBadRequest, "this fake streams only with alt=sse")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fl := w.(http.Flusher)
			send = func(v map[string]any) {
				b, _ := json.Marshal(v)
				_, _ = w.Write([]byte("data: " + string(b) + "\r\n\r\n"))
				fl.Flush()
			}
		}
		// Each chunk's usage is the running total: the prompt first.
		prompt := map[string]any{"promptTokenCount": 10 * n, "totalTokenCount": 10 * n}
		for _, w := range words(ts.Text) {
			send(chunk([]any{map[string]any{"text": w}}, false, prompt))
		}
		if ts.Cut || !hold(ts, r) {
			return
		}
		for i, c := range ts.Calls {
			last := i == len(ts.Calls)-1
			u := prompt
			if last {
				u = usage
			}
			send(chunk([]any{call(c)}, last, u))
		}
		if len(ts.Calls) == 0 {
			send(chunk([]any{map[string]any{"text": ""}}, true, usage))
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// geminiStatuses are the API's status names by HTTP status.
var geminiStatuses = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

func geminiError(status int, msg string) any {
	name := geminiStatuses[status]
	if name == "" {
		name = "UNKNOWN"
	}
	return map[string]any{"error": map[string]any{"code": status, "message": msg, "status": name}}
}
