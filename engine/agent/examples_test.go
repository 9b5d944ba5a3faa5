package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm/llmtest"
	"github.com/chainstudio/studio/engine/tool"
)

// The example set in examples/agents loads and runs offline.
func TestExampleAgents(t *testing.T) {
	t.Parallel()
	s, err := LoadDir("../../examples/agents", LoadOptions{Tools: func(n string) bool { _, ok := testRegistry().Get(n); return ok }, Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), " "); got != "crm-logger email-composer greeting-assistant human-triage sales-qualifier" {
		t.Fatalf("agents: %s", got)
	}
	_, r := runAgent(t, s, "sales-qualifier", "Ana at ACME", map[string]any{"budget": 60000, "timeline_days": 14})
	if d := r.Result["data"].(map[string]any); d["score"] != float64(9) || d["urgent"] != true {
		t.Fatalf("qualifier: %+v", r.Result)
	}
	e := wantLink(t, r, "email-composer", "success", "")
	if !strings.HasPrefix(*e.Answer, "Hi Ana at ACME -- thanks") {
		t.Fatalf("email: %q", *e.Answer)
	}
	c := wantLink(t, r, "crm-logger", "success", "")
	if !strings.Contains(string(c.Data), `"logged":true`) || c.DataError != nil {
		t.Fatalf("crm: %s %v", c.Data, c.DataError)
	}
	wantLink(t, r, "human-triage", "skipped", "condition_false")
	if r.Chain.Status != "completed" {
		t.Fatalf("status %s", r.Chain.Status)
	}

	_, r = runAgent(t, s, "sales-qualifier", "Bob at Tiny", map[string]any{"budget": 500, "timeline_days": 90})
	if d := r.Result["data"].(map[string]any); d["score"] != float64(2) || d["urgent"] != false {
		t.Fatalf("qualifier: %+v", r.Result)
	}
	wantLink(t, r, "email-composer", "skipped", "condition_false")
	wantLink(t, r, "crm-logger", "success", "")
	wantLink(t, r, "human-triage", "success", "")

	// The agent page's form sends a query and an empty conText: the lead's
	// facts are unknown, it scores low, and the chain completes all the same.
	for _, ctx := range []map[string]any{{}, nil} {
		_, r = runAgent(t, s, "sales-qualifier", "Carla at Unknown", ctx)
		if d, _ := r.Result["data"].(map[string]any); d == nil || d["score"] != float64(2) || d["urgent"] != false || r.Result["data_error"] != nil {
			t.Fatalf("context %v: qualifier: %+v", ctx, r.Result)
		}
		wantLink(t, r, "email-composer", "skipped", "condition_false")
		wantLink(t, r, "crm-logger", "success", "")
		wantLink(t, r, "human-triage", "success", "")
		if r.Chain.Status != "completed" {
			t.Fatalf("context %v: chain status %s", ctx, r.Chain.Status)
		}
	}
}

// The example agent with tools runs against a fake of its model server: it
// notes, asks to greet, waits for the approval, and answers with data that
// fits its schema.
func TestExampleAgentWithTools(t *testing.T) {
	t.Parallel()
	s, err := LoadDir("../../examples/agents", LoadOptions{Tools: func(n string) bool { _, ok := testRegistry().Get(n); return ok }, Providers: testProviders})
	if err != nil {
		t.Fatal(err)
	}
	def, _ := s.Get("greeting-assistant")
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Text: "Greeting Ada. ", Calls: []llmtest.Call{
			{ID: "n1", Name: "note", Args: `{"text":"greeting Ada"}`},
			{ID: "g1", Name: "greet", Args: `{"name":"Ada","languages":["en"]}`}}},
		llmtest.Turn{Text: "Here it is:\n```json\n{\"greeting\": \"Hello, Ada!\"}\n```"})
	m := *def.Model
	m.URL = f.URL + "/v1"
	def.Model = &m
	var ran []map[string]any
	rt := &Runtime{Set: s, Registry: testRegistry(),
		RunChain: func(_ context.Context, name string, in map[string]any) (any, error) {
			ran = append(ran, in)
			return map[string]any{"greeting": "Hello, " + fmt.Sprint(in["name"]) + "!"}, nil
		},
		ChainTool: func(_ context.Context, name string) (*chain.Chain, error) {
			return &chain.Chain{Name: name, SampleInput: map[string]any{"name": "Ada", "languages": []any{"en", "fr"}}}, nil
		}}
	_, err = rt.Invoke(context.Background(), def, map[string]any{"query": "Ada"}, nil)
	ie, ok := tool.IsInterrupt(err)
	if !ok || !ie.Approve || ie.Prompt.(map[string]any)["tool"] != "greet" {
		t.Fatalf("want the greet call to wait for approval, got %v", err)
	}
	if len(ran) != 0 {
		t.Fatal("the chain ran before it was approved")
	}
	b, _ := json.Marshal(ie.State)
	var state any
	_ = json.Unmarshal(b, &state)
	ctx := tool.WithAnswer(context.Background(), tool.Answer{Action: engine.ActionApprove, Value: ie.Proposed, State: state})
	out, err := rt.Invoke(ctx, def, map[string]any{"query": "Ada"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := out["data"].(map[string]any); d["greeting"] != "Hello, Ada!" || out["data_error"] != nil {
		t.Fatalf("out %v", out)
	}
	if len(ran) != 1 || ran[0]["name"] != "Ada" {
		t.Fatalf("the chain ran with %v", ran)
	}
	if calls := out["tool_calls"].([]any); len(calls) != 2 {
		t.Fatalf("tool_calls %v", calls)
	}
}
