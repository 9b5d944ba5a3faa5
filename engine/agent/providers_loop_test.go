package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/tool"
)

// fakeModel is one provider's scripted fake: the url a model block gives
// it and the requests it took.
type fakeModel struct {
	url      string
	requests func() []map[string]any
	paths    func() []string
}

// loopProviders start each provider's fake with a script.
var loopProviders = []struct {
	name  string
	start func(t *testing.T, turns ...llmtest.Turn) fakeModel
}{
	{"openai", func(t *testing.T, turns ...llmtest.Turn) fakeModel {
		f := llmtest.NewOpenAI(t, turns...)
		return fakeModel{f.URL + "/v1", f.Requests, f.Paths}
	}},
	{"anthropic", func(t *testing.T, turns ...llmtest.Turn) fakeModel {
		f := llmtest.NewAnthropic(t, turns...)
		return fakeModel{f.URL, f.Requests, f.Paths}
	}},
	{"gemini", func(t *testing.T, turns ...llmtest.Turn) fakeModel {
		f := llmtest.NewGemini(t, turns...)
		return fakeModel{f.URL, f.Requests, f.Paths}
	}},
}

// providerAgent is helperAgent on provider: a built-in tool and a chain
// whose arguments must have a string customer.
func providerAgent(provider string) string {
	return `name: helper
model: {provider: ` + provider + `, url: "%URL%", name: m}
system_prompt: You help.
prompt: "{{ query }}"
tools:
  - tool: echo
  - chain: lookup
    name: find
    input_schema: {type: object, properties: {customer: {type: string}}, required: [customer]}
`
}

// at reads a path of keys and indexes out of decoded JSON, failing the
// test where the path does not exist.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %v is not an object", path[:i+1], v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("at %v: no %q in %v", path[:i+1], k, m)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: %v has no index %d", path[:i+1], v, k)
			}
			v = a[k]
		}
	}
	return v
}

// The tool loop's script: a turn of text with three calls at once (the
// last with arguments that fail the chain's schema), then the answer.
var loopCalls = []llmtest.Call{
	{ID: "call_a", Name: "echo", Args: `{"message":"hi"}`},
	{ID: "call_b", Name: "find", Args: `{"customer":"ACME"}`},
	{ID: "call_c", Name: "find", Args: `{"customer":5}`},
}

const (
	loopSaid    = "Let me look that up. "
	loopAnswer  = "ACME is a customer and echo said hi."
	loopBadArgs = "error: the arguments do not fit the tool's input schema: customer: want a string, got 5"
)

func TestToolLoopThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		for _, streamed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/streamed=%v", p.name, streamed), func(t *testing.T) {
				t.Parallel()
				testToolLoopThrough(t, p.name, p.start, streamed)
			})
		}
	}
}

