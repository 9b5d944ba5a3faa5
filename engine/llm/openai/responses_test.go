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
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/chainstudio/studio/engine/llm"
)

// responses is NewResponses on the fake server.
func (f *fake) responses(key string, maxBytes int64) llm.Provider {
	f.t.Helper()
	p, err := NewResponses(llm.Config{BaseURL: f.srv.URL + "/v1", APIKey: key, HTTPClient: f.srv.Client(), MaxResponseBytes: maxBytes})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// response is a Responses API response object as OpenAI sends it, with
// status, output items and usage (a JSON object or null) filled in.
func response(status, output, usage string) string {
	incomplete := `null`
	if status == "incomplete" {
		incomplete = `{"reason": "max_output_tokens"}`
	}
	return `{"id": "resp_1", "object": "response", "created_at": 1741476542, "status": "` + status + `",
		"background": false, "error": null, "incomplete_details": ` + incomplete + `, "instructions": null,
		"max_output_tokens": null, "max_tool_calls": null, "model": "gpt-test-2026", "output": [` + output + `],
		"parallel_tool_calls": true, "previous_response_id": null, "reasoning": {"effort": null, "summary": null},
		"service_tier": "default", "store": false, "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
		"tool_choice": "auto", "tools": [], "top_logprobs": 0, "top_p": 1.0, "truncation": "disabled",
		"usage": ` + usage + `, "user": null, "metadata": {}}`
}

const usage3621 = `{"input_tokens": 36, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 21, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 57}`

func textItem(text string) string {
	q, _ := json.Marshal(text)
	return `{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "text": ` + string(q) + `, "annotations": [], "logprobs": []}]}`
}

func callItem(id, callID, name, args string) string {
	q, _ := json.Marshal(args)
	return `{"type": "function_call", "id": "` + id + `", "call_id": "` + callID + `", "name": "` + name + `", "arguments": ` + string(q) + `, "status": "completed"}`
}

// answerEvents streams Responses events as OpenAI does: each with its
// event line and its type in the data, numbered in sequence.
func answerEvents(events ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i, e := range events {
			var ev map[string]json.RawMessage
			if err := json.Unmarshal([]byte(e), &ev); err != nil {
				panic(fmt.Sprintf("event %d is not JSON: %v: %s", i, err, e))
			}
			var typ string
			json.Unmarshal(ev["type"], &typ)
			ev["sequence_number"] = json.RawMessage(fmt.Sprint(i))
			data, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
			w.(http.Flusher).Flush()
		}
	}
}

func created() string {
	return `{"type": "response.created", "response": ` + response("in_progress", "", "null") + `}`
}

func TestResponsesSendsTheTurnAndReadsTheReply(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, response("completed", textItem("Paris."), usage3621)))
	reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{
		Model:       "gpt-test",
		System:      "Answer in one word.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Text: "Capital of France?"}},
		Temperature: ptr(0.25),
		MaxTokens:   50,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Text: "Paris.", Stop: llm.StopEnd, Model: "gpt-test-2026", Usage: llm.Usage{InputTokens: 36, OutputTokens: 21, Reported: true}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v, want %+v", reply, want)
	}
	got := f.only()
	if got.Method != "POST" || got.Path != "/v1/responses" {
		t.Errorf("sent %s %s, want POST /v1/responses", got.Method, got.Path)
	}
	if got.Auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got.Auth)
	}
	wantBody := `{"model": "gpt-test", "instructions": "Answer in one word.", "store": false, "temperature": 0.25, "max_output_tokens": 50,
		"input": [{"type": "message", "role": "user", "content": "Capital of France?"}]}`
	if !reflect.DeepEqual(any(got.Body), jsonOf(t, wantBody)) {
		t.Errorf("body = %s\nwant %s", got.Raw, wantBody)
	}
}

