package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/tool"
)

// events collects what an agent reports, in order.
type events struct {
	mu   sync.Mutex
	list []map[string]any
}

func (e *events) emit(p any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m, ok := p.(map[string]any); ok {
		e.list = append(e.list, m)
	}
}

func (e *events) steps(step string) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []map[string]any
	for _, m := range e.list {
		if m["step"] == step {
			out = append(out, m)
		}
	}
	return out
}

// loopRuntime is a runtime over one agent document (with %URL% the fake's
// base), the built-in tools and a chain "lookup" that answers its input.
func loopRuntime(t *testing.T, f *llmtest.OpenAI, doc string) (*Runtime, *Definition, *[]map[string]any) {
	t.Helper()
	return loopRuntimeAt(t, f.URL+"/v1", doc)
}

// loopRuntimeAt is loopRuntime with %URL% given: any provider's fake.
func loopRuntimeAt(t *testing.T, url, doc string) (*Runtime, *Definition, *[]map[string]any) {
	t.Helper()
	s := mustSet(t, url, doc)
	var chainCalls []map[string]any
	var mu sync.Mutex
	rt := &Runtime{Set: s, Registry: testRegistry(),
		RunChain: func(_ context.Context, name string, in map[string]any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			chainCalls = append(chainCalls, in)
			return map[string]any{"chain": name, "found": in["customer"]}, nil
		},
		ChainTool: func(_ context.Context, name string) (*chain.Chain, error) {
			if name != "lookup" {
				return nil, fmt.Errorf("no chain %q", name)
			}
			return &chain.Chain{Name: name, Description: "Looks a customer up.", SampleInput: map[string]any{"customer": "ACME", "limit": 3.0}}, nil
		}}
	def, _ := s.Get(strings.Fields(doc)[1])
	return rt, def, &chainCalls
}

const helperAgent = `name: helper
model: {url: "%URL%", name: fake}
system_prompt: You help.
prompt: "{{ query }}"
tools:
  - tool: echo
    description: Say it back.
  - chain: lookup
    name: find_customer
`

func TestToolLoopCallsAToolAndAChainInOneTurn(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Text: "Let me look that up. ", Calls: []llmtest.Call{
			{ID: "call_1", Name: "echo", Args: `{"message":"hi"}`},
			{ID: "call_2", Name: "find_customer", Args: `{"customer":"ACME"}`}}},
		llmtest.Turn{Text: "ACME is a customer and echo said hi."})
	rt, def, chainCalls := loopRuntime(t, f, helperAgent)
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "Who is ACME?"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out["answer"] != "ACME is a customer and echo said hi." {
		t.Fatalf("answer %q", out["answer"])
	}
	calls, _ := out["tool_calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("tool_calls %v", out["tool_calls"])
	}
	for i, c := range calls {
		m := c.(map[string]any)
		if m["status"] != CallOK || m["turn"] != 1 {
			t.Fatalf("call %d: %v", i, m)
		}
	}
	if got := calls[1].(map[string]any)["output"].(map[string]any)["found"]; got != "ACME" {
		t.Fatalf("the chain's output %v", calls[1])
	}
	if len(*chainCalls) != 1 || (*chainCalls)[0]["customer"] != "ACME" {
		t.Fatalf("the chain ran with %v", *chainCalls)
	}

	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	// The first request offers both tools with their schemas.
	tools := reqs[0]["tools"].([]any)
	if len(tools) != 2 {
		t.Fatalf("tools %v", tools)
	}
	fn := tools[1].(map[string]any)["function"].(map[string]any)
	if fn["name"] != "find_customer" || fn["description"] != "Looks a customer up." {
		t.Fatalf("chain tool %v", fn)
	}
	props := fn["parameters"].(map[string]any)["properties"].(map[string]any)
	if props["customer"].(map[string]any)["type"] != "string" || props["limit"].(map[string]any)["type"] != "number" {
		t.Fatalf("chain tool schema %v", fn["parameters"])
	}
	if reqs[0]["stream"] != true {
		t.Fatalf("the turn is not streamed: %v", reqs[0])
	}
	// The second carries the assistant's calls and both results, in order.
	msgs := reqs[1]["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool" {
		t.Fatalf("roles %v", roles)
	}
	asst := msgs[2].(map[string]any)
	if tc := asst["tool_calls"].([]any); len(tc) != 2 || tc[0].(map[string]any)["function"].(map[string]any)["arguments"] != `{"message":"hi"}` {
		t.Fatalf("assistant turn %v", asst)
	}
	r1, r2 := msgs[3].(map[string]any), msgs[4].(map[string]any)
	if r1["tool_call_id"] != "call_1" || r2["tool_call_id"] != "call_2" || !strings.Contains(fmt.Sprint(r2["content"]), `"found":"ACME"`) {
		t.Fatalf("results %v %v", r1, r2)
	}

	// What the run shows: each turn, its text, each call and its result.
	if n := len(ev.steps(StepModelCall)); n != 2 {
		t.Fatalf("%d model calls", n)
	}
	var text strings.Builder
	for _, m := range ev.steps(StepText) {
		if m["turn"] == 1 {
			text.WriteString(m["text"].(string))
		}
	}
	if text.String() != "Let me look that up. " {
		t.Fatalf("turn 1 streamed %q", text.String())
	}
	if n := len(ev.steps(StepText)); n > 4 {
		t.Fatalf("%d text events for two short turns: the stream is not coalesced", n)
	}
	if n := len(ev.steps(StepToolCall)); n != 2 {
		t.Fatalf("%d tool_call events", n)
	}
	res := ev.steps(StepToolResult)
	if len(res) != 2 || res[0]["status"] != CallOK {
		t.Fatalf("tool results %v", res)
	}
	usage := ev.steps(engine.StepModelUsage)
	if len(usage) != 2 || usage[1]["turn"] != 2 || usage[1]["input_tokens"] != int64(20) {
		t.Fatalf("usage %v", usage)
	}
}

