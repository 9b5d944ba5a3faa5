package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/llm/llmtest"
)

// A real studio runs a model agent that streams, calls a saved chain after
// a person approves it from the inbox, calls a built-in tool, and answers;
// every step is in the run's events and its tokens in the usage.
func TestAgentCallsToolsThroughAStudio(t *testing.T) {
	t.Parallel()
	bin := builtStudio(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "studio.db")
	f := llmtest.NewOpenAI(t,
		llmtest.Turn{Text: "Let me greet Ada. ", Calls: []llmtest.Call{
			{ID: "n1", Name: "note", Args: `{"text":"about to greet"}`},
			{ID: "g1", Name: "greet", Args: `{"name":"Ada"}`}}},
		llmtest.Turn{Text: "Done: Hello, Ada!"})
	agents := filepath.Join(dir, "agents")
	if err := os.Mkdir(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	agentYAML := `name: helper
model: {url: "` + f.URL + `/v1", name: fake-model}
prompt: "{{ query }}"
tools:
  - chain: greeter
    name: greet
    approval: required
  - tool: echo
    name: note
`
	if err := os.WriteFile(filepath.Join(agents, "helper.agent.yaml"), []byte(agentYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startStudio(t, bin, db, "--agents", agents, "--model-allow-private")
	defer p.cmd.Process.Kill()

	code, m := p.do(t, "POST", "/v1/chains", map[string]any{"name": "greeter", "sample_input": map[string]any{"name": "Ada"},
		"nodes": []any{map[string]any{"node_id": "hello", "kind": "tool", "name": "template", "input": map[string]any{"template": "Hello, {{.name}}!"},
			"input_map": map[string]any{"name": "{{ trigger.name }}"}}}})
	if code != http.StatusCreated {
		t.Fatalf("greeter: %d %v", code, m)
	}
	code, m = p.do(t, "POST", "/v1/chains", map[string]any{"name": "ask",
		"nodes": []any{map[string]any{"node_id": "agent", "kind": "agent", "name": "helper"}}})
	if code != http.StatusCreated {
		t.Fatalf("ask: %d %v", code, m)
	}
	code, m = p.do(t, "POST", "/v1/chains/"+m["id"].(string)+"/runs", map[string]any{"input": map[string]any{"query": "Greet Ada"}})
	if code != http.StatusAccepted {
		t.Fatalf("run: %d %v", code, m)
	}
	run := m["run_id"].(string)
	p.waitStatus(t, run, "paused")

	// The gated call is an approval in the inbox, asking about greet.
	_, inbox := p.do(t, "GET", "/v1/interrupts?run="+run, nil)
	items, _ := inbox["interrupts"].([]any)
	if len(items) != 1 {
		t.Fatalf("inbox %v", inbox)
	}
	it := items[0].(map[string]any)
	if acts := fmt.Sprint(it["actions"]); !strings.Contains(acts, "approve") || !strings.Contains(acts, "reject") {
		t.Fatalf("actions %v", it)
	}
	if !strings.Contains(fmt.Sprint(it["prompt"]), "greet") {
		t.Fatalf("prompt %v", it["prompt"])
	}
	code, m = p.do(t, "POST", "/v1/runs/"+run+"/resume", map[string]any{"action": "approve", "comment": "go ahead"})
	if code >= 300 {
		t.Fatalf("approve: %d %v", code, m)
	}
	m = p.waitStatus(t, run, "completed", "failed")
	if m["status"] != "completed" {
		t.Fatalf("run %v\n%s", m, p.logs())
	}
	out := m["final_output"].(map[string]any)
	if out["answer"] != "Done: Hello, Ada!" {
		t.Fatalf("output %v", out)
	}
	calls := out["tool_calls"].([]any)
	if len(calls) != 2 || fmt.Sprint(calls[1].(map[string]any)["output"]) != "map[text:Hello, Ada!]" || calls[1].(map[string]any)["status"] != "ok" {
		t.Fatalf("tool_calls %v", calls)
	}
	if n := len(f.Requests()); n != 2 {
		t.Fatalf("%d model requests, want 2: the pause did not keep the conversation", n)
	}
	// The model is offered the built-in tool as the registry describes it,
	// and the chain with the schema of its sample input.
	tools := f.Requests()[0]["tools"].([]any)
	greet, note := tools[0].(map[string]any)["function"].(map[string]any), tools[1].(map[string]any)["function"].(map[string]any)
	if note["description"] != "Returns its input unchanged." || fmt.Sprint(greet["parameters"]) != "map[properties:map[name:map[type:string]] type:object]" {
		t.Fatalf("tools offered %v", tools)
	}

	steps := map[string]int{}
	var text strings.Builder
	for _, ev := range p.events(t, run) {
		if pr, ok := ev["progress"].(map[string]any); ok {
			steps[fmt.Sprint(pr["step"])]++
			if pr["step"] == "text" {
				text.WriteString(fmt.Sprint(pr["text"]))
			}
		}
	}
	if steps["model_call"] != 2 || steps["tool_call"] != 2 || steps["tool_result"] != 2 || steps["model_usage"] != 2 || steps["text"] == 0 {
		t.Fatalf("steps %v", steps)
	}
	if text.String() != "Let me greet Ada. Done: Hello, Ada!" {
		t.Fatalf("streamed text %q", text.String())
	}
	_, usage := p.do(t, "GET", "/v1/runs/"+run+"/usage", nil)
	total, _ := usage["total"].(map[string]any)
	if total["input_tokens"] != 30.0 || total["calls"] != 2.0 {
		t.Fatalf("usage %v", usage)
	}
}