// testToolLoopThrough runs helper through provider's fake on the loop's
// script: the answer, the calls, the streamed text, the usage and what the
// second request carries.
func testToolLoopThrough(t *testing.T, provider string, start func(*testing.T, ...llmtest.Turn) fakeModel, streamed bool) {
	said, answer := loopSaid, loopAnswer
	f := start(t, llmtest.Turn{Text: said, Calls: loopCalls}, llmtest.Turn{Text: answer})
	doc := providerAgent(provider)
	if !streamed {
		doc = strings.Replace(doc, "name: m}", "name: m, stream: false}", 1)
	}
	rt, def, chainCalls := loopRuntimeAt(t, f.url, doc)
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "Who is ACME?"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out["answer"] != answer {
		t.Fatalf("answer %q", out["answer"])
	}
	var statuses []string
	for _, c := range out["tool_calls"].([]any) {
		statuses = append(statuses, c.(map[string]any)["status"].(string))
	}
	if strings.Join(statuses, ",") != "ok,ok,error" {
		t.Fatalf("statuses %v", statuses)
	}
	if len(*chainCalls) != 1 || (*chainCalls)[0]["customer"] != "ACME" {
		t.Fatalf("the chain ran with %v", *chainCalls)
	}
	for turn, want := range map[int]string{1: said, 2: answer} {
		var text strings.Builder
		for _, m := range ev.steps(StepText) {
			if m["turn"] == turn {
				text.WriteString(m["text"].(string))
			}
		}
		if !streamed {
			want = ""
		}
		if text.String() != want {
			t.Fatalf("turn %d streamed %q, want %q", turn, text.String(), want)
		}
	}
	// Each turn's tokens, as the fake counts them (10 a request
	// in, 3 out).
	usage := ev.steps(engine.StepModelUsage)
	if len(usage) != 2 || usage[1]["turn"] != 2 || usage[1]["input_tokens"] != int64(20) || usage[1]["output_tokens"] != int64(3) {
		t.Fatalf("usage %v", usage)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if provider != "gemini" && (reqs[0]["stream"] == true) != streamed {
		t.Fatalf("stream %v in %v", reqs[0]["stream"], reqs[0])
	}
	checkSecondRequest(t, provider, streamed, f)
}

// checkSecondRequest checks the request after the loop's first turn: the
// assistant's calls and their results (the last one failed), in order and
// in provider's own form.
func checkSecondRequest(t *testing.T, provider string, streamed bool, f fakeModel) {
	t.Helper()
	calls, said, badArgs := loopCalls, loopSaid, loopBadArgs
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	second := reqs[1]
	switch provider {
	case "openai":
		msgs := second["messages"].([]any)
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.(map[string]any)["role"].(string))
		}
		if strings.Join(roles, ",") != "system,user,assistant,tool,tool,tool" {
			t.Fatalf("roles %v", roles)
		}
		if at(t, msgs, 2, "content") != said || len(at(t, msgs, 2, "tool_calls").([]any)) != 3 {
			t.Fatalf("assistant turn %v", msgs[2])
		}
		for i, c := range calls {
			if got := at(t, msgs, 3+i, "tool_call_id"); got != c.ID {
				t.Fatalf("result %d answers %v, want %s", i, got, c.ID)
			}
			if got := at(t, msgs, 2, "tool_calls", i, "function", "arguments"); got != c.Args {
				t.Fatalf("call %d arguments %v", i, got)
			}
		}
		if got := fmt.Sprint(at(t, msgs, 5, "content")); !strings.Contains(got, badArgs) {
			t.Fatalf("the failed call's result %q", got)
		}
	case "anthropic":
		msgs := second["messages"].([]any)
		if len(msgs) != 3 || at(t, msgs, 0, "role") != "user" || at(t, msgs, 1, "role") != "assistant" || at(t, msgs, 2, "role") != "user" {
			t.Fatalf("messages %v", msgs)
		}
		if at(t, second, "system", 0, "text") != "You help." {
			t.Fatalf("system %v", second["system"])
		}
		blocks := at(t, msgs, 1, "content").([]any)
		if len(blocks) != 4 || at(t, blocks, 0, "type") != "text" || at(t, blocks, 0, "text") != said {
			t.Fatalf("assistant blocks %v", blocks)
		}
		results := at(t, msgs, 2, "content").([]any)
		if len(results) != 3 {
			t.Fatalf("tool results %v", results)
		}
		for i, c := range calls {
			use := blocks[1+i]
			if at(t, use, "type") != "tool_use" || at(t, use, "id") != c.ID || at(t, use, "name") != c.Name {
				t.Fatalf("tool_use %d: %v", i, use)
			}
			if got := fmt.Sprint(at(t, use, "input")); got != fmt.Sprint(jsonOf(t, c.Args)) {
				t.Fatalf("tool_use %d input %v, want %s", i, got, c.Args)
			}
			res := results[i].(map[string]any)
			if res["type"] != "tool_result" || res["tool_use_id"] != c.ID {
				t.Fatalf("tool_result %d: %v", i, res)
			}
			if failed := res["is_error"] == true; failed != (i == 2) {
				t.Fatalf("tool_result %d is_error %v", i, res["is_error"])
			}
		}
		if got := fmt.Sprint(results[2].(map[string]any)["content"]); !strings.Contains(got, badArgs) {
			t.Fatalf("the failed call's result %q", got)
		}
	case "gemini":
		want := "/v1beta/models/m:generateContent"
		if streamed {
			want = "/v1beta/models/m:streamGenerateContent?alt=sse"
		}
		if paths := f.paths(); paths[0] != want || paths[1] != want {
			t.Fatalf("paths %v, want %s", paths, want)
		}
		contents := second["contents"].([]any)
		if len(contents) != 3 || at(t, contents, 1, "role") != "model" || at(t, contents, 2, "role") != "user" {
			t.Fatalf("contents %v", contents)
		}
		parts := at(t, contents, 1, "parts").([]any)
		if len(parts) != 4 || at(t, parts, 0, "text") != said {
			t.Fatalf("model parts %v", parts)
		}
		responses := at(t, contents, 2, "parts").([]any)
		if len(responses) != 3 {
			t.Fatalf("function responses %v", responses)
		}
		for i, c := range calls {
			fc := parts[1+i].(map[string]any)
			if at(t, fc, "functionCall", "name") != c.Name || fmt.Sprint(at(t, fc, "functionCall", "args")) != fmt.Sprint(jsonOf(t, c.Args)) {
				t.Fatalf("functionCall %d: %v", i, fc)
			}
			// A thinking model's signature goes back with its call.
			if fc["thoughtSignature"] != llmtest.Signature(c) {
				t.Fatalf("functionCall %d thoughtSignature %v, want %s", i, fc["thoughtSignature"], llmtest.Signature(c))
			}
			fr := at(t, responses[i], "functionResponse").(map[string]any)
			if fr["name"] != c.Name || fr["id"] != at(t, fc, "functionCall", "id") {
				t.Fatalf("functionResponse %d %v answers %v", i, fr, fc)
			}
			key := "output"
			if i == 2 {
				key = "error"
			}
			if _, ok := at(t, fr, "response").(map[string]any)[key]; !ok {
				t.Fatalf("functionResponse %d has no %s: %v", i, key, fr)
			}
		}
		if got := fmt.Sprint(at(t, responses[2], "functionResponse", "response", "error")); !strings.HasPrefix(got, badArgs) {
			t.Fatalf("the failed call's result %q", got)
		}
	}
}