func TestResponsesToolsOnTheWireAndTwoCallsBack(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, response("completed",
		`{"type": "reasoning", "id": "rs_1", "summary": []}, `+
			callItem("fc_1", "call_a", "weather", `{"city": "Paris"}`)+", "+callItem("fc_2", "call_b", "time", ""),
		usage3621)))
	tools := []llm.Tool{
		{Name: "weather", Description: "The weather in a city.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "maxLength": 80}}, "required": ["city"]}`)},
		{Name: "time", InputSchema: json.RawMessage(`{"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"], "additionalProperties": false}`)},
		{Name: "ping"},
	}
	reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{
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
	// Strict only for the schema that already says what strict mode needs.
	wantField(t, f.only().Body, "tools", `[
		{"type": "function", "name": "weather", "description": "The weather in a city.", "strict": false,
			"parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 80}}, "required": ["city"]}},
		{"type": "function", "name": "time", "strict": true,
			"parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"], "additionalProperties": false}},
		{"type": "function", "name": "ping", "strict": false, "parameters": {"type": "object", "properties": {}}}
	]`)

	// The next turn carries the calls as function_call items and their
	// results as function_call_output items, one a failure.
	f2 := newFake(t, answerJSON(200, response("completed", textItem("Sunny; the clock is down."), usage3621)))
	_, err = f2.responses(testKey, 0).Chat(context.Background(), llm.Request{
		Model: "gpt-test", Tools: tools,
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Weather and time in Paris?"},
			{Role: llm.RoleAssistant, Text: "Looking.", ToolCalls: reply.ToolCalls},
			{Role: llm.RoleTool, ToolCallID: "call_a", ToolName: "weather", Text: `{"sky": "sunny"}`},
			{Role: llm.RoleTool, ToolCallID: "call_b", ToolName: "time", Text: "clock unreachable", IsError: true},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_c", Name: "ping"}}},
			{Role: llm.RoleTool, ToolCallID: "call_c", ToolName: "ping", Text: "pong"},
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantField(t, f2.only().Body, "input", `[
		{"type": "message", "role": "user", "content": "Weather and time in Paris?"},
		{"type": "message", "role": "assistant", "content": "Looking."},
		{"type": "function_call", "call_id": "call_a", "name": "weather", "arguments": "{\"city\": \"Paris\"}"},
		{"type": "function_call", "call_id": "call_b", "name": "time", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_a", "output": "{\"sky\": \"sunny\"}"},
		{"type": "function_call_output", "call_id": "call_b", "output": "The tool call failed: clock unreachable"},
		{"type": "function_call", "call_id": "call_c", "name": "ping", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_c", "output": "pong"}
	]`)
}

func TestResponsesStreamedTextAndACall(t *testing.T) {
	t.Parallel()
	final := response("completed", textItem("Let me check.")+", "+callItem("fc_1", "call_a", "weather", `{"city": "Paris"}`),
		`{"input_tokens": 40, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 12, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 52}`)
	f := newFake(t, answerEvents(
		created(),
		`{"type": "response.in_progress", "response": `+response("in_progress", "", "null")+`}`,
		`{"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "content": [], "role": "assistant"}}`,
		`{"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}`,
		`{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Let me ", "logprobs": []}`,
		`{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "check.", "logprobs": []}`,
		`{"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "Let me check.", "logprobs": []}`,
		`{"type": "response.content_part.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "Let me check.", "annotations": []}}`,
		`{"type": "response.output_item.done", "output_index": 0, "item": `+textItem("Let me check.")+`}`,
		`{"type": "response.output_item.added", "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_a", "name": "weather"}}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"city\""}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": ": \"Par"}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "is\"}"}`,
		`{"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"city\": \"Paris\"}"}`,
		`{"type": "response.output_item.done", "output_index": 1, "item": `+callItem("fc_1", "call_a", "weather", `{"city": "Paris"}`)+`}`,
		`{"type": "response.completed", "response": `+final+`}`,
	))
	var deltas []string
	reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{
		Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Weather?"}},
	}, &llm.Stream{Text: func(d string) { deltas = append(deltas, d) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Let me ", "check."}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	want := &llm.Reply{
		Text: "Let me check.", Stop: llm.StopToolCalls, Model: "gpt-test-2026",
		ToolCalls: []llm.ToolCall{{ID: "call_a", Name: "weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}},
		Usage:     llm.Usage{InputTokens: 40, OutputTokens: 12, Reported: true},
	}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v\nwant %+v", reply, want)
	}
	got := f.only()
	if got.Path != "/v1/responses" || got.Auth != "Bearer "+testKey {
		t.Errorf("sent %s with Authorization %q", got.Path, got.Auth)
	}
	wantField(t, got.Body, "stream", `true`)
	wantField(t, got.Body, "store", `false`)
}

// Arguments put together from deltas alone, two calls' deltas interleaved
// by output index, when a server sends no .done events.
func TestResponsesStreamAssemblesArgumentsFromDeltas(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerEvents(
		created(),
		`{"type": "response.output_item.added", "output_index": 0, "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_a", "name": "a"}}`,
		`{"type": "response.output_item.added", "output_index": 1, "item": {"id": "fc_2", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_b", "name": "b"}}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 1, "delta": "{\"n\": "}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": "{\"n\": 1}"}`,
		`{"type": "response.function_call_arguments.delta", "item_id": "fc_2", "output_index": 1, "delta": "2}"}`,
		`{"type": "response.completed", "response": `+response("completed", "", "null")+`}`,
	))
	reply, err := f.responses("", 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "go"}}}, &llm.Stream{})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Reply{Stop: llm.StopToolCalls, Model: "gpt-test-2026", ToolCalls: []llm.ToolCall{
		{ID: "call_a", Name: "a", Arguments: json.RawMessage(`{"n": 1}`)},
		{ID: "call_b", Name: "b", Arguments: json.RawMessage(`{"n": 2}`)},
	}}
	if !reflect.DeepEqual(reply, want) {
		t.Errorf("reply = %+v\nwant %+v", reply, want)
	}
}

func TestResponsesSchemaIsTheTextFormat(t *testing.T) {
	t.Parallel()
	closed := `{"type": "object", "properties": {"score": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "object", "properties": {"t": {"type": "string"}}, "required": ["t"], "additionalProperties": false}}}, "required": ["score", "tags"], "additionalProperties": false}`
	open := `{"type": "object", "properties": {"score": {"type": "integer"}, "note": {"type": "string"}}, "required": ["score"]}`
	for _, tc := range []struct {
		schema, name, wantName string
		strict                 bool
	}{{closed, "verdict", "verdict", true}, {open, "", "output", false}} {
		f := newFake(t, answerJSON(200, response("completed", textItem(`{"score": 7, "tags": []}`), usage3621)))
		reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{
			Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "Rate it."}},
			Schema: json.RawMessage(tc.schema), SchemaName: tc.name,
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Text != `{"score": 7, "tags": []}` || reply.Stop != llm.StopEnd {
			t.Errorf("reply = %+v", reply)
		}
		wantField(t, f.only().Body, "text", fmt.Sprintf(`{"format": {"type": "json_schema", "name": %q, "schema": %s, "strict": %v}}`, tc.wantName, tc.schema, tc.strict))
	}
}