func TestToolLoopSendsBadCallsBackToTheModel(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{
			{ID: "c1", Name: "echo", Args: `{"message": "unclosed`},
			{ID: "c2", Name: "nonesuch", Args: `{}`},
			{ID: "c3", Name: "find_customer", Args: `{"customer": 5}`},
			{ID: "c4", Name: "echo", Args: `{"message":"ok"}`},
			{ID: "c5", Name: "echo", Args: `{"message":"also ok"}`},
		}},
		llmtest.Turn{Text: "done"})
	doc := helperAgent + "max_tool_calls: 5\n"
	doc = strings.Replace(doc, "  - chain: lookup\n    name: find_customer\n", "  - chain: lookup\n    name: find_customer\n    input_schema: {type: object, properties: {customer: {type: string}}}\n", 1)
	rt, def, _ := loopRuntime(t, f, doc)
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.Requests()[1]["messages"].([]any)
	content := func(i int) string { return fmt.Sprint(msgs[i].(map[string]any)["content"]) }
	for i, want := range []string{
		"error: the arguments are not a JSON object",
		`error: there is no tool "nonesuch"; the tools are echo, find_customer`,
		"error: the arguments do not fit the tool's input schema: customer: want a string, got 5",
		`{"message":"ok"}`,
		`{"message":"also ok"}`,
	} {
		if !strings.HasPrefix(content(3+i), want) && !strings.Contains(content(3+i), want) {
			t.Fatalf("result %d: %q, want %q", i, content(3+i), want)
		}
	}
	calls := out["tool_calls"].([]any)
	statuses := []string{}
	for _, c := range calls {
		statuses = append(statuses, c.(map[string]any)["status"].(string))
	}
	if strings.Join(statuses, ",") != "error,refused,error,ok,ok" {
		t.Fatalf("statuses %v", statuses)
	}
}

