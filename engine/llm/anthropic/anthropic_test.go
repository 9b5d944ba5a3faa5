package anthropic

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

const testKey = "sk-ant-test-9f3c1e7d"

// seen is one request as the fake server received it.
type seen struct {
	method, path, query string
	header              http.Header
	body                map[string]any
}

// fake is a loopback Messages API: each request is recorded and answered
// by handle.
type fake struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []seen
	handle func(w http.ResponseWriter, r *http.Request)
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request)) *fake {
	t.Helper()
	f := &fake{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		s := seen{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone()}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &s.body); err != nil {
				t.Errorf("request body is not JSON: %v: %s", err, raw)
			}
		}
		f.mu.Lock()
		f.seen = append(f.seen, s)
		f.mu.Unlock()
		f.handle(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) provider(t *testing.T, limit int64) llm.Provider {
	t.Helper()
	p, err := New(llm.Config{BaseURL: f.srv.URL, APIKey: testKey, HTTPClient: f.srv.Client(), MaxResponseBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.seen...)
}

func (f *fake) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = nil
}

func (f *fake) only(t *testing.T) seen {
	t.Helper()
	rs := f.requests()
	if len(rs) != 1 {
		t.Fatalf("the server got %d requests, want 1", len(rs))
	}
	return rs[0]
}

func jsonReply(body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// sse answers a stream of events in the API's wire format, flushing each.
func sse(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			var head struct{ Type string }
			if err := json.Unmarshal([]byte(e), &head); err != nil {
				panic(err)
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, e)
			w.(http.Flusher).Flush()
		}
	}
}

// jsonEq compares got (decoded JSON) with want (JSON text).
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if g, ok := got.(json.RawMessage); ok {
		var v any
		if err := json.Unmarshal(g, &v); err != nil {
			t.Fatalf("%s: %v: %s", what, err, g)
		}
		got = v
	}
	if !reflect.DeepEqual(got, w) {
		gb, _ := json.Marshal(got)
		t.Errorf("%s = %s, want %s", what, gb, want)
	}
}

func checkAuth(t *testing.T, s seen) {
	t.Helper()
	if got := s.header.Get("X-Api-Key"); got != testKey {
		t.Errorf("x-api-key = %q, want the config's key", got)
	}
	if got := s.header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none (the key goes in x-api-key only)", got)
	}
	if s.header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	for name, vals := range s.header {
		if strings.EqualFold(name, "X-Api-Key") {
			continue
		}
		for _, v := range vals {
			if strings.Contains(v, testKey) {
				t.Errorf("header %s carries the key", name)
			}
		}
	}
}