func TestFitsStrict(t *testing.T) {
	t.Parallel()
	for schema, want := range map[string]bool{
		`{"type": "object", "properties": {}, "additionalProperties": false}`:                                                                                                                                                           true,
		`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}`:                                                                                                                 true,
		`{"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, "required": ["a"], "additionalProperties": false}`:                                                                                  true,
		`{"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "required": ["a"], "additionalProperties": false, "$defs": {"x": {"type": "object", "properties": {"b": {"type": "integer"}}, "additionalProperties": false}}}`: false,
		`{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}`:                                                                                                                                    false,
		`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}`:                                                                                                                                                false,
		`{"type": "object", "properties": {"a": {"type": "object"}}, "required": ["a"], "additionalProperties": false}`:                                                                                                                 false,
		`{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}, "required": ["a"], "additionalProperties": false}`:                                                                                                    false,
		`{"type": "array", "items": {"type": "string"}}`:                                                                                                                                                                                false,
		`{"type": "object"`: false,
		``:                  false,
	} {
		if got := fitsStrict(json.RawMessage(schema)); got != want {
			t.Errorf("fitsStrict(%s) = %v, want %v", schema, got, want)
		}
	}
}

func TestResponsesStopReasons(t *testing.T) {
	t.Parallel()
	t.Run("max_output_tokens", func(t *testing.T) {
		f := newFake(t, answerJSON(200, response("incomplete", textItem("The first part of"), usage3621)))
		reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}, MaxTokens: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Stop != llm.StopMaxTokens || reply.Text != "The first part of" {
			t.Errorf("reply = %+v, want cut at max tokens", reply)
		}
	})
	t.Run("refusal", func(t *testing.T) {
		refused := `{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]}`
		f := newFake(t, answerJSON(200, response("completed", refused, usage3621)))
		reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if reply.Stop != llm.StopRefused || reply.Text != "I can't help with that." {
			t.Errorf("reply = %+v, want refused with the refusal's text", reply)
		}
	})
	t.Run("streamed refusal", func(t *testing.T) {
		f := newFake(t, answerEvents(
			created(),
			`{"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "I can't "}`,
			`{"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "help."}`,
			`{"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "refusal": "I can't help."}`,
			`{"type": "response.completed", "response": `+response("completed", "", usage3621)+`}`,
		))
		reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, &llm.Stream{})
		if err != nil {
			t.Fatal(err)
		}
		if reply.Stop != llm.StopRefused || reply.Text != "I can't help." {
			t.Errorf("reply = %+v, want refused with the refusal's text", reply)
		}
	})
	t.Run("streamed incomplete", func(t *testing.T) {
		f := newFake(t, answerEvents(
			created(),
			`{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "The first"}`,
			`{"type": "response.incomplete", "response": `+response("incomplete", textItem("The first"), usage3621)+`}`,
		))
		reply, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}, &llm.Stream{})
		if err != nil {
			t.Fatal(err)
		}
		if reply.Stop != llm.StopMaxTokens || reply.Text != "The first" || !reply.Usage.Reported {
			t.Errorf("reply = %+v, want cut at max tokens with usage", reply)
		}
	})
}