// A gated call pauses the loop with its conversation as JSON state; resumed,
// the next request carries the first turn's calls as the provider sent
// them (Gemini's thought signatures included) with all three results.
func TestGatedCallThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f := p.start(t, llmtest.Turn{Text: loopSaid, Calls: loopCalls}, llmtest.Turn{Text: loopAnswer})
			doc := strings.Replace(providerAgent(p.name), "  - tool: echo\n", "  - tool: echo\n    approval: required\n", 1)
			rt, def, chainCalls := loopRuntimeAt(t, f.url, doc)
			_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "Who is ACME?"}, nil)
			ie, ok := tool.IsInterrupt(err)
			if !ok || !ie.Approve {
				t.Fatalf("want an approval pause, got %v", err)
			}
			// The engine keeps the state as JSON.
			b, err := json.Marshal(ie.State)
			if err != nil {
				t.Fatal(err)
			}
			var state any
			if err := json.Unmarshal(b, &state); err != nil {
				t.Fatal(err)
			}
			ctx := tool.WithAnswer(context.Background(), tool.Answer{Action: engine.ActionApprove, Value: ie.Proposed, By: "ana", State: state})
			out, err := rt.Invoke(ctx, def, map[string]any{"query": "Who is ACME?"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out["answer"] != loopAnswer || len(*chainCalls) != 1 {
				t.Fatalf("out %v, chain calls %v", out, *chainCalls)
			}
			checkSecondRequest(t, p.name, true, f)
		})
	}
}

// The fake holds the turn open after its text: the text reaches the run
// before the turn's calls do.
func TestTextStreamsWhileTheTurnIsOpenThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			open := make(chan struct{})
			f := p.start(t, llmtest.Turn{Text: loopSaid, Calls: loopCalls[:1], Hold: open}, llmtest.Turn{Text: loopAnswer})
			rt, def, _ := loopRuntimeAt(t, f.url, providerAgent(p.name))
			var once sync.Once
			var ev events
			emit := func(e any) {
				ev.emit(e)
				if m, _ := e.(map[string]any); m["step"] == StepText && m["turn"] == 1 {
					once.Do(func() { close(open) })
				}
				if m, _ := e.(map[string]any); m["step"] == StepToolCall && len(ev.steps(StepText)) == 0 {
					t.Error("a call came before the turn's text")
				}
			}
			// Were the text held back until the turn ends, the fake would
			// wait for ever: the deadline turns that into a failure.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out, err := rt.Invoke(ctx, def, map[string]any{"query": "Who is ACME?"}, emit)
			if err != nil {
				t.Fatal(err)
			}
			if out["answer"] != loopAnswer {
				t.Fatalf("answer %v", out["answer"])
			}
		})
	}
}

func TestModelFailuresThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		for name, ts := range map[string]llmtest.Turn{
			"429": {Status: 429, Body: "slow down", Header: map[string]string{"Retry-After": "7"}},
			"cut": {Text: "half an answ", Cut: true},
		} {
			t.Run(p.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				f := p.start(t, ts, llmtest.Turn{Text: "never asked"})
				rt, def, _ := loopRuntimeAt(t, f.url, providerAgent(p.name))
				// The node's timeout (3 s) leaves no room for the 7 s the
				// server asks to wait: one request, and the error says why.
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				_, err := rt.Invoke(ctx, def, map[string]any{"query": "x"}, nil)
				if err == nil || !strings.Contains(err.Error(), "model m at http://127.0.0.1:") {
					t.Fatalf("err %v, want one naming the model", err)
				}
				if name == "429" && (!strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "slow down")) {
					t.Fatalf("err %v, want the status and the server's message", err)
				}
				t.Log(err)
				if n := len(f.requests()); n != 1 {
					t.Fatalf("%d requests: the SDK retried (the engine retries nodes)", n)
				}
			})
		}
	}
}

func TestRepairThroughEachProvider(t *testing.T) {
	t.Parallel()
	for _, p := range loopProviders {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			bad, good := llmtest.Turn{Text: `{"score": "high"}`}, llmtest.Turn{Text: `{"score": 9}`}
			if p.name == "anthropic" {
				// The schema is a forced tool: its call's input is the reply.
				bad = llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "output", Args: `{"score": "high"}`}}}
				good = llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "output", Args: `{"score": 9}`}}}
			}
			f := p.start(t, bad, good)
			doc := `name: scorer
model: {provider: ` + p.name + `, url: "%URL%", name: m, structured_output: native}
prompt: "{{ query }}"
repair: 1
spec:
  output_schema:
    score: {type: integer}
`
			rt, def, _ := loopRuntimeAt(t, f.url, doc)
			var ev events
			out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "score ACME"}, ev.emit)
			if err != nil {
				t.Fatal(err)
			}
			if out["data_error"] != nil || fmt.Sprint(out["data"]) != "map[score:9]" {
				t.Fatalf("out %v", out)
			}
			rep := ev.steps(StepRepair)
			if len(rep) != 1 {
				t.Fatalf("repair events %v", rep)
			}
			problem := rep[0]["error"].(string)
			if !strings.Contains(problem, "integer") {
				t.Fatalf("the validator's error %q", problem)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			var ask string
			for i, req := range reqs {
				switch p.name {
				case "openai":
					if at(t, req, "response_format", "type") != "json_schema" {
						t.Fatalf("request %d response_format %v", i, req["response_format"])
					}
					msgs := req["messages"].([]any)
					ask = fmt.Sprint(at(t, msgs, len(msgs)-1, "content"))
				case "anthropic":
					if at(t, req, "tool_choice", "type") != "tool" || at(t, req, "tool_choice", "name") != "output" ||
						at(t, req, "tools", 0, "name") != "output" || at(t, req, "tools", 0, "input_schema", "properties", "score", "type") != "integer" {
						t.Fatalf("request %d: the schema is not the forced tool: %v %v", i, req["tools"], req["tool_choice"])
					}
					msgs := req["messages"].([]any)
					ask = fmt.Sprint(at(t, msgs, len(msgs)-1, "content", 0, "text"))
				case "gemini":
					if at(t, req, "generationConfig", "responseMimeType") != "application/json" ||
						at(t, req, "generationConfig", "responseJsonSchema", "properties", "score", "type") != "integer" {
						t.Fatalf("request %d generationConfig %v", i, req["generationConfig"])
					}
					contents := req["contents"].([]any)
					ask = fmt.Sprint(at(t, contents, len(contents)-1, "parts", 0, "text"))
				}
				if i == 0 && strings.Contains(ask, "JSON Schema") {
					t.Fatalf("a native schema is also in the prompt: %q", ask)
				}
			}
			if !strings.Contains(ask, problem) {
				t.Fatalf("the repair request %q does not carry the validator's error %q", ask, problem)
			}
		})
	}
}
