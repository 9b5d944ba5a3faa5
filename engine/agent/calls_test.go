package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/llm/llmtest"
)

// The pattern of docs/agents.md: a tool whose required field is static
// input. The model is not offered the field, so its arguments lack it; the
// call is checked with the static input merged in, and runs.
func TestStaticInputIsMergedBeforeTheArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "pick", Args: `{"data":{"name":"Ada"}}`}}},
		llmtest.Turn{Text: "Ada"})
	doc := `name: helper
model: {url: "%URL%", name: fake}
prompt: "{{ query }}"
tools:
  - tool: transform
    name: pick
    input: {expression: name}
`
	rt, def, _ := loopRuntime(t, f, doc)
	// The schemas the studio declares (transform requires expression).
	for name, schema := range builtin.InputSchemas() {
		rt.Registry.SetInputSchema(name, schema)
	}
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "who?"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	call := out["tool_calls"].([]any)[0].(map[string]any)
	if call["status"] != CallOK || call["output"] != "Ada" {
		t.Fatalf("the call %v, want ok with output Ada", call)
	}
	if _, failed := out["tool_calls_failed"]; failed {
		t.Fatalf("out %v says calls failed", out)
	}
	if w := ev.steps(StepWarning); len(w) != 0 {
		t.Fatalf("warnings %v", w)
	}
	// The field is still not offered to the model.
	params := f.Requests()[0]["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)["parameters"].(map[string]any)
	if _, offered := params["properties"].(map[string]any)["expression"]; offered {
		t.Fatalf("the static field is offered: %v", params)
	}
	if req, _ := params["required"].([]any); len(req) != 0 {
		t.Fatalf("the offered schema requires %v", req)
	}
}

// A run whose agent's tool calls failed still completes (the model read
// the errors and answered), but the node says how many failed: in its
// output and in a warning, its last progress event.
func TestFailedToolCallsShowOnTheNode(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{
			{ID: "c1", Name: "echo", Args: `{"message":"hi"}`},
			{ID: "c2", Name: "fail", Args: `{"message":"the disk is full"}`},
			{ID: "c3", Name: "nonesuch", Args: `{}`},
		}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c4", Name: "echo", Args: `{"message":"again"}`}}},
		llmtest.Turn{Text: "I did what I could."})
	doc := `name: helper
model: {url: "%URL%", name: fake}
prompt: "{{ query }}"
tools:
  - tool: echo
  - tool: fail
`
	rt, def, _ := loopRuntime(t, f, doc)
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "go"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	if out["answer"] != "I did what I could." || out["tool_calls_failed"] != 2 {
		t.Fatalf("out %v, want the answer and tool_calls_failed 2", out)
	}
	w := ev.steps(StepWarning)
	if len(w) != 1 || w[0]["text"] != "2 of 4 tool calls failed" || w[0]["failed"] != 2 || w[0]["calls"] != 4 {
		t.Fatalf("warnings %v", w)
	}
	ev.mu.Lock()
	last := ev.list[len(ev.list)-1]
	ev.mu.Unlock()
	if last["step"] != StepWarning {
		t.Fatalf("the last event %v is not the warning: the node's note would not say it", last)
	}
}

// Through the engine: the run completes, the agent node is done, and its
// events end with the warning the run page shows on the node.
func TestFailedToolCallsWarnThroughTheEngine(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "c1", Name: "fail", Args: `{}`}}},
		llmtest.Turn{Text: "It failed."})
	s := mustSet(t, f.URL+"/v1", "name: helper\nmodel: {url: \"%URL%\", name: fake}\ntools:\n  - tool: fail\n")
	reg := testRegistry()
	rt := &Runtime{Set: s, Registry: reg}
	var mu sync.Mutex
	var progress []string
	sink := engine.SinkFunc(func(e engine.Event) {
		if m, ok := e.Progress.(map[string]any); ok && e.Phase == engine.PhaseProgress {
			mu.Lock()
			progress = append(progress, fmt.Sprint(m["step"]))
			mu.Unlock()
		}
	})
	eng := engine.New(engine.Options{Registry: reg, Agent: rt.RunNode, Sink: sink})
	c, _ := s.RunChain("helper")
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), RunInput("go", "sess-1", nil), engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Report("helper", res)
	if res.Status != chain.StatusCompleted || fmt.Sprint(r.Result["tool_calls_failed"]) != "1" {
		t.Fatalf("status %s, result %v", res.Status, r.Result)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) == 0 || progress[len(progress)-1] != StepWarning {
		t.Fatalf("progress steps %s, want the warning last", strings.Join(progress, ","))
	}
}