const textReply = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-test-1",
 "content":[{"type":"text","text":"Hello"},{"type":"text","text":", world"}],
 "stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":5}}`

func TestChatText(t *testing.T) {
	// The SDK's own key must not be picked up from the environment.
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	f := newFake(t, jsonReply(textReply))
	temp := 0.2
	reply, err := f.provider(t, 0).Chat(context.Background(), llm.Request{
		Model:       "claude-test-1",
		System:      "You are terse.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Text: "Say hello"}},
		Temperature: &temp,
		MaxTokens:   100,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Text: "Hello, world", Stop: llm.StopEnd, Model: "claude-test-1",
		Usage: llm.Usage{InputTokens: 12, OutputTokens: 5, Reported: true}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	s := f.only(t)
	if s.method != http.MethodPost || s.path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", s.method, s.path)
	}
	checkAuth(t, s)
	// ctx alone bounds the call: no SDK timeout is announced or applied.
	if v := s.header.Get("X-Stainless-Timeout"); v != "" {
		t.Errorf("X-Stainless-Timeout = %q, want none", v)
	}
	jsonEq(t, "model", s.body["model"], `"claude-test-1"`)
	jsonEq(t, "system", s.body["system"], `[{"type":"text","text":"You are terse."}]`)
	jsonEq(t, "messages", s.body["messages"], `[{"role":"user","content":[{"type":"text","text":"Say hello"}]}]`)
	jsonEq(t, "max_tokens", s.body["max_tokens"], `100`)
	// API version 2026-10-21 refuses temperature with a 400.
	for _, k := range []string{"temperature", "stream", "tools", "tool_choice"} {
		if v, ok := s.body[k]; ok {
			t.Errorf("%s = %v on the wire, want none", k, v)
		}
	}
}

func TestChatDefaultsAndStops(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxTokens int
		stop      string
		usage     string
		wantMax   string
		wantStop  llm.StopReason
		wantUsage llm.Usage
	}{
		{"defaults", 0, "end_turn", `,"usage":{"input_tokens":3,"output_tokens":4}`, "4096", llm.StopEnd, llm.Usage{InputTokens: 3, OutputTokens: 4, Reported: true}},
		{"stop sequence", 10, "stop_sequence", "", "10", llm.StopEnd, llm.Usage{}},
		{"max tokens", 10, "max_tokens", "", "10", llm.StopMaxTokens, llm.Usage{}},
		{"context window", 10, "model_context_window_exceeded", "", "10", llm.StopMaxTokens, llm.Usage{}},
		{"refusal", 10, "refusal", "", "10", llm.StopRefused, llm.Usage{}},
		{"pause", 10, "pause_turn", "", "10", llm.StopOther, llm.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, jsonReply(`{"id":"msg_01","type":"message","role":"assistant","model":"m",
				"content":[{"type":"text","text":"x"}],"stop_reason":"`+tt.stop+`"`+tt.usage+`}`))
			reply, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "m", MaxTokens: tt.maxTokens,
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if reply.Stop != tt.wantStop || reply.Usage != tt.wantUsage {
				t.Errorf("stop, usage = %q, %+v; want %q, %+v", reply.Stop, reply.Usage, tt.wantStop, tt.wantUsage)
			}
			jsonEq(t, "max_tokens", f.only(t).body["max_tokens"], tt.wantMax)
			if _, ok := f.only(t).body["system"]; ok {
				t.Error("an empty system prompt is on the wire")
			}
		})
	}
}

var weatherTool = llm.Tool{
	Name:        "get_weather",
	Description: "The weather in a city.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"],"additionalProperties":false}`),
}