func TestToolLoopStopsAtMaxSteps(t *testing.T) {
	t.Parallel()
	again := llmtest.Turn{Calls: []llmtest.Call{{ID: "c", Name: "echo", Args: `{"message":"again"}`}}}
	f := llmtest.NewOpenAI(t, again, again, again)
	rt, def, _ := loopRuntime(t, f, helperAgent+"max_steps: 2\n")
	_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "go"}, nil)
	if err == nil || !strings.Contains(err.Error(), "the model still calls tools after max_steps (2) turns") {
		t.Fatalf("err %v", err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

// A gated call pauses the agent with its conversation; answered, the agent
// carries on from there without asking the model again.
func TestGatedToolPausesAndCarriesOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action, comment string
		value           any
		wantStatus      string
		wantContent     string
	}{
		{action: engine.ActionApprove, wantStatus: CallOK, wantContent: `"message":"hi"`},
		{action: engine.ActionApprove, value: map[string]any{"message": "edited"}, wantStatus: CallOK, wantContent: `"message":"edited"`},
		{action: engine.ActionReject, comment: "not today", wantStatus: CallRejected, wantContent: "ana rejected this call: not today"},
	} {
		t.Run(tc.action+fmt.Sprint(tc.value != nil), func(t *testing.T) {
			t.Parallel()
			f := llmtest.NewOpenAI(t,
				llmtest.Turn{Text: "I will echo. ", Calls: []llmtest.Call{{ID: "c1", Name: "echo", Args: `{"message":"hi"}`}, {ID: "c2", Name: "find_customer", Args: `{"customer":"ACME"}`}}},
				llmtest.Turn{Text: "finished"})
			doc := strings.Replace(helperAgent, "    description: Say it back.\n", "    description: Say it back.\n    approval: required\n", 1)
			rt, def, chainCalls := loopRuntime(t, f, doc)
			_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "go"}, nil)
			ie, ok := tool.IsInterrupt(err)
			if !ok || !ie.Approve {
				t.Fatalf("want an approval pause, got %v", err)
			}
			prompt := ie.Prompt.(map[string]any)
			if prompt["tool"] != "echo" || prompt["arguments"].(map[string]any)["message"] != "hi" {
				t.Fatalf("prompt %v", prompt)
			}
			if len(*chainCalls) != 1 {
				t.Fatalf("the ungated call did not run before the pause: %v", *chainCalls)
			}
			// What the engine stores and hands back is JSON.
			b, _ := json.Marshal(ie.State)
			var state any
			_ = json.Unmarshal(b, &state)
			value := tc.value
			if value == nil && tc.action == engine.ActionApprove {
				value = ie.Proposed
			}
			ctx := tool.WithAnswer(context.Background(), tool.Answer{Action: tc.action, Value: value, Comment: tc.comment, By: "ana", State: state})
			out, err := rt.Invoke(ctx, def, map[string]any{"query": "go"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out["answer"] != "finished" {
				t.Fatalf("answer %v", out)
			}
			reqs := f.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2 (the first turn is not asked again)", len(reqs))
			}
			if len(*chainCalls) != 1 {
				t.Fatalf("the ungated call ran again: %v", *chainCalls)
			}
			msgs := reqs[1]["messages"].([]any)
			if got := fmt.Sprint(msgs[3].(map[string]any)["content"]); !strings.Contains(got, tc.wantContent) {
				t.Fatalf("the gated call's result %q, want %q", got, tc.wantContent)
			}
			if st := out["tool_calls"].([]any)[0].(map[string]any)["status"]; st != tc.wantStatus {
				t.Fatalf("status %v", st)
			}
		})
	}
}

