package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// fakeSource is a ToolSource with one reachable tool (x:up/echo) and one
// whose server is down (x:down/...): any name under x:down/ is "known".
type fakeSource struct{ calls int }

func (f *fakeSource) Tool(name string) (engine.SourcedTool, bool) {
	switch {
	case name == "x:up/echo":
		return engine.SourcedTool{Name: name, Description: "echoes",
			InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}, "required": []any{"n"}},
			OutputSchema: map[string]any{"type": "object"}}, true
	case strings.HasPrefix(name, "x:down/"):
		return engine.SourcedTool{Name: name, Unavailable: "connect error: refused"}, true
	}
	return engine.SourcedTool{}, false
}

func (f *fakeSource) Tools() []engine.SourcedTool {
	t, _ := f.Tool("x:up/echo")
	return []engine.SourcedTool{t}
}

func (f *fakeSource) Call(ctx context.Context, name string, input map[string]any, emit tool.Emitter) (any, error) {
	f.calls++
	if t, _ := f.Tool(name); t.Unavailable != "" {
		return nil, errors.New(t.Unavailable)
	}
	emit(map[string]any{"progress": 1})
	return map[string]any{"got": input["n"]}, nil
}

func TestRegistrySourceAnswersForItsPrefix(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry()
	reg.Register("echo", func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) { return in, nil })
	src := &fakeSource{}
	reg.AddSource("x:", src)

	if !reg.Has("x:up/echo") || !reg.Has("x:down/any") || reg.Has("x:up/other") || !reg.Has("echo") {
		t.Fatal("Has does not follow the source")
	}
	if in, ok := reg.InputSchema("x:up/echo"); !ok || in["type"] != "object" {
		t.Errorf("input schema %v %v", in, ok)
	}
	if _, ok := reg.InputSchema("x:down/any"); ok {
		t.Error("a tool of a down server has no known schema")
	}
	if reg.Description("x:up/echo") != "echoes" || reg.Unavailable("x:down/any") == "" || reg.Unavailable("x:up/echo") != "" {
		t.Error("description or availability wrong")
	}
	if got := reg.SourcedTools(); len(got) != 1 || got[0].Name != "x:up/echo" {
		t.Errorf("sourced %v", got)
	}
	if names := reg.Names(); len(names) != 1 || names[0] != "echo" {
		t.Errorf("names %v", names)
	}

	// Validation: an unknown tool of the source is an error; one of a down
	// server a warning only; a static input its schema refuses an error.
	doc := `{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"x:up/echo","input":{"n":"one"}},{"node_id":"b","kind":"tool","name":"x:down/t"},{"node_id":"c","kind":"tool","name":"x:up/nope"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	issues := chain.ValidateWith(mustDecode(t, doc), chain.ValidateOptions{Tools: reg.Has, ToolUnavailable: reg.Unavailable, Schemas: reg.NodeSchemas(nil)})
	rules := map[string]chain.Severity{}
	for _, is := range issues {
		rules[is.NodeID+":"+is.Rule] = is.Severity
	}
	if rules["a:"+chain.RuleInputSchema] != chain.SeverityError || rules["b:"+chain.RuleToolUnavailable] != chain.SeverityWarning || rules["c:"+chain.RuleUnknownTool] != chain.SeverityError {
		t.Errorf("issues %+v", issues)
	}
}

func TestRegistrySourceRunsAndFailsAtTheNode(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry()
	src := &fakeSource{}
	reg.AddSource("x:", src)
	e := engine.New(engine.Options{Registry: reg})

	res, err := e.Run(context.Background(), enginetest.PlanOf(e, mustDecode(t, `{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"x:up/echo","input":{"n":2}}]}`)), nil, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("%v %s %v", err, res.Status, js(res.Error))
	}
	if got := js(res.FinalOutput); got != `{"got":2}` {
		t.Errorf("output %s", got)
	}
	// A down server does not stop the run from starting: its node fails
	// with the reason.
	res, err = e.Run(context.Background(), enginetest.PlanOf(e, mustDecode(t, `{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"x:down/t"}]}`)), nil, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusFailed || res.Error == nil || !strings.Contains(js(res.Error), "connect error: refused") {
		t.Fatalf("%v %s %v", err, res.Status, js(res.Error))
	}
}
