package openai

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

	sdk "github.com/openai/openai-go/v3"

	"github.com/chainstudio/studio/engine/llm"
)

const testKey = "sk-test-0123456789abcdef"

// sent is one request the fake server received.
type sent struct {
	Method, Path, Auth, Query string
	Header                    http.Header
	Raw                       []byte
	Body                      map[string]any
}

// fake is an OpenAI-compatible server on loopback that records what it
// was sent and answers with reply.
type fake struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	got   []sent
	reply http.HandlerFunc
}

func newFake(t *testing.T, reply http.HandlerFunc) *fake {
	t.Helper()
	f := &fake{t: t, reply: reply}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := sent{Method: r.Method, Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Query: r.URL.RawQuery, Header: r.Header.Clone(), Raw: raw}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &s.Body); err != nil {
				t.Errorf("the request body is not JSON: %v: %s", err, raw)
			}
		}
		f.mu.Lock()
		f.got = append(f.got, s)
		f.mu.Unlock()
		f.reply(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// provider is New on the fake server, its base URL ending in /v1 as a
// compatible server's does.
func (f *fake) provider(key string, maxBytes int64) llm.Provider {
	f.t.Helper()
	p, err := New(llm.Config{BaseURL: f.srv.URL + "/v1", APIKey: key, HTTPClient: f.srv.Client(), MaxResponseBytes: maxBytes})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fake) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.got...)
}

func (f *fake) only() sent {
	f.t.Helper()
	got := f.requests()
	if len(got) != 1 {
		f.t.Fatalf("the server got %d requests, want 1", len(got))
	}
	return got[0]
}

func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// answerSSE streams chunks as Chat Completions does, then [DONE].
func answerSSE(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}
}

// jsonOf decodes s for comparison with a decoded request body.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return v
}

