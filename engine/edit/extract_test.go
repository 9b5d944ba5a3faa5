package edit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/edit"
	"github.com/chainstudio/studio/engine/enginetest"
)

// linear: a → b → c → d; b takes what a passed on, c reads b by id, and d
// reads c by id (the reference that must survive the extract).
const extractLinear = `{"name":"parent","timeout":60,"strict_routing":true,"nodes":[
 {"node_id":"a","kind":"tool","name":"echo","input_map":{"v":"input.n"},"position":{"x":0,"y":0}},
 {"node_id":"b","kind":"tool","name":"echo","position":{"x":200,"y":0}},
 {"node_id":"c","kind":"tool","name":"echo","input":{"tag":"c"},"input_map":{"from_b":"b.output.v"},"position":{"x":400,"y":0}},
 {"node_id":"d","kind":"tool","name":"echo","input_map":{"got":"c.output.from_b","tag":"c.output.tag"}}],
 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d","condition":"output.tag == 'c'"}]}`

func TestExtractLinearKeepsFinalOutput(t *testing.T) {
	t.Parallel()
	c := enginetest.MustDecode(t, extractLinear)
	parent, sub, err := edit.Extract(c, []string{"b", "c"}, "inner")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range parent.Nodes {
		ids = append(ids, n.ID+":"+string(n.Kind))
	}
	if got := strings.Join(ids, ","); got != "a:tool,c:skill,d:tool" {
		t.Errorf("parent nodes = %s", got)
	}
	if n := parent.Nodes[1]; n.Name != "inner" || n.Position == nil || n.Position.X != 300 {
		t.Errorf("skill node = %+v", n)
	}
	var es []string
	for _, e := range parent.Edges {
		es = append(es, e.Source+">"+e.Target+"|"+e.Condition)
	}
	if got := strings.Join(es, ","); got != "a>c|,c>d|output.tag == 'c'" {
		t.Errorf("parent edges = %s", got)
	}
	if len(sub.Nodes) != 2 || len(sub.Edges) != 1 || sub.Edges[0].Source != "b" || sub.Name != "inner" || sub.Timeout != 60 || !sub.StrictRouting {
		t.Errorf("sub = %+v", sub)
	}
	if c.Nodes[1].ID != "b" || len(c.Edges) != 3 {
		t.Error("Extract modified its argument")
	}

	before := sameFinalOutput(t, c, parent, sub)
	if enginetest.JSON(before) != `{"got":7,"tag":"c"}` {
		t.Errorf("before = %s", enginetest.JSON(before))
	}
}

func TestExtractRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc string
		sel       []string
		newName   string
		want      string // in the message
		node      string // the node named
	}{
		{"downstream reads a hidden node", strings.Replace(extractLinear, `"tag":"c.output.tag"`, `"tag":"b.output.v"`, 1),
			[]string{"b", "c"}, "x", `"b.output.v" reads node "b"`, "d"},
		{"downstream reads a hidden node by steps", strings.Replace(extractLinear, `"tag":"c.output.tag"`, `"tag":"steps.b.output"`, 1),
			[]string{"b", "c"}, "x", `reads node "b"`, "d"},
		{"inside reads the run input while fed", strings.Replace(extractLinear, `"from_b":"b.output.v"`, `"from_b":"b.output.v","n":"input.n"`, 1), []string{"b", "c"}, "x", `"input.n" reads the run's input`, "c"},
		{"inside reads a node left outside", extractLinear, []string{"c", "d"}, "x", `reads node "b", which stays outside`, "c"},
		{"entry reads its feeder by id", strings.Replace(extractLinear, `"name":"echo","position":{"x":200`, `"name":"echo","input_map":{"v":"a.output.v"},"position":{"x":200`, 1),
			[]string{"b", "c"}, "x", `"a.output.v" reads node "a"`, "b"},
		{"two exits", `{"name":"p","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"a","target":"c"}]}`, []string{"b", "c"}, "x", `ends in 2 ("b", "c")`, ""},
		{"leaves from a middle node", `{"name":"p","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"b","target":"d"}]}`, []string{"b", "c"}, "x", `only its last node "c"`, "b"},
		{"entries fed differently", `{"name":"p","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"z","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"},{"node_id":"j","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"z","target":"c"},{"source":"b","target":"j"},{"source":"c","target":"j"}]}`, []string{"b", "c", "j"}, "x", `fed differently from "b"`, "c"},
		{"loop inside", `{"name":"p","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"b","max_iterations":2}]}`, []string{"b", "c"}, "x", "no last node", ""},
		{"exit skips its failure", strings.Replace(extractLinear, `"input":{"tag":"c"}`, `"input":{"tag":"c"},"on_error":"skip"`, 1),
			[]string{"b", "c"}, "x", `on_error "skip"`, "c"},
		{"set_state inside", strings.Replace(extractLinear, `"input":{"tag":"c"}`, `"input":{"tag":"c"},"set_state":{"k":"output"}`, 1),
			[]string{"b", "c"}, "x", "own state", "c"},
		{"unknown node", extractLinear, []string{"b", "nope"}, "x", "no such node", "nope"},
		{"empty selection", extractLinear, nil, "x", "select at least one node", ""},
		{"no name", extractLinear, []string{"b"}, "  ", "needs a name", ""},
		{"own name", extractLinear, []string{"b"}, "parent", "cannot call itself", ""},
		{"reserved name", extractLinear, []string{"b"}, "__chain__x", "reserved", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := edit.Extract(enginetest.MustDecode(t, tc.doc), tc.sel, tc.newName)
			var xe *edit.ExtractError
			if !errors.As(err, &xe) {
				t.Fatalf("err = %v, want an ExtractError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || xe.NodeID != tc.node {
				t.Errorf("err = %v (node %q), want %q naming node %q", err, xe.NodeID, tc.want, tc.node)
			}
		})
	}
}