// Through the engine: the pause is an approval in the run's pending list,
// and answering it finishes the run.
func TestGatedToolThroughTheEngine(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "echo", Args: `{"message":"hi"}`}}},
		llmtest.Turn{Text: "echoed"})
	doc := strings.Replace(helperAgent, "    description: Say it back.\n", "    description: Say it back.\n    approval: required\n", 1)
	rt, _, _ := loopRuntime(t, f, doc)
	eng := engine.New(engine.Options{Registry: rt.Registry, Agent: rt.RunNode})
	c := &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "a", Kind: chain.KindAgent, Name: "helper"}}}
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), map[string]any{"query": "go"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusPaused || len(res.Pending) != 1 {
		t.Fatalf("status %s pending %v", res.Status, res.Pending)
	}
	if a := res.Pending[0].Approval(); a == nil || a.Kind != engine.ApprovalToolCall {
		t.Fatalf("approval %+v", a)
	}
	res, err = eng.Resume(context.Background(), res.RunID, &engine.ResumeValue{Action: engine.ActionApprove, By: "ana"}, nil, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	if out := res.FinalOutput.(map[string]any); out["answer"] != "echoed" {
		t.Fatalf("output %v", out)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d model requests", n)
	}
	// A timeout is not an answer an agent's gate takes.
	_, err = eng.Resume(context.Background(), res.RunID, &engine.ResumeValue{Action: engine.ActionTimeout}, nil, engine.ResumeOptions{})
	if err == nil {
		t.Fatal("a finished run took another answer")
	}
}

func TestRepairAsksAgainWithTheValidatorsError(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Text: `{"score": "high"}`},
		llmtest.Turn{Text: `{"score": 9}`})
	doc := `name: scorer
model: {url: "%URL%", name: fake, structured_output: native}
prompt: "{{ query }}"
repair: 2
spec:
  output_schema:
    score: {type: integer}
`
	rt, def, _ := loopRuntime(t, f, doc)
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "score ACME"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out["data_error"] != nil || out["data"].(map[string]any)["score"] != 9.0 {
		t.Fatalf("out %v", out)
	}
	reqs := f.Requests()
	rf := reqs[0]["response_format"].(map[string]any)
	if rf["type"] != "json_schema" {
		t.Fatalf("response_format %v", rf)
	}
	if strings.Contains(fmt.Sprint(reqs[0]["messages"]), "JSON Schema") {
		t.Fatalf("a native schema is also in the prompt: %v", reqs[0]["messages"])
	}
	last := reqs[1]["messages"].([]any)
	ask := fmt.Sprint(last[len(last)-1].(map[string]any)["content"])
	if !strings.Contains(ask, "score") || !strings.Contains(ask, "integer") {
		t.Fatalf("the repair request does not say what failed: %q", ask)
	}
	rep := ev.steps(StepRepair)
	if len(rep) != 1 || rep[0]["attempt"] != 1 || rep[0]["of"] != 2 {
		t.Fatalf("repair events %v", rep)
	}
}

func TestRepairGivesUpWithDataError(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Text: "no json"}, llmtest.Turn{Text: "still none"})
	doc := "name: scorer\nmodel: {url: \"%URL%\", name: fake}\nrepair: 1\nspec:\n  output_schema:\n    score: {type: integer}\n"
	rt, def, _ := loopRuntime(t, f, doc)
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out["data"] != nil || out["data_error"] == nil || out["answer"] != "still none" {
		t.Fatalf("out %v", out)
	}
	// Prompt mode: the schema is in the first prompt and in the repair.
	reqs := f.Requests()
	if _, native := reqs[0]["response_format"]; native {
		t.Fatal("a local server was asked for a native schema")
	}
	if !strings.Contains(fmt.Sprint(reqs[1]["messages"]), SchemaInstruction[:20]) {
		t.Fatal("the repair request lacks the schema")
	}
}

func TestModelFailuresNameTheModel(t *testing.T) {
	t.Parallel()
	for name, ts := range map[string]llmtest.Turn{
		"429": {Status: 429, Body: `{"error":{"message":"slow down","type":"rate_limit"}}`, Header: map[string]string{"Retry-After": "7"}},
		"cut": {Text: "half an answ", Cut: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := llmtest.NewOpenAI(t, ts, llmtest.Turn{Text: "never asked"})
			rt, def, _ := loopRuntime(t, f, helperAgent)
			// The node's timeout (3 s) leaves no room for the 7 s the
			// server asks to wait: one request, and the error says why.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := rt.Invoke(ctx, def, map[string]any{"query": "x"}, nil)
			if err == nil || !strings.Contains(err.Error(), "model fake at ") {
				t.Fatalf("err %v", err)
			}
			if name == "429" && !strings.Contains(err.Error(), "429") {
				t.Fatalf("err %v", err)
			}
			if n := len(f.Requests()); n != 1 {
				t.Fatalf("%d requests: the SDK retried (the engine retries nodes)", n)
			}
		})
	}
}

