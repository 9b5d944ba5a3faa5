package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
)

func schemaRegistry() *engine.Registry {
	reg := engine.NewRegistry()
	for _, t := range builtin.Catalog() {
		reg.SetInputSchema(t.Name, t.InputSchema)
	}
	return reg
}

// TestInputSchemaRule: a node's static input and config are checked against
// its tool's schema, with the field path; expressions are not.
func TestInputSchemaRule(t *testing.T) {
	agentIn := map[string]any{"type": "object", "required": []any{"query"},
		"properties": map[string]any{"query": map[string]any{}, "context": map[string]any{"type": "object"}}}
	agentCfg := map[string]any{"type": "object", "properties": map[string]any{"agent": map[string]any{"type": "string"}}}
	agents := func(nd *chain.Node) (map[string]any, map[string]any) {
		if nd.Name == "writer" {
			return agentIn, agentCfg
		}
		return nil, nil
	}
	for _, tc := range []struct {
		name string
		node chain.Node
		want []string // messages of input_schema issues, in order
	}{
		{"number as text", chain.Node{Kind: chain.KindTool, Name: "delay", Input: map[string]any{"ms": "fast"}},
			[]string{`input.ms: want a number, got "fast"`}},
		{"number fits", chain.Node{Kind: chain.KindTool, Name: "delay", Input: map[string]any{"ms": 250.0}}, nil},
		{"above maximum", chain.Node{Kind: chain.KindTool, Name: "delay", Input: map[string]any{"ms": 3600001.0}},
			[]string{`input.ms: want at most 3600000, got 3600001`}},
		{"below minimum", chain.Node{Kind: chain.KindTool, Name: "delay", Input: map[string]any{"ms": -1.0}},
			[]string{`input.ms: want at least 0, got -1`}},
		{"required missing", chain.Node{Kind: chain.KindTool, Name: "delay", Input: map[string]any{"note": "x"}},
			[]string{`input.ms: required; set it`}},
		{"required from input_map", chain.Node{Kind: chain.KindTool, Name: "delay", InputMap: map[string]string{"ms": "input.wait"}}, nil},
		{"expression wins over a bad literal", chain.Node{Kind: chain.KindTool, Name: "delay",
			Input: map[string]any{"ms": "fast"}, InputMap: map[string]string{"ms": "input.wait"}}, nil},
		{"no input: upstream data, not checked", chain.Node{Kind: chain.KindTool, Name: "delay"}, nil},
		{"enum", chain.Node{Kind: chain.KindTool, Name: "http", Input: map[string]any{"url": "http://127.0.0.1/", "method": "FETCH"}},
			[]string{`input.method: want one of "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", got "FETCH"`}},
		{"nested object values", chain.Node{Kind: chain.KindTool, Name: "http", Input: map[string]any{"url": "http://127.0.0.1/", "headers": map[string]any{"Accept": 1.0}}},
			[]string{`input.headers.Accept: want a string, got 1`}},
		{"list items", chain.Node{Kind: chain.KindTool, Name: "proc", Input: map[string]any{"argv": []any{"wc", true}}},
			[]string{`input.argv[1]: want a string, got true`}},
		{"empty required string", chain.Node{Kind: chain.KindTool, Name: "http", Input: map[string]any{"url": ""}},
			[]string{`input.url: must not be empty`}},
		{"integer", chain.Node{Kind: chain.KindTool, Name: "fail", Input: map[string]any{"until_attempt": 1.5}},
			[]string{`input.until_attempt: want an integer, got 1.5`}},
		{"several problems, sorted by field", chain.Node{Kind: chain.KindTool, Name: "write_file", Input: map[string]any{"path": 3.0, "append": "yes"}},
			[]string{`input.append: want a boolean, got "yes"`, `input.path: want a string, got 3`}},
		{"unknown tool: nothing to check", chain.Node{Kind: chain.KindTool, Name: "custom", Input: map[string]any{"ms": "fast"}}, nil},
		{"proc config", chain.Node{Kind: chain.KindProc, Config: map[string]any{"argv": []any{"wc"}, "timeout": "soon"}},
			[]string{`config.timeout: want a number, got "soon"`}},
		{"proc config fills required input", chain.Node{Kind: chain.KindProc, Config: map[string]any{"argv": []any{"wc"}}, Input: map[string]any{"stdin": "a"}}, nil},
		{"agent input", chain.Node{Kind: chain.KindAgent, Name: "writer", Input: map[string]any{"context": "x"}},
			[]string{`input.query: required; set it`, `input.context: want an object, got "x"`}},
		{"agent config", chain.Node{Kind: chain.KindAgent, Name: "writer", Config: map[string]any{"agent": 7.0}},
			[]string{`config.agent: want a string, got 7`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nd := tc.node
			nd.ID = "n"
			c := &chain.Chain{Name: "c", Nodes: []chain.Node{nd}}
			issues := chain.ValidateWith(c, chain.ValidateOptions{Schemas: schemaRegistry().NodeSchemas(agents)})
			var got []string
			for _, is := range issues {
				if is.Rule != chain.RuleInputSchema {
					continue
				}
				if is.Severity != chain.SeverityError || is.NodeID != "n" || !strings.HasPrefix(is.Message, is.Field+": ") {
					t.Errorf("issue %+v: want an error on node n whose message starts with its field", is)
				}
				got = append(got, is.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("input_schema issues:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestInputSchemaRuleOff: without Schemas the rule does not run.
func TestInputSchemaRuleOff(t *testing.T) {
	c := &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "n", Kind: chain.KindTool, Name: "delay", Input: map[string]any{"ms": "fast"}}}}
	for _, is := range chain.Validate(c) {
		if is.Rule == chain.RuleInputSchema {
			t.Fatalf("unexpected %v", is)
		}
	}
}

// TestCheckSchemaBounded: a huge value reports at most max problems.
func TestCheckSchemaBounded(t *testing.T) {
	list := make([]any, 10000)
	for i := range list {
		list[i] = float64(i)
	}
	ps := chain.CheckSchema(map[string]any{"type": "array", "items": map[string]any{"type": "string"}}, list, "input.argv", 10)
	if len(ps) != 10 || ps[0].String() != "input.argv[0]: want a string, got 0" {
		t.Fatalf("got %d problems, first %v", len(ps), ps)
	}
}

// BenchmarkValidateInputSchema: what the input_schema rule adds to a save's
// validation on a 5,000-node chain of tool nodes with static inputs (the
// designer validates on every save).
func BenchmarkValidateInputSchema(b *testing.B) {
	const n = 5000
	tools := []struct {
		name string
		in   map[string]any
	}{
		{"delay", map[string]any{"ms": 10.0}},
		{"http", map[string]any{"url": "http://127.0.0.1/", "method": "POST", "headers": map[string]any{"Accept": "application/json"}, "timeout": 5.0}},
		{"write_file", map[string]any{"path": "out.txt", "content": "x", "append": true}},
		{"proc", map[string]any{"argv": []any{"wc", "-l"}, "stdin": "a\nb"}},
	}
	c := &chain.Chain{Name: "big"}
	for i := 0; i < n; i++ {
		t := tools[i%len(tools)]
		id := fmt.Sprintf("n%d", i)
		c.Nodes = append(c.Nodes, chain.Node{ID: id, Kind: chain.KindTool, Name: t.name, Input: t.in})
		if i > 0 {
			c.Edges = append(c.Edges, chain.Edge{ID: fmt.Sprintf("e%d", i), Source: fmt.Sprintf("n%d", i-1), Target: id})
		}
	}
	schemas := schemaRegistry().NodeSchemas(nil)
	for _, tc := range []struct {
		name string
		opts chain.ValidateOptions
	}{
		{"without", chain.ValidateOptions{}},
		{"with", chain.ValidateOptions{Schemas: schemas}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if issues := chain.ValidateWith(c, tc.opts); len(issues) != 0 {
					b.Fatalf("issues: %v", issues[0])
				}
			}
		})
	}
}
