package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/llm"
)

const testKey = "test-key-not-to-leak"

// seen is one request the fake server took.
type seen struct {
	Method, Path, Query string
	Key                 string
	HasKey              bool
	Body                map[string]any
}

// fakeGemini is a loopback server that speaks the Gemini API's wire
// format: answer writes the response to each request, after it is
// recorded.
type fakeGemini struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []seen
	answer func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *fakeGemini {
	t.Helper()
	f := &fakeGemini{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
		s.Key = r.Header.Get("x-goog-api-key")
		_, s.HasKey = r.Header["X-Goog-Api-Key"]
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &s.Body); err != nil {
				t.Errorf("request body is not JSON: %v\n%s", err, b)
			}
		}
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		f.answer(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) == 0 {
		t.Fatal("the server took no request")
	}
	return f.seen[len(f.seen)-1]
}

func (f *fakeGemini) provider(t *testing.T, mutate ...func(*llm.Config)) llm.Provider {
	t.Helper()
	cfg := llm.Config{BaseURL: f.srv.URL, APIKey: testKey, HTTPClient: f.srv.Client()}
	for _, m := range mutate {
		m(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonAnswer(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// sseAnswer streams chunks as streamGenerateContent does with alt=sse.
func sseAnswer(chunks ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\r\n\r\n", c)
			w.(http.Flusher).Flush()
		}
	}
}

// at reads a path of keys and indexes out of decoded JSON.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v has no index %d", path, v, k)
			}
			v = a[k]
		}
	}
	return v
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChatText(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonAnswer(200, `{
		"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello, "}, {"text": "Ada."}]},
			"finishReason": "STOP", "index": 0}],
		"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3, "totalTokenCount": 15},
		"modelVersion": "gemini-2.5-flash-001", "responseId": "r1"}`))
	temp := 0.25
	reply, err := f.provider(t).Chat(context.Background(), llm.Request{
		Model:       "gemini-2.5-flash",
		System:      "Be brief.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Text: "Hi"}, {Role: llm.RoleAssistant, Text: "Hello?"}, {Role: llm.RoleUser, Text: "Greet Ada"}},
		Temperature: &temp,
		MaxTokens:   100,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Text: "Hello, Ada.", Stop: llm.StopEnd, Model: "gemini-2.5-flash-001",
		Usage: llm.Usage{InputTokens: 12, OutputTokens: 3, Reported: true}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	s := f.last(t)
	if s.Method != "POST" || s.Path != "/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Errorf("request = %s %s", s.Method, s.Path)
	}
	if s.Key != testKey || s.Query != "" {
		t.Errorf("x-goog-api-key = %q, query %q: the key goes in the header only", s.Key, s.Query)
	}
	if got := at(t, s.Body, "systemInstruction", "parts", 0, "text"); got != "Be brief." {
		t.Errorf("systemInstruction = %v", got)
	}
	wantContents := decode(t, `[
		{"role": "user", "parts": [{"text": "Hi"}]},
		{"role": "model", "parts": [{"text": "Hello?"}]},
		{"role": "user", "parts": [{"text": "Greet Ada"}]}]`)
	if got := at(t, s.Body, "contents"); !reflect.DeepEqual(got, wantContents) {
		t.Errorf("contents = %v", got)
	}
	if got := at(t, s.Body, "generationConfig", "temperature"); got != 0.25 {
		t.Errorf("temperature = %v", got)
	}
	if got := at(t, s.Body, "generationConfig", "maxOutputTokens"); got != 100.0 {
		t.Errorf("maxOutputTokens = %v", got)
	}
	if _, ok := s.Body["tools"]; ok {
		t.Errorf("tools sent for a request without tools: %v", s.Body["tools"])
	}
}

// Defaults stay the API's: no temperature, no token cap, no system turn.
func TestChatLeavesDefaults(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonAnswer(200, `{"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}`))
	if _, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	s := f.last(t)
	for _, k := range []string{"systemInstruction", "tools"} {
		if _, ok := s.Body[k]; ok {
			t.Errorf("%s sent: %v", k, s.Body[k])
		}
	}
	if gc, ok := s.Body["generationConfig"].(map[string]any); ok {
		for _, k := range []string{"temperature", "maxOutputTokens", "responseMimeType", "responseJsonSchema"} {
			if _, ok := gc[k]; ok {
				t.Errorf("generationConfig.%s sent: %v", k, gc[k])
			}
		}
	}
}

func TestChatStopAndUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		stop       llm.StopReason
		usage      llm.Usage
	}{
		{"stop", `{"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 1}}`,
			llm.StopEnd, llm.Usage{InputTokens: 4, OutputTokens: 1, Reported: true}},
		{"max tokens", `{"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "MAX_TOKENS"}]}`, llm.StopMaxTokens, llm.Usage{}},
		{"safety", `{"candidates": [{"finishReason": "SAFETY"}]}`, llm.StopRefused, llm.Usage{}},
		{"prompt blocked", `{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}`,
			llm.StopRefused, llm.Usage{InputTokens: 9, Reported: true}},
		{"other", `{"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "OTHER"}]}`, llm.StopOther, llm.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, jsonAnswer(200, tc.body))
			reply, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if reply.Stop != tc.stop || reply.Usage != tc.usage {
				t.Errorf("stop %q usage %+v, want %q %+v", reply.Stop, reply.Usage, tc.stop, tc.usage)
			}
		})
	}
}

var tools = []llm.Tool{
	{Name: "get_weather", Description: "The weather in a city.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "now", Description: "The time.", InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
}

func TestChatTools(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonAnswer(200, `{
		"candidates": [{"content": {"role": "model", "parts": [
			{"text": "Let me look."},
			{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
			{"functionCall": {"id": "fc-7", "name": "now", "args": {}}}]},
			"finishReason": "STOP"}],
		"usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 10}}`))
	p := f.provider(t)
	ask := llm.Request{Model: "gemini-2.5-pro", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather in Paris, and the time?"}}, Tools: tools}
	reply, err := p.Chat(context.Background(), ask, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
		{ID: "fc-7", Name: "now", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(reply.ToolCalls, wantCalls) || reply.Stop != llm.StopToolCalls || reply.Text != "Let me look." {
		t.Errorf("reply = %+v", reply)
	}
	s := f.last(t)
	wantTools := decode(t, `[{"functionDeclarations": [
		{"name": "get_weather", "description": "The weather in a city.",
		 "parametersJsonSchema": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
		{"name": "now", "description": "The time.", "parametersJsonSchema": {"type":"object","properties":{}}}]}]`)
	if got := at(t, s.Body, "tools"); !reflect.DeepEqual(got, wantTools) {
		t.Errorf("tools = %v", got)
	}

	// The follow-up turn: the assistant's calls (the first with the
	// stand-in thought signature), then both results, one a failure, in
	// one user turn.
	follow := ask
	follow.Messages = append(follow.Messages,
		llm.Message{Role: llm.RoleAssistant, Text: reply.Text, ToolCalls: reply.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Text: "18°C, clear"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "fc-7", ToolName: "now", Text: "clock unavailable", IsError: true},
	)
	if _, err := p.Chat(context.Background(), follow, nil); err != nil {
		t.Fatal(err)
	}
	wantContents := decode(t, `[
		{"role": "user", "parts": [{"text": "Weather in Paris, and the time?"}]},
		{"role": "model", "parts": [
			{"text": "Let me look."},
			{"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}},
			 "thoughtSignature": "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="},
			{"functionCall": {"id": "fc-7", "name": "now"}}]},
		{"role": "user", "parts": [
			{"functionResponse": {"id": "call_1", "name": "get_weather", "response": {"output": "18°C, clear"}}},
			{"functionResponse": {"id": "fc-7", "name": "now", "response": {"error": "clock unavailable"}}}]}]`)
	if got := at(t, f.last(t).Body, "contents"); !reflect.DeepEqual(got, wantContents) {
		g, _ := json.Marshal(got)
		t.Errorf("contents = %s", g)
	}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseAnswer(
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "The "}]}}], "usageMetadata": {"promptTokenCount": 7}, "modelVersion": "gemini-2.5-flash"}`,
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "sky is"}]}}], "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3}, "modelVersion": "gemini-2.5-flash"}`,
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": " blue."}, {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}]}}], "modelVersion": "gemini-2.5-flash"}`,
		`{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "now", "args": {}}}]}, "finishReason": "STOP"}],
		  "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 11, "totalTokenCount": 18}, "modelVersion": "gemini-2.5-flash"}`,
	))
	var deltas []string
	reply, err := f.provider(t).Chat(context.Background(), llm.Request{
		Model: "gemini-2.5-flash", Messages: []llm.Message{{Role: llm.RoleUser, Text: "sky?"}}, Tools: tools,
	}, &llm.Stream{Text: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"The ", "sky is", " blue."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if strings.Join(deltas, "") != reply.Text {
		t.Errorf("deltas %q do not make the reply's text %q", deltas, reply.Text)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
		{ID: "call_2", Name: "now", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(reply.ToolCalls, wantCalls) {
		t.Errorf("calls = %s", reply.ToolCalls)
	}
	if want := (llm.Usage{InputTokens: 7, OutputTokens: 11, Reported: true}); reply.Usage != want {
		t.Errorf("usage = %+v, want %+v", reply.Usage, want)
	}
	if reply.Stop != llm.StopToolCalls || reply.Model != "gemini-2.5-flash" {
		t.Errorf("stop %q model %q", reply.Stop, reply.Model)
	}
	s := f.last(t)
	if s.Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || s.Query != "alt=sse" || s.Key != testKey {
		t.Errorf("request = %s?%s key %q", s.Path, s.Query, s.Key)
	}
	if at(t, s.Body, "tools", 0, "functionDeclarations", 0, "name") != "get_weather" {
		t.Errorf("streamed request lost its tools: %v", s.Body["tools"])
	}
}

func TestChatStreamWithoutUsage(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseAnswer(`{"candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}`))
	reply, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, &llm.Stream{Text: func(string) {}})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Usage.Reported || reply.Text != "hi" || reply.Stop != llm.StopEnd {
		t.Errorf("reply = %+v", reply)
	}
}

func TestChatSchema(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"answer":{"type":"string"},"score":{"type":"number"}},"required":["answer"]}`
	f := newFake(t, jsonAnswer(200, `{"candidates": [{"content": {"parts": [{"text": "{\"answer\":\"yes\"}"}]}, "finishReason": "STOP"}]}`))
	reply, err := f.provider(t).Chat(context.Background(), llm.Request{
		Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, Schema: json.RawMessage(schema), SchemaName: "verdict",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != `{"answer":"yes"}` {
		t.Errorf("text = %q", reply.Text)
	}
	s := f.last(t)
	if got := at(t, s.Body, "generationConfig", "responseMimeType"); got != "application/json" {
		t.Errorf("responseMimeType = %v", got)
	}
	if got := at(t, s.Body, "generationConfig", "responseJsonSchema"); !reflect.DeepEqual(got, decode(t, schema)) {
		t.Errorf("responseJsonSchema = %v", got)
	}
}

func TestChatAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status     int
		state, msg string
		streamed   bool
	}{
		{401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key.", false},
		{429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", false},
		{500, "INTERNAL", "An internal error has occurred.", false},
		{401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key.", true},
		{429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", true},
		{500, "INTERNAL", "An internal error has occurred.", true},
	} {
		t.Run(fmt.Sprintf("%d streamed=%v", tc.status, tc.streamed), func(t *testing.T) {
			body := fmt.Sprintf(`{"error": {"code": %d, "message": %q, "status": %q}}`, tc.status, tc.msg, tc.state)
			f := newFake(t, jsonAnswer(tc.status, body))
			var stream *llm.Stream
			if tc.streamed {
				stream = &llm.Stream{Text: func(string) {}}
			}
			_, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "gemini-x", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, stream)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, want := range []string{"gemini", `"gemini-x"`, fmt.Sprint(tc.status), tc.msg} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if strings.Contains(msg, testKey) {
				t.Errorf("error %q holds the key", msg)
			}
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.status {
				t.Errorf("error %v is not an *Error with status %d", err, tc.status)
			}
			f.mu.Lock()
			n := len(f.seen)
			f.mu.Unlock()
			if n != 1 {
				t.Errorf("the server took %d requests, want 1 (no SDK retries)", n)
			}
		})
	}
}

func TestChatCancel(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			started := make(chan struct{})
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if streamed {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"a\"}]}}]}\n\n")
					w.(http.Flusher).Flush()
				}
				close(started)
				<-r.Context().Done()
			})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				var stream *llm.Stream
				if streamed {
					stream = &llm.Stream{Text: func(string) {}}
				}
				_, err := f.provider(t).Chat(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, stream)
				done <- err
			}()
			<-started
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want the context's error", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Chat did not return after its context was cancelled")
			}
		})
	}
}

func TestChatTooLarge(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("word ", 2000)
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
		stream bool
	}{
		{"plain", jsonAnswer(200, fmt.Sprintf(`{"candidates": [{"content": {"parts": [{"text": %q}]}, "finishReason": "STOP"}]}`, big)), false},
		{"streamed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			// Small chunks, each under the cap, that together pass it.
			for range 200 {
				fmt.Fprintf(w, "data: %s\n\n", `{"candidates": [{"content": {"parts": [{"text": "word word word "}]}}]}`)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.answer)
			p := f.provider(t, func(c *llm.Config) { c.MaxResponseBytes = 1024 })
			var stream *llm.Stream
			if tc.stream {
				stream = &llm.Stream{Text: func(string) {}}
			}
			_, err := p.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, stream)
			var tl *llm.TooLargeError
			if !errors.As(err, &tl) || tl.Limit != 1024 {
				t.Fatalf("err = %v, want a *llm.TooLargeError at 1024", err)
			}
		})
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("pageToken") == "" {
			jsonAnswer(200, `{"models": [{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash"},
				{"name": "models/gemini-2.5-pro"}], "nextPageToken": "p2"}`)(w, r)
			return
		}
		jsonAnswer(200, `{"models": [{"name": "models/text-embedding-004"}]}`)(w, r)
	})
	got, err := f.provider(t).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gemini-2.5-flash", "gemini-2.5-pro", "text-embedding-004"}; !reflect.DeepEqual(got, want) {
		t.Errorf("models = %q, want %q", got, want)
	}
	s := f.last(t)
	if s.Method != "GET" || s.Path != "/v1beta/models" || s.Key != testKey {
		t.Errorf("request = %s %s key %q", s.Method, s.Path, s.Key)
	}
}

func TestModelsNotListed(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonAnswer(404, `{"error": {"code": 404, "message": "Method not found.", "status": "NOT_FOUND"}}`))
	_, err := f.provider(t).Models(context.Background())
	if !errors.Is(err, llm.ErrNoModelList) {
		t.Fatalf("err = %v, want one wrapping llm.ErrNoModelList", err)
	}
}

// The environment the SDK would read (keys, Vertex, project, a base URL)
// changes nothing: with no key in Config none is sent, and the request goes
// to the Gemini API at the configured URL.
func TestEnvironmentIsNotRead(t *testing.T) {
	for k, v := range map[string]string{
		"GOOGLE_API_KEY":            "env-google-key",
		"GEMINI_API_KEY":            "env-gemini-key",
		"GOOGLE_GENAI_USE_VERTEXAI": "true",
		"GOOGLE_CLOUD_PROJECT":      "env-project",
		"GOOGLE_CLOUD_LOCATION":     "europe-west4",
		"GOOGLE_GEMINI_BASE_URL":    "http://127.0.0.1:9/",
	} {
		t.Setenv(k, v)
	}
	f := newFake(t, jsonAnswer(200, `{"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}`))
	p := f.provider(t, func(c *llm.Config) { c.APIKey = "" })
	if _, err := p.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	s := f.last(t)
	if s.HasKey {
		t.Errorf("a key was sent (%q) though Config has none", s.Key)
	}
	if s.Path != "/v1beta/models/m:generateContent" {
		t.Errorf("path = %s, want the Gemini API's", s.Path)
	}

	// No base URL is the public endpoint, not the environment's: a
	// transport answers in place of the network.
	var asked string
	offline := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asked = r.URL.Scheme + "://" + r.URL.Host + r.URL.Path
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"candidates": [{"content": {"parts": [{"text": "ok"}]}}]}`)), Request: r}, nil
	})}
	p, err := New(llm.Config{HTTPClient: offline})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if asked != "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent" {
		t.Errorf("asked %s, want the public endpoint", asked)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewRefusesNoClient(t *testing.T) {
	t.Parallel()
	if _, err := New(llm.Config{BaseURL: "http://127.0.0.1:9"}); err == nil {
		t.Fatal("New without an HTTP client gave no error")
	}
}

// A thinking model's signed calls go back with their own signatures when
// the turn is sent again; only an unsigned first call gets the stand-in.
func TestChatToolCallSignaturesRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonAnswer(200, `{
		"candidates": [{"content": {"role": "model", "parts": [
			{"functionCall": {"id": "a", "name": "get_weather", "args": {"city": "Oslo"}}, "thoughtSignature": "c2lnLWE="},
			{"functionCall": {"id": "b", "name": "now", "args": {}}}]},
			"finishReason": "STOP"}]}`))
	p := f.provider(t)
	ask := llm.Request{Model: "gemini-3-pro", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Oslo?"}}, Tools: tools}
	reply, err := p.Chat(context.Background(), ask, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.ToolCalls) != 2 || string(reply.ToolCalls[0].Signature) != "sig-a" || reply.ToolCalls[1].Signature != nil {
		t.Fatalf("calls = %+v, want the first signed sig-a, the second unsigned", reply.ToolCalls)
	}
	follow := ask
	follow.Messages = append(follow.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: reply.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "a", ToolName: "get_weather", Text: "3°C"},
		llm.Message{Role: llm.RoleTool, ToolCallID: "b", ToolName: "now", Text: "09:00"},
	)
	if _, err := p.Chat(context.Background(), follow, nil); err != nil {
		t.Fatal(err)
	}
	parts := at(t, f.last(t).Body, "contents", 1, "parts").([]any)
	if got := at(t, parts[0], "thoughtSignature"); got != "c2lnLWE=" {
		t.Errorf("first call's signature = %v, want its own (c2lnLWE=)", got)
	}
	if got, ok := parts[1].(map[string]any)["thoughtSignature"]; ok {
		t.Errorf("second call sent signature %v, want none", got)
	}
}

// A server that echoes the key it was sent in its error message does not
// get it into the error.
func TestEchoedKeyIsScrubbed(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"API key not valid: %s"}}`, r.Header.Get("x-goog-api-key"))
	})
	_, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "gemini-2.5-pro", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "API key not valid: [key]") {
		t.Fatalf("err = %v, want the server's message with the key scrubbed", err)
	}
}

// A stream that ends before the chunk with the finish reason is not a
// reply, even though the connection closed cleanly.
func TestChatStreamCutShort(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseAnswer(
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "half an "}]}}], "usageMetadata": {"promptTokenCount": 7}}`,
		`{"candidates": [{"content": {"role": "model", "parts": [{"text": "answ"}]}}], "usageMetadata": {"promptTokenCount": 7}}`,
	))
	_, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "gemini-x", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}},
		&llm.Stream{Text: func(string) {}})
	var e *Error
	if !errors.As(err, &e) || e.Model != "gemini-x" || !strings.Contains(err.Error(), "the stream ended before the reply was finished") {
		t.Fatalf("err = %v, want one about the stream ending early", err)
	}
}

// A prompt the API blocks streams no candidate and no finish reason: that
// is a refusal, not a cut stream.
func TestChatStreamBlocked(t *testing.T) {
	t.Parallel()
	f := newFake(t, sseAnswer(`{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}}`))
	reply, err := f.provider(t).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}},
		&llm.Stream{Text: func(string) {}})
	if err != nil || reply.Stop != llm.StopRefused {
		t.Fatalf("reply %+v, err %v, want a refusal", reply, err)
	}
}