func TestResponsesServerErrorsNameProviderModelStatusAndMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status  int
		body    string
		message string
	}{
		{401, `{"error": {"message": "Incorrect API key provided: ` + testKey + `.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`, "Incorrect API key provided: [key]."},
		{429, `{"error": {"message": "Rate limit reached for requests", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`, "Rate limit reached for requests"},
		{500, `{"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}`, "The server had an error while processing your request."},
	} {
		for _, streamed := range []bool{false, true} {
			name := fmt.Sprintf("%d streamed=%v", tc.status, streamed)
			f := newFake(t, answerJSON(tc.status, tc.body))
			var stream *llm.Stream
			if streamed {
				stream = &llm.Stream{Text: func(string) { t.Errorf("%s: text from an error", name) }}
			}
			_, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
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
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Errorf("%s: the SDK's error with the status is not reachable: %v", name, err)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("%s: %d requests, want 1", name, n)
			}
		}
	}
}

// A failure the server reports inside the stream (response.failed, or an
// error event) ends the call with what it said, the key scrubbed.
func TestResponsesStreamFailures(t *testing.T) {
	t.Parallel()
	failed := strings.Replace(response("failed", "", "null"), `"error": null`,
		`"error": {"code": "server_error", "message": "The model crashed (key `+testKey+`)."}`, 1)
	for name, events := range map[string][]string{
		"response.failed": {created(), `{"type": "response.failed", "response": ` + failed + `}`},
		"error event": {created(), `{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hi"}`,
			`{"type": "error", "code": "server_error", "message": "The model crashed (key ` + testKey + `).", "param": null}`},
		// The error event's other shape, its fields under "error".
		"nested error event": {created(), `{"type": "error", "error": {"type": "server_error", "code": "server_error", "message": "The model crashed (key ` + testKey + `).", "param": null}}`},
	} {
		f := newFake(t, answerEvents(events...))
		_, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, &llm.Stream{})
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		msg := err.Error()
		for _, part := range []string{`openai: model "gpt-test"`, "The model crashed (key [key]).", "server_error"} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s: error %q does not say %q", name, msg, part)
			}
		}
		if strings.Contains(msg, testKey) {
			t.Errorf("%s: error %q holds the key", name, msg)
		}
	}
	// A 200 whose response failed is an error unstreamed too.
	f := newFake(t, answerJSON(200, failed))
	_, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "gpt-test", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "The model crashed") {
		t.Errorf("err = %v, want the response's error", err)
	}
}

func TestResponsesStreamCutInTheMiddle(t *testing.T) {
	t.Parallel()
	for name, answer := range map[string]http.HandlerFunc{
		"between events": answerEvents(
			created(),
			`{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hel"}`,
		),
		"inside an event": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\": \"response.output_text.delta\", \"delta\": \"Hel\"}\n\n")
			io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\": \"response.output_te")
		},
	} {
		f := newFake(t, answer)
		_, err := f.responses(testKey, 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, &llm.Stream{})
		if err == nil {
			t.Fatalf("%s: a cut stream made a reply", name)
		}
		if !errors.Is(err, llm.ErrIncomplete) {
			t.Errorf("%s: err = %v, want ErrIncomplete", name, err)
		}
		if !strings.Contains(err.Error(), `openai: model "m"`) {
			t.Errorf("%s: err = %v does not name the provider and model", name, err)
		}
	}
}

