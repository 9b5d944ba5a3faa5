package chain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
)

const patchBase = `{"name":"p","description":"d","nodes":[
 {"node_id":"a","kind":"tool","name":"echo","label":"A"},
 {"node_id":"b","kind":"tool","name":"echo","label":"B"},
 {"node_id":"c","kind":"tool","name":"echo","label":"C"}],
 "edges":[{"id":"a->b","source":"a","target":"b"},{"id":"b->c","source":"b","target":"c"}]}`

// A patch gives the same chain as the whole edited document decoded.
func TestApplyPatchMatchesFullDocument(t *testing.T) {
	cases := []struct{ name, patch, full string }{
		{"edit in place",
			`{"nodes":[{"node_id":"b","kind":"tool","name":"echo","label":"B2","position":{"x":1,"y":2}}],"expect":{"nodes":3,"edges":2}}`,
			`{"name":"p","description":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo","label":"A"},{"node_id":"b","kind":"tool","name":"echo","label":"B2","position":{"x":1,"y":2}},{"node_id":"c","kind":"tool","name":"echo","label":"C"}],
			 "edges":[{"id":"a->b","source":"a","target":"b"},{"id":"b->c","source":"b","target":"c"}]}`},
		{"add and remove",
			`{"nodes":[{"node_id":"d","kind":"tool","name":"echo"}],"remove_nodes":["c"],"edges":[{"id":"b->d","source":"b","target":"d","label":"x"}],"remove_edges":["b->c"]}`,
			`{"name":"p","description":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo","label":"A"},{"node_id":"b","kind":"tool","name":"echo","label":"B"},{"node_id":"d","kind":"tool","name":"echo"}],
			 "edges":[{"id":"a->b","source":"a","target":"b"},{"id":"b->d","source":"b","target":"d","label":"x"}]}`},
		{"chain fields replaced, unnamed fields cleared",
			`{"chain":{"name":"q","entry_node":"b","sample_input":{"k":1}}}`,
			`{"name":"q","entry_node":"b","sample_input":{"k":1},"nodes":[{"node_id":"a","kind":"tool","name":"echo","label":"A"},{"node_id":"b","kind":"tool","name":"echo","label":"B"},{"node_id":"c","kind":"tool","name":"echo","label":"C"}],
			 "edges":[{"id":"a->b","source":"a","target":"b"},{"id":"b->c","source":"b","target":"c"}]}`},
		{"successor field becomes an edge",
			`{"nodes":[{"node_id":"c","kind":"tool","name":"echo","next_node":"a"}]}`,
			`{"name":"p","description":"d","nodes":[{"node_id":"a","kind":"tool","name":"echo","label":"A"},{"node_id":"b","kind":"tool","name":"echo","label":"B"},{"node_id":"c","kind":"tool","name":"echo","next_node":"a"}],
			 "edges":[{"id":"a->b","source":"a","target":"b"},{"id":"b->c","source":"b","target":"c"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustDecode(t, patchBase)
			if err := chain.ApplyPatch(c, []byte(tc.patch), chain.Limits{}); err != nil {
				t.Fatal(err)
			}
			want := mustDecode(t, tc.full)
			got, _ := json.Marshal(c)
			exp, _ := json.Marshal(want)
			if !reflect.DeepEqual(c, want) {
				t.Fatalf("patched:\n%s\nwant:\n%s", got, exp)
			}
		})
	}
}

// A bad patch is refused with the place it is wrong at, and a patch made
// against another document is refused rather than applied.
func TestApplyPatchErrors(t *testing.T) {
	cases := []struct{ patch, path, msg string }{
		{`{"nodes":[{"node_id":"b","kind":"tool","nmae":"echo"}]}`, `nodes[0] "b".nmae`, "unknown field"},
		{`{"nodes":[{"node_id":"b","kind":"robot"}]}`, `nodes[0] "b".kind`, "unknown kind"},
		{`{"nodes":[{"node_id":"x","kind":"tool"},{"node_id":"x","kind":"tool"}]}`, `nodes[1] "x".node_id`, "duplicate node id"},
		{`{"remove_nodes":["zz"]}`, "remove_nodes[0]", `no node "zz"`},
		{`{"remove_nodes":["a","a"]}`, "remove_nodes[1]", "listed twice"},
		{`{"nodes":[{"node_id":"a","kind":"tool"}],"remove_nodes":["a"]}`, `nodes[0] "a".node_id`, "also in remove_nodes"},
		{`{"edges":[{"source":"a","target":"c"}]}`, "edges[0].id", "is required in a patch"},
		{`{"remove_edges":["c->a"]}`, "remove_edges[0]", `no edge "c->a"`},
		{`{"chain":{"name":"q","nodes":[]}}`, "chain.nodes", "own nodes"},
		{`{"chain":{"name":"q","timeout":-1}}`, "chain.timeout", "≥ 0"},
		{`{"nodes":[{"node_id":"b","kind":"tool"}],"expect":{"nodes":4,"edges":2}}`, "expect", "made against another document"},
		{`{"node":[]}`, "node", "unknown field"},
		{`null`, "", "want a patch object"},
		{`{"nodes":[{"node_id":"n1","kind":"tool"},{"node_id":"n2","kind":"tool"}]}`, "nodes", "over the limit of 4"},
	}
	for _, tc := range cases {
		c := mustDecode(t, patchBase)
		err := chain.ApplyPatch(c, []byte(tc.patch), chain.Limits{MaxNodes: 4})
		var de *chain.DecodeError
		if err == nil || !errors.As(err, &de) {
			t.Errorf("%s: want a DecodeError, got %v", tc.patch, err)
			continue
		}
		if de.Path != tc.path || !strings.Contains(de.Msg, tc.msg) {
			t.Errorf("%s: got %q: %q, want %q: …%s…", tc.patch, de.Path, de.Msg, tc.path, tc.msg)
		}
	}
}

func mustDecode(t testing.TB, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}