// A selection with no edge in and a shared source for two starts: the
// skill node is fed once, and a parent entry_node inside moves to it.
func TestExtractSharedEntryAndEntryNode(t *testing.T) {
	t.Parallel()
	c := enginetest.MustDecode(t, `{"name":"p","entry_node":"a","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"},{"node_id":"j","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"a","target":"c"},{"source":"b","target":"j"},{"source":"c","target":"j"}]}`)
	parent, sub, err := edit.Extract(c, []string{"b", "c", "j"}, "fan")
	if err != nil {
		t.Fatal(err)
	}
	if len(parent.Edges) != 1 || parent.Edges[0].Source != "a" || parent.Edges[0].Target != "j" || parent.Edges[0].ID != "a->j" {
		t.Errorf("parent edges = %+v", parent.Edges)
	}
	if len(sub.Edges) != 2 {
		t.Errorf("sub edges = %+v", sub.Edges)
	}
	p2, _, err := edit.Extract(c, []string{"a", "b", "c", "j"}, "all")
	if err != nil {
		t.Fatal(err)
	}
	if p2.EntryNode != "j" || len(p2.Nodes) != 1 || p2.Nodes[0].Kind != chain.KindSkill {
		t.Errorf("whole chain extract = %+v", p2)
	}
}

// sameFinalOutput validates parent and sub, runs c and parent (with sub as
// its skill) on the same input, and fails unless both end the same.
func sameFinalOutput(t *testing.T, c, parent, sub *chain.Chain) any {
	t.Helper()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	resolve := func(_ context.Context, name string) (*chain.Chain, error) {
		if name == sub.Name {
			return sub, nil
		}
		return nil, fmt.Errorf("no chain %q", name)
	}
	eng := engine.New(engine.Options{Registry: reg, Sink: &engine.MemorySink{}, Checkpointer: engine.NewMemoryCheckpointer(), Chains: resolve})
	for _, ch := range []*chain.Chain{sub, parent} {
		if is := chain.ValidateWith(ch, chain.ValidateOptions{Resolve: func(n string) (*chain.Chain, bool) { s, err := resolve(nil, n); return s, err == nil }}); chain.HasErrors(is) {
			t.Fatalf("%s does not validate: %v", ch.Name, is)
		}
	}
	in := map[string]any{"n": 7.0}
	before, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), in, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := eng.Run(context.Background(), enginetest.PlanOf(eng, parent), in, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != chain.StatusCompleted || enginetest.JSON(after.FinalOutput) != enginetest.JSON(before.FinalOutput) {
		t.Errorf("after = %s %s, before = %s", after.Status, enginetest.JSON(after.FinalOutput), enginetest.JSON(before.FinalOutput))
	}
	return before.FinalOutput
}

// A selection nothing feeds starts from the run's input, so its nodes may
// read `input`: the skill node, now a root, passes the run input on.
func TestExtractRootsKeepRunInput(t *testing.T) {
	t.Parallel()
	c := enginetest.MustDecode(t, extractLinear)
	parent, sub, err := edit.Extract(c, []string{"a", "b"}, "head")
	if err != nil {
		t.Fatal(err)
	}
	if parent.Nodes[0].ID != "b" || parent.Nodes[0].Kind != chain.KindSkill {
		t.Errorf("parent nodes = %+v", parent.Nodes)
	}
	sameFinalOutput(t, c, parent, sub)
}

// Pinned outputs go with their nodes: the sub-chain gets those of the nodes
// it takes, the parent keeps the others and the exit's (its skill node
// gives the exit's output), so neither document has a pin of no node.
func TestExtractMovesPins(t *testing.T) {
	t.Parallel()
	c := enginetest.MustDecode(t, strings.Replace(extractLinear, `"edges":[`, `"pinned_outputs":{"a":1,"b":2,"c":3},"edges":[`, 1))
	parent, sub, err := edit.Extract(c, []string{"b", "c"}, "inner")
	if err != nil {
		t.Fatal(err)
	}
	if got := enginetest.JSON(parent.PinnedOutputs); got != `{"a":1,"c":3}` {
		t.Errorf("parent pins = %s", got)
	}
	if got := enginetest.JSON(sub.PinnedOutputs); got != `{"b":2,"c":3}` {
		t.Errorf("sub pins = %s", got)
	}
	for _, d := range []*chain.Chain{parent, sub} {
		if is := chain.PinIssues(d); is != nil {
			t.Errorf("%s: pin issues %v", d.Name, is)
		}
	}
	if enginetest.JSON(c.PinnedOutputs) != `{"a":1,"b":2,"c":3}` {
		t.Error("Extract modified its argument's pins")
	}
}