func TestChatTools(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonReply(`{"id":"msg_02","type":"message","role":"assistant","model":"claude-test-1",
		"content":[{"type":"text","text":"Let me check."},
		  {"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}},
		  {"type":"tool_use","id":"toolu_02","name":"get_weather","input":{"city":"Oslo","days":2}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":40,"output_tokens":30}}`))
	p := f.provider(t, 0)
	reply, err := p.Chat(context.Background(), llm.Request{
		Model:    "claude-test-1",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather in Paris and Oslo?"}},
		Tools:    []llm.Tool{weatherTool, {Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Stop != llm.StopToolCalls || reply.Text != "Let me check." || len(reply.ToolCalls) != 2 {
		t.Fatalf("reply = %+v", reply)
	}
	for i, want := range []struct{ id, args string }{{"toolu_01", `{"city":"Paris"}`}, {"toolu_02", `{"city":"Oslo","days":2}`}} {
		c := reply.ToolCalls[i]
		if c.ID != want.id || c.Name != "get_weather" {
			t.Errorf("call %d = %s %s", i, c.ID, c.Name)
		}
		jsonEq(t, fmt.Sprintf("call %d arguments", i), c.Arguments, want.args)
	}
	jsonEq(t, "tools", f.only(t).body["tools"], `[
		{"name":"get_weather","description":"The weather in a city.","input_schema":`+string(weatherTool.InputSchema)+`},
		{"name":"noop","input_schema":{"type":"object","properties":{}}}]`)

	// The follow-up turn: the assistant's calls, then both results (one a
	// failure) in one user turn.
	f.reset()
	_, err = p.Chat(context.Background(), llm.Request{
		Model: "claude-test-1",
		Tools: []llm.Tool{weatherTool},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Weather in Paris and Oslo?"},
			{Role: llm.RoleAssistant, Text: "Let me check.", ToolCalls: reply.ToolCalls},
			{Role: llm.RoleTool, ToolCallID: "toolu_01", ToolName: "get_weather", Text: "Sunny, 21C"},
			{Role: llm.RoleTool, ToolCallID: "toolu_02", ToolName: "get_weather", Text: "no such forecast", IsError: true},
			{Role: llm.RoleUser, Text: "And tomorrow?"},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "messages", f.only(t).body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"Weather in Paris and Oslo?"}]},
		{"role":"assistant","content":[
			{"type":"text","text":"Let me check."},
			{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{"city":"Paris"}},
			{"type":"tool_use","id":"toolu_02","name":"get_weather","input":{"city":"Oslo","days":2}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"Sunny, 21C"}],"is_error":false},
			{"type":"tool_result","tool_use_id":"toolu_02","content":[{"type":"text","text":"no such forecast"}],"is_error":true},
			{"type":"text","text":"And tomorrow?"}]}]`)
}

func TestChatEmptyToolResult(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonReply(textReply))
	_, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "toolu_31", Name: "noop"}}},
		{Role: llm.RoleTool, ToolCallID: "toolu_31", ToolName: "noop"},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "messages", f.only(t).body["messages"], `[
		{"role":"user","content":[{"type":"text","text":"go"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_31","name":"noop","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_31","is_error":false}]}]`)
}

func streamEvents(model string) []string {
	return []string{
		`{"type":"message_start","message":{"id":"msg_03","type":"message","role":"assistant","model":"` + model + `","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"weather."}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_11","name":"get_weather","input":{}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\", \"days\": 3}"}}`,
		`{"type":"content_block_stop","index":1}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_12","name":"noop","input":{}}}`,
		`{"type":"content_block_stop","index":2}`,
		`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`,
		`{"type":"message_stop"}`,
	}
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	f := newFake(t, sse(streamEvents("claude-test-1")...))
	var deltas []string
	reply, err := f.provider(t, 0).Chat(context.Background(), llm.Request{
		Model:    "claude-test-1",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather?"}},
		Tools:    []llm.Tool{weatherTool},
	}, &llm.Stream{Text: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Checking", " the ", "weather."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	if got := strings.Join(deltas, ""); got != reply.Text || reply.Text != "Checking the weather." {
		t.Errorf("deltas %q, Reply.Text %q", got, reply.Text)
	}
	if len(reply.ToolCalls) != 2 || reply.ToolCalls[0].ID != "toolu_11" || reply.ToolCalls[0].Name != "get_weather" || reply.ToolCalls[1].Name != "noop" {
		t.Fatalf("tool calls = %+v", reply.ToolCalls)
	}
	jsonEq(t, "streamed arguments", reply.ToolCalls[0].Arguments, `{"city":"Paris","days":3}`)
	jsonEq(t, "empty arguments", reply.ToolCalls[1].Arguments, `{}`)
	want := llm.Usage{InputTokens: 25, OutputTokens: 42, Reported: true}
	if reply.Usage != want || reply.Stop != llm.StopToolCalls || reply.Model != "claude-test-1" {
		t.Errorf("usage, stop, model = %+v, %q, %q", reply.Usage, reply.Stop, reply.Model)
	}
	s := f.only(t)
	checkAuth(t, s)
	if s.path != "/v1/messages" {
		t.Errorf("path = %s", s.path)
	}
	jsonEq(t, "stream", s.body["stream"], `true`)
}

func TestChatStreamCutShort(t *testing.T) {
	t.Parallel()
	events := streamEvents("m")
	f := newFake(t, sse(events[:5]...))
	_, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, &llm.Stream{Text: func(string) {}})
	if err == nil || !strings.Contains(err.Error(), "message_stop") {
		t.Errorf("err = %v, want one about the stream ending early", err)
	}
}

const scoreSchema = `{"type":"object","properties":{"score":{"type":"integer"},"why":{"type":"string"}},"required":["score","why"]}`

func TestChatSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schemaName, wantTool string
		stream                     bool
	}{
		{"default name", "", "output", false},
		{"named", "verdict", "verdict", false},
		{"streamed", "verdict", "verdict", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var handle func(http.ResponseWriter, *http.Request)
			if tt.stream {
				handle = sse(
					`{"type":"message_start","message":{"id":"msg_04","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`,
					`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_21","name":"`+tt.wantTool+`","input":{}}}`,
					`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"score\": 7, "}}`,
					`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"\"why\": \"ok\"}"}}`,
					`{"type":"content_block_stop","index":0}`,
					`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":11}}`,
					`{"type":"message_stop"}`)
			} else {
				handle = jsonReply(`{"id":"msg_04","type":"message","role":"assistant","model":"m",
					"content":[{"type":"tool_use","id":"toolu_21","name":"` + tt.wantTool + `","input":{"score":7,"why":"ok"}}],
					"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":11}}`)
			}
			f := newFake(t, handle)
			var stream *llm.Stream
			var deltas strings.Builder
			if tt.stream {
				stream = &llm.Stream{Text: func(d string) { deltas.WriteString(d) }}
			}
			reply, err := f.provider(t, 0).Chat(context.Background(), llm.Request{
				Model:      "m",
				Messages:   []llm.Message{{Role: llm.RoleUser, Text: "Rate it"}},
				Tools:      []llm.Tool{weatherTool},
				Schema:     json.RawMessage(scoreSchema),
				SchemaName: tt.schemaName,
			}, stream)
			if err != nil {
				t.Fatal(err)
			}
			jsonEq(t, "reply text", json.RawMessage(reply.Text), `{"score":7,"why":"ok"}`)
			if reply.Stop != llm.StopEnd || len(reply.ToolCalls) != 0 {
				t.Errorf("stop, calls = %q, %+v; want end and none", reply.Stop, reply.ToolCalls)
			}
			if tt.stream && deltas.String() != reply.Text {
				t.Errorf("deltas %q != Reply.Text %q", deltas.String(), reply.Text)
			}
			s := f.only(t)
			jsonEq(t, "tool_choice", s.body["tool_choice"], `{"type":"tool","name":"`+tt.wantTool+`"}`)
			tools, _ := s.body["tools"].([]any)
			if len(tools) != 2 {
				t.Fatalf("tools on the wire = %v", s.body["tools"])
			}
			last, _ := tools[1].(map[string]any)
			jsonEq(t, "schema tool name", last["name"], `"`+tt.wantTool+`"`)
			jsonEq(t, "schema tool input_schema", last["input_schema"], scoreSchema)
		})
	}
}

func TestChatSchemaRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t, jsonReply(textReply))
	p := f.provider(t, 0)
	for name, req := range map[string]llm.Request{
		"not an object": {Model: "m", Schema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)},
		"name clash":    {Model: "m", Schema: json.RawMessage(scoreSchema), SchemaName: "get_weather", Tools: []llm.Tool{weatherTool}},
	} {
		req.Messages = []llm.Message{{Role: llm.RoleUser, Text: "hi"}}
		if _, err := p.Chat(context.Background(), req, nil); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests sent for refused schemas", n)
	}
}

func TestChatAPIErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status       int
		typ, message string
	}{
		{http.StatusUnauthorized, "authentication_error", "invalid x-api-key"},
		{http.StatusTooManyRequests, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"},
		{http.StatusInternalServerError, "api_error", "Internal server error"},
	}
	for _, tt := range tests {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d streamed=%v", tt.status, streamed), func(t *testing.T) {
				f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Retry-After", "0")
					w.Header().Set("request-id", "req_011")
					w.WriteHeader(tt.status)
					fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, tt.typ, tt.message)
				})
				var stream *llm.Stream
				if streamed {
					stream = &llm.Stream{Text: func(string) {}}
				}
				_, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "claude-test-1",
					Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
				if err == nil {
					t.Fatal("no error")
				}
				msg := err.Error()
				t.Log(msg)
				for _, want := range []string{"anthropic", `"claude-test-1"`, fmt.Sprint(tt.status), tt.message} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q does not name %q", msg, want)
					}
				}
				if strings.Contains(msg, testKey) {
					t.Errorf("error %q carries the key", msg)
				}
				var ae *APIError
				if !errors.As(err, &ae) || ae.Status != tt.status || ae.Type != tt.typ || ae.Model != "claude-test-1" {
					t.Errorf("err = %#v, want an *APIError for %d %s", err, tt.status, tt.typ)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d requests, want 1 (no SDK retries)", n)
				}
			})
		}
	}
}

func TestChatStreamErrorEvent(t *testing.T) {
	t.Parallel()
	events := streamEvents("m")[:4]
	events = append(events, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	f := newFake(t, sse(events...))
	_, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, &llm.Stream{Text: func(string) {}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Type != "overloaded_error" || !strings.Contains(err.Error(), "Overloaded") {
		t.Fatalf("err = %v, want the stream's overloaded_error", err)
	}
	t.Log(err)
}

func TestChatCancel(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			arrived := make(chan struct{})
			release := make(chan struct{})
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				if streamed {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, "event: message_start\ndata: "+streamEvents("m")[0]+"\n\n")
					w.(http.Flusher).Flush()
				}
				close(arrived)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			})
			// Runs before the server's Close, which waits for this handler.
			t.Cleanup(func() { close(release) })
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-arrived; cancel() }()
			var stream *llm.Stream
			if streamed {
				stream = &llm.Stream{Text: func(string) {}}
			}
			done := make(chan error, 1)
			go func() {
				_, err := f.provider(t, 0).Chat(ctx, llm.Request{Model: "m",
					Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Chat did not return after its ctx was cancelled")
			}
		})
	}
}

