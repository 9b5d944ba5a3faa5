package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// toolsWithSchemas is the built-in tools with their input schemas, as the
// studio registers them: the data-flow rule needs to know a tool's data field.
func toolsWithSchemas() *engine.Registry {
	reg := schemaRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	return reg
}

func runWith(t *testing.T, reg *engine.Registry, doc string, input map[string]any) *engine.Result {
	t.Helper()
	e := engine.New(engine.Options{Registry: reg, Sink: &engine.MemorySink{}, Checkpointer: engine.NewMemoryCheckpointer()})
	res, err := e.Run(context.Background(), enginetest.PlanOf(e, mustDecode(t, doc)), input, engine.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func TestDataFlowsIntoARootByDefault(t *testing.T) {
	t.Parallel()
	if builtin.DataField != chain.DataFieldKeyword {
		t.Fatalf("builtin.DataField %q, chain.DataFieldKeyword %q: one keyword", builtin.DataField, chain.DataFieldKeyword)
	}
	input := map[string]any{"name": "x"}
	cases := []struct {
		name, node, want string
		edges            string
	}{
		// the newcomer's first transform: the expression reads the run's input
		{"root_transform", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"}}`, `"x"`, ""},
		{"root_template", `{"node_id":"a","kind":"tool","name":"template","input":{"template":"Hi {{.name}}"}}`, `{"text":"Hi x"}`, ""},
		{"root_delay_returns_it", `{"node_id":"a","kind":"tool","name":"delay","input":{"ms":0}}`, `{"name":"x"}`, ""},
		// told otherwise: static_only keeps to the static input (A2E's rule)
		{"static_only", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"},"static_only":true}`, `null`, ""},
		// a static input that carries its own data is that data, as before
		{"own_data_keys", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name","name":"mine"}}`, `"mine"`, ""},
		{"data_given", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name","data":{"name":"given"}}}`, `"given"`, ""},
		// input_map says what the node gets: nothing is added
		{"input_map_set", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"k"},"input_map":{"k":"input.name"}}`, `"x"`, ""},
		{"input_map_other", `{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"},"input_map":{"k":"input.name"}}`, `null`, ""},
		// a tool without a data field gets what it is given
		{"no_data_field", `{"node_id":"a","kind":"tool","name":"echo","input":{"k":1}}`, `{"k":1}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := runWith(t, toolsWithSchemas(), `{"name":"d","nodes":[`+tc.node+`]}`, input)
			if got := strings.TrimSpace(js(res.Outputs["a"])); got != tc.want {
				t.Errorf("output = %s, want %s", got, tc.want)
			}
		})
	}
}

// Later nodes are not changed by the rule: they receive their upstream data
// through input_map (the designer writes the row), or as is.
func TestDataFlowLeavesLaterNodesAlone(t *testing.T) {
	t.Parallel()
	doc := `{"name":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo"},
	 {"node_id":"b","kind":"tool","name":"transform","input":{"expression":"name"}}],
	 "edges":[{"source":"a","target":"b"}]}`
	res := runWith(t, toolsWithSchemas(), doc, map[string]any{"name": "x"})
	if got := strings.TrimSpace(js(res.Outputs["b"])); got != "null" {
		t.Errorf("b = %s, want null (it names no data)", got)
	}
	if got := strings.TrimSpace(js(res.Nodes["b"].Input)); got != `{"expression":"name"}` {
		t.Errorf("b's input = %s", got)
	}
}

// The node's recorded input is what the tool got: the static input with the
// run's input in the data field; a registry that does not know the tool's
// schema (a host without schemas) keeps the plain rule.
func TestDataFlowRecordedInput(t *testing.T) {
	t.Parallel()
	doc := `{"name":"d","nodes":[{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"}}]}`
	res := runWith(t, toolsWithSchemas(), doc, map[string]any{"name": "x"})
	if got := strings.TrimSpace(js(res.Nodes["a"].Input)); got != `{"data":{"name":"x"},"expression":"name"}` {
		t.Errorf("input = %s", got)
	}
	res, _ = run(t, doc, map[string]any{"name": "x"})
	if got := strings.TrimSpace(js(res.Outputs["a"])); got != "null" {
		t.Errorf("without schemas: %s, want null", got)
	}
}

func TestDescribeInputDataFlow(t *testing.T) {
	t.Parallel()
	c := mustDecode(t, `{"name":"d","nodes":[{"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"}},
	 {"node_id":"b","kind":"tool","name":"transform","input":{"expression":"name"},"static_only":true}]}`)
	d, _ := engine.DescribeInput(c, "a", schemaRegistry())
	if !d.PassesUpstream || !strings.Contains(d.Summary, "the run's input as `data`") || !strings.Contains(strings.Join(d.Items, "\n"), "static_only") {
		t.Errorf("a: %+v", d)
	}
	d, _ = engine.DescribeInput(c, "b", schemaRegistry())
	if d.PassesUpstream || !strings.Contains(d.Summary, "only (static_only)") {
		t.Errorf("b: %+v", d)
	}
}

func TestValidateStaticOnly(t *testing.T) {
	t.Parallel()
	c := mustDecode(t, `{"name":"d","nodes":[
	 {"node_id":"a","kind":"tool","name":"transform","input":{"expression":"name"},"static_only":true},
	 {"node_id":"b","kind":"tool","name":"transform","input":{"expression":"name"},"static_only":true},
	 {"node_id":"c","kind":"branch","condition":"true","static_only":true},
	 {"node_id":"d","kind":"tool","name":"echo"}],
	 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d","label":"true"},{"source":"c","target":"d","label":"false"}]}`)
	got := map[string]string{}
	for _, is := range chain.ValidateWith(c, chain.ValidateOptions{Schemas: schemaRegistry().NodeSchemas(nil)}) {
		if is.Field == "static_only" {
			got[is.NodeID] = is.Rule + ": " + is.Message
		}
	}
	if _, ok := got["a"]; ok {
		t.Errorf("a is a root transform: static_only does something there; got %s", got["a"])
	}
	if !strings.Contains(got["b"], "ignored_field") || !strings.Contains(got["b"], "changes nothing") {
		t.Errorf("b (fed by an edge): %q", got["b"])
	}
	if !strings.Contains(got["c"], "used only by tool nodes") {
		t.Errorf("c (a branch): %q", got["c"])
	}
}