// Cancelling the node while a tool runs stops the loop with the cause.
func TestToolLoopStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "delay", Args: `{"seconds": 30}`}}}, llmtest.Turn{Text: "never"})
	doc := "name: waiter\nmodel: {url: \"%URL%\", name: fake}\ntools:\n  - tool: delay\n"
	rt, def, _ := loopRuntime(t, f, doc)
	ctx, cancel := context.WithCancelCause(context.Background())
	var ev events
	emit := func(p any) {
		ev.emit(p)
		if m, _ := p.(map[string]any); m["step"] == StepToolCall {
			cancel(errors.New("the run was cancelled"))
		}
	}
	_, err := rt.Invoke(ctx, def, map[string]any{"query": "x"}, emit)
	if err == nil || err.Error() != "the run was cancelled" {
		t.Fatalf("err %v", err)
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestToolDeclarationRules(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"tools:\n  - {}\n":                                         "tools[0]: name a studio tool (tool:) or a saved chain (chain:)",
		"tools:\n  - {tool: echo, chain: c}\n":                     "tools[0]: tool and chain are both set",
		"tools:\n  - {tool: echo}\n  - {tool: echo}\n":             `tools[1]: the name "echo" is already used by tools[0]`,
		"tools:\n  - {chain: 'my chain'}\n":                        `tools[0]: "my chain" is not a name a model can call`,
		"tools:\n  - {tool: echo, approval: maybe}\n":              `tools[0] (echo).approval "maybe" is not valid`,
		"tools:\n  - {tool: nope}\n":                               `tools[0]: tool "nope" does not exist on this host`,
		"tools:\n  - {tool: echo, input_schema: {type: string}}\n": "must be an object schema",
		"max_steps: 0\n":                                           "max_steps is 0; it must be between 1 and 100",
		"max_tool_calls: -1\n":                                     "max_tool_calls is -1",
		"repair: 2\n":                                              "repair asks again for a reply that fails spec.output_schema, but the agent declares none",
		"tools:\n  - {tool: echo, retry: {max_attempts: 11}}\n":    "retry.max_attempts is 11",
		"tools:\n  - {tool: echo, timeout_seconds: 1m}\n":          "timeout_seconds: want a number",
	}
	for extra, want := range cases {
		_, err := parseSet(t, "http://127.0.0.1:1/v1", "name: a\nmodel: {url: '%URL%', name: m}\n"+extra)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", extra, err, want)
		}
	}
	_, err := parseSet(t, "", "name: a\ntool: echo\ntools:\n  - {tool: echo}\n")
	if err == nil || !strings.Contains(err.Error(), "tools is used only by model agents") {
		t.Errorf("err %v", err)
	}
}

// A refusal is the answer, marked refused, with data_error saying so; it
// is not repaired.
func TestRefusalIsTheAnswerAndNotRepaired(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{true, false} {
		f := llmtest.NewOpenAI(t, llmtest.Turn{Refusal: "I can't help with that."}, llmtest.Turn{Text: `{"score": 1}`})
		doc := fmt.Sprintf("name: scorer\nmodel: {url: \"%%URL%%\", name: fake, stream: %v}\nrepair: 2\nspec:\n  output_schema:\n    score: {type: integer}\n", stream)
		rt, def, _ := loopRuntime(t, f, doc)
		out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out["refused"] != true || out["answer"] != "I can't help with that." || out["data"] != nil ||
			out["data_error"] != "the model refused to answer: I can't help with that." {
			t.Fatalf("stream %v: %v", stream, out)
		}
		if n := len(f.Requests()); n != 1 {
			t.Fatalf("stream %v: %d requests: a refusal was repaired", stream, n)
		}
	}
}
