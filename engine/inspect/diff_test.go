package inspect_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
)

// diffJSON is the diff's field lists, encoded without HTML escaping so "->"
// reads as written (the values, old → new, are checked by TestDiffValues).
func diffJSON(d *inspect.ChainDiff) string {
	c := *d
	c.ChainChanges = nil
	c.NodesChanged = append([]inspect.NodeChange(nil), d.NodesChanged...)
	for i := range c.NodesChanged {
		c.NodesChanged[i].Changes = nil
	}
	c.EdgesChanged = append([]inspect.EdgeChange(nil), d.EdgesChanged...)
	for i := range c.EdgesChanged {
		c.EdgesChanged[i].Changes = nil
	}
	d = &c
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(d)
	return string(bytes.TrimSpace(b.Bytes()))
}

func diffBase() *chain.Chain {
	return &chain.Chain{
		Name:        "base",
		Description: "d",
		EntryNode:   "a",
		Nodes: []chain.Node{
			{ID: "a", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"x": 1.0}, Position: &chain.Position{X: 1, Y: 2}},
			{ID: "b", Kind: chain.KindTool, Name: "echo", Retry: &chain.Retry{MaxAttempts: 2}},
			{ID: "c", Kind: chain.KindCondition, Cases: []chain.Case{{Handle: "yes", When: "input.x > 0"}}},
		},
		Edges: []chain.Edge{
			{ID: "e1", Source: "a", Target: "b"},
			{ID: "e2", Source: "b", Target: "c", Condition: "true"},
			{Source: "c", Target: "a", Label: "yes", MaxIterations: 3},
		},
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(c *chain.Chain)
		want string
	}{
		{"identical", func(c *chain.Chain) {}, `{}`},
		{"reordered nodes and edges are not a change", func(c *chain.Chain) {
			c.Nodes[0], c.Nodes[2] = c.Nodes[2], c.Nodes[0]
			c.Edges[0], c.Edges[1] = c.Edges[1], c.Edges[0]
		}, `{}`},
		{"nil map equals empty map", func(c *chain.Chain) {
			c.Nodes[1].Input = map[string]any{}
			c.Nodes[1].SetState = map[string]string{}
		}, `{}`},
		{"chain fields", func(c *chain.Chain) {
			c.Name = "renamed"
			c.Timeout = 30
			c.StrictRouting = true
		}, `{"chain":["name","strict_routing","timeout"]}`},
		{"moved node", func(c *chain.Chain) {
			c.Nodes[0].Position = &chain.Position{X: 5, Y: 2}
		}, `{"nodes_changed":[{"node_id":"a","fields":["position"]}]}`},
		{"node fields in declaration order", func(c *chain.Chain) {
			c.Nodes[0].Input["x"] = 2.0
			c.Nodes[0].Kind = chain.KindSkill
			c.Nodes[1].Retry.MaxAttempts = 3
			c.Nodes[2].Cases[0].When = "false"
		}, `{"nodes_changed":[{"node_id":"a","fields":["kind","input"]},{"node_id":"b","fields":["retry"]},{"node_id":"c","fields":["cases"]}]}`},
		{"added and removed nodes sorted", func(c *chain.Chain) {
			c.Nodes = append(c.Nodes[:1], chain.Node{ID: "z", Kind: chain.KindTool}, chain.Node{ID: "m", Kind: chain.KindTool})
		}, `{"nodes_added":["m","z"],"nodes_removed":["b","c"]}`},
		{"edges", func(c *chain.Chain) {
			c.Edges[0].Label = "go"
			c.Edges[1].Target = "a"
			c.Edges = append(c.Edges[:2], chain.Edge{ID: "e9", Source: "a", Target: "c"})
		}, `{"edges_added":["e9"],"edges_removed":["c->a[yes]"],"edges_changed":[{"edge_id":"e1","fields":["label"]},{"edge_id":"e2","fields":["target"]}]}`},
		{"id-less edge keyed by its ends", func(c *chain.Chain) {
			c.Edges[2].MaxIterations = 5
		}, `{"edges_changed":[{"edge_id":"c->a[yes]","fields":["max_iterations"]}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := diffBase()
			b := a.Clone()
			tc.edit(b)
			d := inspect.Diff(a, b)
			got := diffJSON(d)
			if got != tc.want {
				t.Fatalf("diff\n got %s\nwant %s", got, tc.want)
			}
			if d.Empty() != (tc.want == `{}`) {
				t.Fatalf("Empty() = %v", d.Empty())
			}
			// Deterministic: the same diff every time.
			for i := 0; i < 5; i++ {
				again := diffJSON(inspect.Diff(a, b))
				if again != got {
					t.Fatalf("not deterministic: %s vs %s", again, got)
				}
			}
		})
	}
}

func TestDiffNil(t *testing.T) {
	t.Parallel()
	d := inspect.Diff(nil, diffBase())
	got := diffJSON(d)
	want := `{"chain":["name","description","entry_node"],"nodes_added":["a","b","c"],"edges_added":["c->a[yes]","e1","e2"]}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if !inspect.Diff(nil, nil).Empty() {
		t.Fatal("nil vs nil not empty")
	}
}

// Every changed field comes with its value old → new; a map changes key by
// key, so an edited expression in input_map shows alone.
func TestDiffValues(t *testing.T) {
	t.Parallel()
	a := diffBase()
	a.Nodes[0].InputMap = map[string]string{"total": "input.x > 1", "same": "input.y"}
	b := a.Clone()
	b.Description = "new words"
	b.Nodes[0].InputMap = map[string]string{"total": "input.x >= 2 && input.z", "same": "input.y", "added": "a.output"}
	b.Nodes[0].Label = "Fetch"
	b.Nodes[1].Retry.MaxAttempts = 7
	b.Edges[0].Condition = "output.ok"
	d := inspect.Diff(a, b)
	var got []string
	for _, c := range d.ChainChanges {
		got = append(got, "chain "+c.Field+": "+string(c.Old)+" -> "+string(c.New))
	}
	for _, n := range d.NodesChanged {
		for _, c := range n.Changes {
			got = append(got, n.NodeID+" "+c.Field+": "+string(c.Old)+" -> "+string(c.New))
		}
	}
	for _, e := range d.EdgesChanged {
		for _, c := range e.Changes {
			got = append(got, e.EdgeID+" "+c.Field+": "+string(c.Old)+" -> "+string(c.New))
		}
	}
	want := []string{
		`chain description: "d" -> "new words"`,
		`a input_map.added:  -> "a.output"`,
		`a input_map.total: "input.x > 1" -> "input.x >= 2 && input.z"`,
		`a label:  -> "Fetch"`,
		`b retry: {"max_attempts":2} -> {"max_attempts":7}`,
		`e1 condition:  -> "output.ok"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