func TestResponsesCancelStopsTheCall(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		started := make(chan struct{})
		f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if streamed {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "event: response.created\ndata: "+strings.ReplaceAll(created(), "\n", " ")+"\n\n")
				w.(http.Flusher).Flush()
			}
			close(started)
			<-r.Context().Done()
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		var stream *llm.Stream
		if streamed {
			stream = &llm.Stream{}
		}
		_, err := f.responses(testKey, 0).Chat(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("streamed=%v: err = %v, want the context's error", streamed, err)
		}
		cancel()
	}
}

func TestResponsesOverTheCapIsTooLarge(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 8000)
	many := []string{created()}
	for range 100 {
		many = append(many, `{"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "xxxxxxxxxxxxxxxxxxxxxxxx"}`)
	}
	for _, tc := range []struct {
		name     string
		answer   http.HandlerFunc
		streamed bool
	}{
		{"body", answerJSON(200, response("completed", textItem(long), usage3621)), false},
		{"stream", answerEvents(many...), true},
		{"error body", answerJSON(500, `{"error": {"message": "`+long+`"}}`), false},
	} {
		f := newFake(t, tc.answer)
		var stream *llm.Stream
		if tc.streamed {
			stream = &llm.Stream{}
		}
		_, err := f.responses(testKey, 4096).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, stream)
		var tl *llm.TooLargeError
		if !errors.As(err, &tl) || tl.Limit != 4096 {
			t.Errorf("%s: err = %v, want a TooLargeError at 4096", tc.name, err)
		}
	}
}

// The SDK's environment variables neither add a key nor move the endpoint.
func TestResponsesIgnoresTheEnvironment(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request went to OPENAI_BASE_URL: %s", r.URL)
	}))
	defer elsewhere.Close()
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", elsewhere.URL)
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFake(t, answerJSON(200, response("completed", textItem("hi"), "null")))
	reply, err := f.responses("", 0).Chat(context.Background(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
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
	if reply.Usage.Reported {
		t.Errorf("usage = %+v, want not reported", reply.Usage)
	}
}

func TestResponsesModels(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(200, `{"object": "list", "data": [{"id": "gpt-test", "object": "model", "created": 1700000000, "owned_by": "openai"}]}`))
	models, err := f.responses(testKey, 0).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"gpt-test"}; !reflect.DeepEqual(models, want) {
		t.Errorf("models = %q, want %q", models, want)
	}
	if got := f.only(); got.Method != "GET" || got.Path != "/v1/models" || got.Auth != "Bearer "+testKey {
		t.Errorf("sent %s %s with Authorization %q", got.Method, got.Path, got.Auth)
	}
}

func TestNewResponsesRefuses(t *testing.T) {
	t.Parallel()
	if _, err := NewResponses(llm.Config{}); err == nil {
		t.Error("NewResponses took a Config with no HTTP client")
	}
	if _, err := NewResponses(llm.Config{BaseURL: "localhost/v1", HTTPClient: http.DefaultClient}); err == nil {
		t.Error("NewResponses took a base URL with no scheme")
	}
}

func TestResponsesRequestsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	f := newFake(t, answerJSON(500, `{"error": {"message": "should not be asked"}}`))
	user := llm.Message{Role: llm.RoleUser, Text: "hi"}
	for name, req := range map[string]llm.Request{
		"unknown role":        {Model: "m", Messages: []llm.Message{{Role: "system", Text: "x"}}},
		"result with no call": {Model: "m", Messages: []llm.Message{user, {Role: llm.RoleTool, Text: "x"}}},
		"call with no id":     {Model: "m", Messages: []llm.Message{user, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "t"}}}}},
		"schema not JSON":     {Model: "m", Messages: []llm.Message{user}, Schema: json.RawMessage(`{`)},
		"tool schema array":   {Model: "m", Messages: []llm.Message{user}, Tools: []llm.Tool{{Name: "t", InputSchema: json.RawMessage(`[]`)}}},
	} {
		_, err := f.responses(testKey, 0).Chat(context.Background(), req, nil)
		if err == nil || !strings.Contains(err.Error(), `openai: model "m"`) {
			t.Errorf("%s: err = %v, want one naming the provider and model", name, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