func wantField(t *testing.T, body map[string]any, field, want string) {
	t.Helper()
	if got, w := body[field], jsonOf(t, want); !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s on the wire = %s, want %s", field, g, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestChatSendsTheTurnAndReadsTheReply(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "gpt-test-2026",
		"choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris.", "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
		"usage": {"prompt_tokens": 21, "completion_tokens": 3, "total_tokens": 24}
	}`))
	reply, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{
		Model:       "gpt-test",
		System:      "Answer in one word.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Text: "Capital of France?"}},
		Temperature: ptr(0.25),
		MaxTokens:   50,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Text: "Paris.", Stop: llm.StopEnd, Model: "gpt-test-2026", Usage: llm.Usage{InputTokens: 21, OutputTokens: 3, Reported: true}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	got := f.only()
	if got.Method != "POST" || got.Path != "/v1/chat/completions" {
		t.Errorf("sent %s %s, want POST /v1/chat/completions", got.Method, got.Path)
	}
	if got.Auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got.Auth)
	}
	wantField(t, got.Body, "model", `"gpt-test"`)
	wantField(t, got.Body, "messages", `[{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Capital of France?"}]`)
	wantField(t, got.Body, "temperature", `0.25`)
	// A compatible server reads max_tokens.
	wantField(t, got.Body, "max_tokens", `50`)
	for _, absent := range []string{"max_completion_tokens", "stream", "stream_options", "tools", "response_format"} {
		if _, ok := got.Body[absent]; ok {
			t.Errorf("%s was sent: %s", absent, got.Raw)
		}
	}
}

// OpenAI's own endpoint gets max_completion_tokens, which its reasoning
// models require.
func TestMaxTokensFieldFollowsTheServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		base string
		want bool
	}{{"", true}, {"https://api.openai.com/v1", true}, {"http://127.0.0.1:11434/v1", false}, {"https://openrouter.ai/api/v1", false}} {
		p, err := New(llm.Config{BaseURL: tc.base, HTTPClient: http.DefaultClient})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.(*provider).completionTokens; got != tc.want {
			t.Errorf("base %q: max_completion_tokens = %v, want %v", tc.base, got, tc.want)
		}
	}
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}`))
	p := f.provider("", 0)
	p.(*provider).completionTokens = true
	if _, err := p.Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}, MaxTokens: 7}, nil); err != nil {
		t.Fatal(err)
	}
	got := f.only()
	wantField(t, got.Body, "max_completion_tokens", `7`)
	if _, ok := got.Body["max_tokens"]; ok {
		t.Errorf("max_tokens was sent too: %s", got.Raw)
	}
}

// With no key no Authorization is sent (local servers), and the SDK's
// environment variables neither add one nor move the endpoint.
func TestNoKeySendsNoAuthorizationWhateverTheEnvironment(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request went to OPENAI_BASE_URL: %s", r.URL)
	}))
	defer elsewhere.Close()
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", elsewhere.URL)
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "llama3", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}`))
	reply, err := f.provider("", 0).Chat(context.Background(), llm.Request{Model: "llama3", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := f.only()
	if got.Auth != "" {
		t.Errorf("Authorization = %q, want none", got.Auth)
	}
	if got.Header.Get("X-Leak") != "" {
		t.Error("OPENAI_CUSTOM_HEADERS was applied")
	}
	// A compatible server that says nothing of usage is not measured as 0.
	if reply.Usage != (llm.Usage{}) || reply.Usage.Reported {
		t.Errorf("usage = %+v, want not reported", reply.Usage)
	}
}

func TestToolsOnTheWireAndTwoCallsBack(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{
		"id": "chatcmpl-2", "object": "chat.completion", "created": 0, "model": "gpt-test",
		"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null, "tool_calls": [
			{"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
			{"id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}
		]}}],
		"usage": {"prompt_tokens": 80, "completion_tokens": 30, "total_tokens": 110}
	}`))
	tools := []llm.Tool{
		{Name: "weather", Description: "The weather in a city.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "maxLength": 80}}, "required": ["city"]}`)},
		{Name: "time", InputSchema: json.RawMessage(`{"type": "object"}`)},
	}
	reply, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{
		Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather and time in Paris?"}}, Tools: tools,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []llm.ToolCall{
		{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
		{ID: "call_b", Name: "time", Arguments: json.RawMessage(`{}`)},
	}
	if reply.Stop != llm.StopToolCalls || reply.Text != "" || !reflect.DeepEqual(reply.ToolCalls, wantCalls) {
		t.Errorf("reply = %+v, want the two calls", reply)
	}
	wantField(t, f.only().Body, "tools", `[
		{"type": "function", "function": {"name": "weather", "description": "The weather in a city.",
			"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 80}}, "required": ["city"]}}},
		{"type": "function", "function": {"name": "time", "parameters": {"type": "object"}}}
	]`)

	// The next turn carries the calls and their results, one a failure.
	f2 := newFake(t, answerJSON(200, `{"id": "c3", "object": "chat.completion", "created": 0, "model": "gpt-test",
		"choices": [{"index": 0, "message": {"role": "assistant", "content": "Sunny; the clock is down."}, "finish_reason": "stop"}]}`))
	_, err = f2.provider(testKey, 0).Chat(context.Background(), llm.Request{
		Model: "gpt-test", Tools: tools,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Weather and time in Paris?"},
			{Role: llm.RoleAssistant, Text: "Looking.", ToolCalls: reply.ToolCalls},
			{Role: llm.RoleTool, ToolCallID: "call_a", ToolName: "weather", Text: `{"sky": "sunny"}`},
			{Role: llm.RoleTool, ToolCallID: "call_b", ToolName: "time", Text: "clock unreachable", IsError: true},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantField(t, f2.only().Body, "messages", `[
		{"role": "user", "content": "Weather and time in Paris?"},
		{"role": "assistant", "content": "Looking.", "tool_calls": [
			{"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Paris\"}"}},
			{"id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}
		]},
		{"role": "tool", "tool_call_id": "call_a", "content": "{\"sky\": \"sunny\"}"},
		{"role": "tool", "tool_call_id": "call_b", "content": "The tool call failed: clock unreachable"}
	]`)
}

// What servers send that the API does not promise: no call ids, calls that
// finish as "stop", arguments cut short.
func TestToolCallsAServerLeftIncomplete(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "qwen",
		"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "", "tool_calls": [
			{"type": "function", "function": {"name": "a", "arguments": ""}},
			{"type": "function", "function": {"name": "b", "arguments": "{\"x\": 1"}}
		]}}]}`))
	reply, err := f.provider("", 0).Chat(context.Background(), llm.Request{Model: "qwen", Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_0", Name: "a", Arguments: json.RawMessage(`{}`)},
		{ID: "call_1", Name: "b", Arguments: json.RawMessage(`"{\"x\": 1"`)},
	}
	if reply.Stop != llm.StopToolCalls || !reflect.DeepEqual(reply.ToolCalls, want) {
		t.Errorf("reply = %+v, want %+v and stop tool_calls", reply, want)
	}
}

func TestStreamedReply(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerSSE(
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"content": "Let me "}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"content": "check."}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": ""}}]}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\": "}}]}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}]}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"Paris\"}"}}]}, "finish_reason": null}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}], "usage": null}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test-2026", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}}`,
	))
	var deltas []string
	reply, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{
		Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather?"}},
	}, &llm.Stream{Text: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Let me ", "check."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if strings.Join(deltas, "") != reply.Text {
		t.Errorf("the deltas make %q, the reply's text is %q", strings.Join(deltas, ""), reply.Text)
	}
	want := &llm.Reply{
		Text: "Let me check.", Stop: llm.StopToolCalls, Model: "gpt-test-2026",
		ToolCalls: []llm.ToolCall{
			{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`)},
			{ID: "call_b", Name: "time", Arguments: json.RawMessage(`{}`)},
		},
		Usage: llm.Usage{InputTokens: 40, OutputTokens: 12, Reported: true},
	}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v\nwant %+v", reply, want)
	}
	got := f.only()
	if got.Path != "/v1/chat/completions" || got.Auth != "Bearer "+testKey {
		t.Errorf("sent %s with Authorization %q", got.Path, got.Auth)
	}
	wantField(t, got.Body, "stream", `true`)
	wantField(t, got.Body, "stream_options", `{"include_usage": true}`)
}

// A compatible server that streams each whole call at index 0 and sends
// no usage.
func TestStreamFromACompatibleServer(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerSSE(
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "llama3", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"n\": 1}"}}]}, "finish_reason": null}]}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "llama3", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{\"n\": 2}"}}]}, "finish_reason": null}]}`,
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "llama3", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]}`,
	))
	reply, err := f.provider("", 0).Chat(context.Background(), llm.Request{Model: "llama3", Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}, &llm.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Stop: llm.StopToolCalls, Model: "llama3", ToolCalls: []llm.ToolCall{
		{ID: "call_1", Name: "a", Arguments: json.RawMessage(`{"n": 1}`)},
		{ID: "call_2", Name: "b", Arguments: json.RawMessage(`{"n": 2}`)},
	}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v\nwant %+v", reply, want)
	}
}

func TestStructuredOutputAsksForTheSchemaNatively(t *testing.T) {
	t.Parallel()
	schema := `{"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"], "additionalProperties": false}`
	for _, tc := range []struct{ name, want string }{{"verdict", "verdict"}, {"", "output"}} {
		f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-test",
			"choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"score\": 7}"}, "finish_reason": "stop"}]}`))
		reply, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{
			Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Rate it."}},
			Schema: json.RawMessage(schema), SchemaName: tc.name,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Text != `{"score": 7}` {
			t.Errorf("text = %q", reply.Text)
		}
		wantField(t, f.only().Body, "response_format", `{"type": "json_schema", "json_schema": {"name": "`+tc.want+`", "schema": `+schema+`, "strict": true}}`)
	}
	// A schema strict mode cannot take (an open object) is sent without
	// strict: OpenAI refuses a strict schema that does not fit.
	open := `{"type": "object", "properties": {"score": {"type": "integer"}}}`
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-test",
		"choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}]}`))
	if _, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Rate it."}}, Schema: json.RawMessage(open)}, nil); err != nil {
		t.Fatal(err)
	}
	wantField(t, f.only().Body, "response_format", `{"type": "json_schema", "json_schema": {"name": "output", "schema": `+open+`, "strict": false}}`)
}

