package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
)

// The README's Library section, whole: a registry with the built-in tools and
// one tool of the host's own, a chain decoded from its JSON document,
// validated, then run.
func Example() {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	// A tool is a tool.Func: the node's input in, its output out.
	reg.Register("shout", func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
		text, _ := input["text"].(string)
		return map[string]any{"text": strings.ToUpper(text)}, nil
	})
	eng := engine.New(engine.Options{Registry: reg})

	doc := []byte(`{"name": "greeting", "nodes": [
	  {"node_id": "greet", "kind": "tool", "name": "template",
	   "input": {"template": "Hello {{.name}}!"}, "input_map": {"data": "input"}},
	  {"node_id": "loud", "kind": "tool", "name": "shout",
	   "input_map": {"text": "greet.output.text"}}],
	 "edges": [{"source": "greet", "target": "loud"}]}`)
	c, err := chain.Decode(doc, chain.Limits{})
	if err != nil {
		fmt.Println("decode:", err)
		return
	}
	// Compile checks the chain once against the host's environment (Tools
	// names the host's tools, so that a misspelt one is an issue) and gives
	// a plan to run as many times as needed: the engine never checks a
	// chain itself. Issues lists every issue, warnings included.
	plan, err := chain.Compile(c, chain.ValidateOptions{Tools: reg.Has})
	fmt.Println("issues:", len(plan.Issues()))
	if err != nil {
		return
	}

	res, err := eng.Run(context.Background(), plan, map[string]any{"name": "Ada"}, engine.RunOptions{})
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	fmt.Println(res.Status, res.FinalOutput)
	// Output:
	// issues: 0
	// completed map[text:HELLO ADA!]
}