func TestChatTooLarge(t *testing.T) {
	t.Parallel()
	const limit = 2048
	big := strings.Repeat("x", 4*limit)
	var events []string
	events = append(events, streamEvents("m")[:2]...)
	for range 64 {
		events = append(events, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+strings.Repeat("y", 100)+`"}}`)
	}
	events = append(events, streamEvents("m")[14:]...)
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request)
		stream bool
	}{
		{"plain", jsonReply(`{"id":"msg_05","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"` + big + `"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`), false},
		{"streamed", sse(events...), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.handle)
			var stream *llm.Stream
			if tt.stream {
				stream = &llm.Stream{Text: func(string) {}}
			}
			_, err := f.provider(t, limit).Chat(context.Background(), llm.Request{Model: "m",
				Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
			var tl *llm.TooLargeError
			if !errors.As(err, &tl) || tl.Limit != limit {
				t.Errorf("err = %v, want a *llm.TooLargeError at %d", err, limit)
			}
		})
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("after_id") == "" {
			io.WriteString(w, `{"data":[{"type":"model","id":"claude-b","display_name":"B","created_at":"2026-05-01T00:00:00Z"},
				{"type":"model","id":"claude-a","display_name":"A","created_at":"2026-01-01T00:00:00Z"}],
				"has_more":true,"first_id":"claude-b","last_id":"claude-a"}`)
			return
		}
		io.WriteString(w, `{"data":[{"type":"model","id":"claude-old","display_name":"Old","created_at":"2025-01-01T00:00:00Z"}],
			"has_more":false,"first_id":"claude-old","last_id":"claude-old"}`)
	})
	ids, err := f.provider(t, 0).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"claude-b", "claude-a", "claude-old"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("models = %q, want %q", ids, want)
	}
	rs := f.requests()
	if len(rs) != 2 {
		t.Fatalf("%d requests, want 2 pages", len(rs))
	}
	for _, s := range rs {
		if s.method != http.MethodGet || s.path != "/v1/models" {
			t.Errorf("request = %s %s, want GET /v1/models", s.method, s.path)
		}
		checkAuth(t, s)
	}
	if !strings.Contains(rs[1].query, "after_id=claude-a") {
		t.Errorf("second page query = %q, want after_id=claude-a", rs[1].query)
	}
}

func TestModelsNotListed(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"Not found"}}`)
	})
	_, err := f.provider(t, 0).Models(context.Background())
	if !errors.Is(err, llm.ErrNoModelList) {
		t.Fatalf("err = %v, want one wrapping llm.ErrNoModelList", err)
	}
	if !strings.Contains(err.Error(), "404") || strings.Contains(err.Error(), testKey) {
		t.Errorf("err = %q", err)
	}
}

func TestNewRefusesNoClient(t *testing.T) {
	t.Parallel()
	if _, err := New(llm.Config{APIKey: testKey}); err == nil {
		t.Fatal("New without an HTTP client: no error")
	}
}

// The SDK's base-URL variable does not redirect a call: with
// ANTHROPIC_BASE_URL naming another loopback server, the request still
// goes where Config says, and the other server sees nothing.
func TestBaseURLFromTheEnvironmentIsNotUsed(t *testing.T) {
	elsewhere := newFake(t, jsonReply(textReply))
	t.Setenv("ANTHROPIC_BASE_URL", elsewhere.srv.URL)
	f := newFake(t, jsonReply(textReply))
	if _, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "claude-test-1", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	f.only(t)
	if n := len(elsewhere.requests()); n != 0 {
		t.Fatalf("the server named by ANTHROPIC_BASE_URL took %d requests", n)
	}
}

// A server that echoes the key it was sent in its error message does not
// get it into the error.
func TestEchoedKeyIsScrubbed(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key %s"}}`, r.Header.Get("X-Api-Key"))
	})
	_, err := f.provider(t, 0).Chat(context.Background(), llm.Request{Model: "claude-test-1", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "invalid x-api-key [key]") {
		t.Fatalf("err = %v, want the server's message with the key scrubbed", err)
	}
}