// A refusal under structured output comes in refusal, not content.
func TestRefusalIsStopRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-test",
		"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}, "finish_reason": "stop"}]}`))
	reply, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Stop != llm.StopRefused || reply.Text != "I can't help with that." {
		t.Errorf("reply = %+v, want refused with the refusal's text", reply)
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	for reason, want := range map[string]llm.StopReason{
		"stop": llm.StopEnd, "length": llm.StopMaxTokens, "tool_calls": llm.StopToolCalls,
		"content_filter": llm.StopRefused, "something_new": llm.StopOther,
	} {
		reply := &llm.Reply{}
		finish(reply, reason, "")
		if reply.Stop != want {
			t.Errorf("%q → %q, want %q", reason, reply.Stop, want)
		}
	}
}

func TestServerErrorsNameProviderModelStatusAndMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		body    string
		message string
		sdkErr  bool // the body is OpenAI's shape, so the SDK's *Error is made
	}{
		{401, `{"error": {"message": "Incorrect API key provided: ` + testKey + `.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`, "Incorrect API key provided: [key].", true},
		{429, `{"error": {"message": "Rate limit reached for requests", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`, "Rate limit reached for requests", true},
		{500, `{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}`, "The server had an error while processing your request.", true},
		// Compatible servers' shapes.
		{404, `{"error": "model \"nope\" not found, try pulling it first"}`, `model "nope" not found, try pulling it first`, false},
		{502, `upstream unavailable`, "upstream unavailable", true},
	} {
		for _, streamed := range []bool{false, true} {
			name := fmt.Sprintf("%d streamed=%v", tc.status, streamed)
			f := newFake(t, answerJSON(tc.status, tc.body))
			var stream *llm.Stream
			if streamed {
				stream = &llm.Stream{Text: func(string) { t.Errorf("%s: text from an error", name) }}
			}
			_, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
			if err == nil {
				t.Fatalf("%s: no error", name)
			}
			msg := err.Error()
			for _, part := range []string{"openai", `"gpt-test"`, fmt.Sprint(tc.status), tc.message} {
				if !strings.Contains(msg, part) {
					t.Errorf("%s: error %q does not say %q", name, msg, part)
				}
			}
			if strings.Contains(msg, testKey) {
				t.Errorf("%s: error %q holds the key", name, msg)
			}
			var apiErr *sdk.Error
			if tc.sdkErr && (!errors.As(err, &apiErr) || apiErr.StatusCode != tc.status) {
				t.Errorf("%s: the SDK's error with the status is not reachable: %v", name, err)
			}
			// The SDK does not retry: the engine does.
			if n := len(f.requests()); n != 1 {
				t.Errorf("%s: %d requests, want 1", name, n)
			}
		}
	}
}

