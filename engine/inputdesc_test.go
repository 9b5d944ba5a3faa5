package engine_test

import (
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
)

func TestDescribeInput(t *testing.T) {
	t.Parallel()
	doc := `{"name":"d","nodes":[
	 {"node_id":"shape","kind":"tool","name":"echo"},
	 {"node_id":"static","kind":"tool","name":"echo","input":{"k":1}},
	 {"node_id":"mapped","kind":"tool","name":"echo","input_map":{"data":"shape.output"}},
	 {"node_id":"both","kind":"tool","name":"echo","input":{"k":1,"data":0},"input_map":{"data":"shape.output"}},
	 {"node_id":"join","kind":"tool","name":"echo"},
	 {"node_id":"fan","kind":"map","items_path":"input.xs","map_node":"body"},
	 {"node_id":"body","kind":"tool","name":"echo"}],
	"edges":[{"source":"shape","target":"static"},{"source":"shape","target":"mapped"},{"source":"shape","target":"both"},
	 {"source":"static","target":"join"},{"source":"mapped","target":"join"}]}`
	c := mustDecode(t, doc)
	want := map[string][]string{
		"shape":  {"Receives the run's input as is."},
		"static": {`Receives its static input {"k":1}; the output of ` + "`shape`" + ` is not passed because a static input is set.`},
		"mapped": {"input_map reads it as `output`", "input_map adds `data` from `shape.output`"},
		"both":   {"an entry wins over a static key", "`data` is both static and mapped"},
		"join":   {"the output of the node whose edge fired (`static` or `mapped`"},
		"body":   {"one item of `fan`'s list at a time"},
	}
	for id, parts := range want {
		d, ok := engine.DescribeInput(c, id, nil)
		if !ok {
			t.Fatalf("%s: not found", id)
		}
		text := d.Summary + "\n" + strings.Join(d.Items, "\n")
		for _, p := range parts {
			if !strings.Contains(text, p) {
				t.Errorf("%s: %q lacks %q", id, text, p)
			}
		}
	}
	if d, _ := engine.DescribeInput(c, "shape", nil); !d.PassesUpstream {
		t.Errorf("shape passes the run's input on")
	}
	if d, _ := engine.DescribeInput(c, "static", nil); d.PassesUpstream {
		t.Errorf("static input: upstream is not passed")
	}
	if _, ok := engine.DescribeInput(c, "ghost", nil); ok {
		t.Errorf("ghost described")
	}
}

// The description agrees with what the engine hands the node.
func TestDescribeInputMatchesRun(t *testing.T) {
	t.Parallel()
	doc := `{"name":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"v":1}},
	 {"node_id":"b","kind":"tool","name":"echo","input":{"k":2}},
	 {"node_id":"c","kind":"tool","name":"echo"}],
	 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	res, _ := run(t, doc, map[string]any{"x": 1})
	got := map[string]string{}
	for _, n := range res.Nodes {
		got[n.NodeID] = js(n.Input)
	}
	if got["b"] != `{"k":2}` || got["c"] != `{"k":2}` {
		t.Fatalf("inputs = %v", got)
	}
	c := mustDecode(t, doc)
	if d, _ := engine.DescribeInput(c, "b", nil); d.PassesUpstream || !strings.Contains(d.Summary, "not passed") {
		t.Errorf("b: %+v", d)
	}
	if d, _ := engine.DescribeInput(c, "c", nil); !d.PassesUpstream || !strings.Contains(d.Summary, "the output of `b`") {
		t.Errorf("c: %+v", d)
	}
}

// An input_map entry that reads `output` whole carries the upstream data on
// beside a static input, and a scoped tool (a script) reads it by name.
func TestDescribeInputCarriedOn(t *testing.T) {
	t.Parallel()
	doc := `{"name":"d","nodes":[{"node_id":"hello","kind":"tool","name":"echo"},
	 {"node_id":"wait","kind":"tool","name":"delay","input":{"ms":1},"input_map":{"data":"output"}},
	 {"node_id":"js","kind":"tool","name":"code","input":{"code":"return output"}}],
	 "edges":[{"source":"hello","target":"wait"},{"source":"wait","target":"js"}]}`
	c := mustDecode(t, doc)
	d, _ := engine.DescribeInput(c, "wait", nil)
	if !d.PassesUpstream || !strings.Contains(d.Summary, "Receives the output of `hello` as `data`") || !strings.Contains(d.Summary, `static input {"ms":1}`) {
		t.Errorf("wait: %+v", d)
	}
	reg := engine.NewRegistry()
	reg.SetScoped("code")
	d, _ = engine.DescribeInput(c, "js", reg)
	if !d.PassesUpstream || !strings.Contains(d.Summary, "reads the output of `wait` as `output`") {
		t.Errorf("js: %+v", d)
	}
	if d, _ := engine.DescribeInput(c, "js", nil); d.PassesUpstream {
		t.Errorf("js without the registry's word is a plain tool with a static input: %+v", d)
	}
}