// manyCalls is a turn asking for n echo calls at once.
func manyCalls(text string, n int) llmtest.Turn {
	ts := llmtest.Turn{Text: text}
	for i := range n {
		ts.Calls = append(ts.Calls, llmtest.Call{ID: fmt.Sprintf("call_%d", i), Name: "echo", Args: `{"message":"x"}`})
	}
	return ts
}

// A turn asking for more calls than max_tool_calls leaves is refused whole:
// one event, one message to the model (its calls are dropped from the
// conversation), none runs; a later turn within the limit runs.
func TestTurnOverMaxToolCallsIsRefusedOnce(t *testing.T) {
	t.Parallel()
	const asked = 1000
	f := llmtest.NewOpenAI(t,
		manyCalls("Let me check everything. ", asked),
		manyCalls("", 2),
		llmtest.Turn{Text: "Checked two."})
	rt, def, _ := loopRuntime(t, f, helperAgent+"max_tool_calls: 3\n")
	var ev events
	out, err := rt.Invoke(context.Background(), def, map[string]any{"query": "check"}, ev.emit)
	if err != nil {
		t.Fatal(err)
	}
	refused := ev.steps(StepCallsRefused)
	if len(refused) != 1 || refused[0]["calls"] != asked || refused[0]["left"] != 3 || refused[0]["turn"] != 1 {
		t.Fatalf("refusal events %v, want one for the %d calls of turn 1", refused, asked)
	}
	if n := len(ev.steps(StepToolResult)); n != 2 {
		t.Fatalf("%d tool results, want the 2 calls of turn 2", n)
	}
	if calls := out["tool_calls"].([]any); len(calls) != 2 || out["tool_calls_refused"] != asked {
		t.Fatalf("out %v", out)
	}
	if w := ev.steps(StepWarning); len(w) != 1 || w[0]["text"] != "1000 tool calls refused over max_tool_calls" {
		t.Fatalf("warnings %v", w)
	}
	msgs := f.Requests()[1]["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if strings.Join(roles, ",") != "system,user,assistant,user" {
		t.Fatalf("the second request's roles %v, want the refusal as one message", roles)
	}
	said := at(t, msgs, 2).(map[string]any)
	if said["content"] != "Let me check everything. " || said["tool_calls"] != nil {
		t.Fatalf("the model's turn %v, want its text without the refused calls", said)
	}
	if got := fmt.Sprint(at(t, msgs, 3, "content")); !strings.Contains(got, "You asked for 1000 tool calls in one turn, but the agent's max_tool_calls (3) leaves 3, so none of them ran") {
		t.Fatalf("the refusal %q", got)
	}
}

// A model that asks for too many calls again after being told stops the
// loop: two turns, one refusal event, an error naming max_tool_calls.
func TestModelThatKeepsAskingTooManyCallsStops(t *testing.T) {
	t.Parallel()
	f := llmtest.NewOpenAI(t, manyCalls("", 50), manyCalls("", 50), llmtest.Turn{Text: "never asked"})
	rt, def, _ := loopRuntime(t, f, helperAgent+"max_tool_calls: 4\n")
	var ev events
	_, err := rt.Invoke(context.Background(), def, map[string]any{"query": "check"}, ev.emit)
	if err == nil || !strings.Contains(err.Error(), `agent "helper": turn 2 asks for 50 tool calls with 4 of max_tool_calls (4) left, after an earlier turn over the limit was refused`) {
		t.Fatalf("err %v", err)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if n, r := len(ev.steps(StepCallsRefused)), len(ev.steps(StepToolResult)); n != 1 || r != 0 {
		t.Fatalf("%d refusal events and %d tool results, want 1 and 0", n, r)
	}
	// The refused turn left no assistant message: the second request is
	// the prompt and the refusal.
	msgs := f.Requests()[1]["messages"].([]any)
	if len(msgs) != 3 || at(t, msgs, 2, "role") != "user" {
		t.Fatalf("second request %v", msgs)
	}
}