// An error the server sends mid-stream ends the call with its message.
func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerSSE(
		`{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test", "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": null}]}`,
		`{"error": {"message": "the model crashed", "type": "server_error"}}`,
	))
	_, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, &llm.Stream{})
	if err == nil || !strings.Contains(err.Error(), "the model crashed") || !strings.Contains(err.Error(), `"gpt-test"`) {
		t.Errorf("err = %v, want the server's message and the model", err)
	}
}

func TestCancelStopsTheCall(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		started := make(chan struct{})
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if streamed {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": null}]}`+"\n\n")
				w.(http.Flusher).Flush()
			}
			close(started)
			<-r.Context().Done() // the server would go on; the client hangs up
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		var stream *llm.Stream
		if streamed {
			stream = &llm.Stream{}
		}
		_, err := f.provider(testKey, 0).Chat(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("streamed=%v: err = %v, want the context's error", streamed, err)
		}
		cancel()
	}
}

func TestResponseOverTheCapIsTooLarge(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 4000)
	chunk := `{"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 0, "delta": {"content": "xxxxxxxxxxxxxxxxxxxxxxxx"}, "finish_reason": null}]}`
	many := make([]string, 100)
	for i := range many {
		many[i] = chunk
	}
	for _, tc := range []struct {
		name     string
		answer   http.HandlerFunc
		streamed bool
	}{
		{"body", answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "`+long+`"}, "finish_reason": "stop"}]}`), false},
		{"stream", answerSSE(many...), true},
		{"error body", answerJSON(500, `{"error": {"message": "`+long+`"}}`), false},
	} {
		f := newFake(t, tc.answer)
		var stream *llm.Stream
		if tc.streamed {
			stream = &llm.Stream{}
		}
		_, err := f.provider(testKey, 1024).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
		var tl *llm.TooLargeError
		if !errors.As(err, &tl) || tl.Limit != 1024 {
			t.Errorf("%s: err = %v, want a TooLargeError at 1024", tc.name, err)
		}
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{"object": "list", "data": [
		{"id": "gpt-test", "object": "model", "created": 1700000000, "owned_by": "openai"},
		{"id": "llama3:8b", "object": "model", "created": 0, "owned_by": "library"}
	]}`))
	models, err := f.provider(testKey, 0).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gpt-test", "llama3:8b"}; !reflect.DeepEqual(models, want) {
		t.Errorf("models = %q, want %q", models, want)
	}
	got := f.only()
	if got.Method != "GET" || got.Path != "/v1/models" || got.Auth != "Bearer "+testKey {
		t.Errorf("sent %s %s with Authorization %q", got.Method, got.Path, got.Auth)
	}
}

func TestModelsNotListed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   bool // ErrNoModelList
	}{
		{404, "404 page not found", true},
		{404, `{"error": {"message": "Not found", "type": "invalid_request_error"}}`, true},
		{500, `{"error": {"message": "down"}}`, false},
	} {
		f := newFake(t, answerJSON(tc.status, tc.body))
		_, err := f.provider(testKey, 0).Models(context.Background())
		if err == nil || errors.Is(err, llm.ErrNoModelList) != tc.want {
			t.Errorf("%d %s: err = %v, want ErrNoModelList %v", tc.status, tc.body, err, tc.want)
		}
		if err != nil && (!strings.Contains(err.Error(), "openai") || !strings.Contains(err.Error(), fmt.Sprint(tc.status))) {
			t.Errorf("err = %v does not name the provider and status", err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	if _, err := New(llm.Config{}); err == nil {
		t.Error("New took a Config with no HTTP client")
	}
	if _, err := New(llm.Config{BaseURL: "localhost:11434/v1", HTTPClient: http.DefaultClient}); err == nil {
		t.Error("New took a base URL with no scheme")
	}
}

// The key goes in the Authorization header and nowhere else on the wire.
func TestKeyOnlyInTheHeader(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}`))
	if _, err := f.provider(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	got := f.only()
	if strings.Contains(string(got.Raw), testKey) || strings.Contains(got.Query, testKey) {
		t.Error("the key is in the body or the query")
	}
	for k, vs := range got.Header {
		for _, v := range vs {
			if strings.Contains(v, testKey) && k != "Authorization" {
				t.Errorf("the key is in header %s", k)
			}
		}
	}
}

// A request the API cannot take fails before anything is sent.
func TestRequestsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(500, `{"error": {"message": "should not be asked"}}`))
	user := llm.Message{Role: llm.RoleUser, Text: "hi"}
	for name, req := range map[string]llm.Request{
		"unknown role":        {Model: "m", Messages: []llm.Message{{Role: "system", Text: "x"}}},
		"result with no call": {Model: "m", Messages: []llm.Message{user, {Role: llm.RoleTool, Text: "x"}}},
		"schema not JSON":     {Model: "m", Messages: []llm.Message{user}, Schema: json.RawMessage(`{`)},
		"tool schema array":   {Model: "m", Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "t", InputSchema: json.RawMessage(`[]`)}}},
	} {
		_, err := f.provider(testKey, 0).Chat(context.Background(), req, nil)
		if err == nil || !strings.Contains(err.Error(), `openai: model "m"`) {
			t.Errorf("%s: err = %v, want one naming the provider and model", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
