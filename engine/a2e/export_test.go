package a2e_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
)

func exportDecode(t *testing.T, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, doc)
	}
	return c
}

func TestExportA2ERoundTrip(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"linear": `{"name":"lin","description":"dropped","entry_node":"a","timeout":12,"nodes":[
			{"node_id":"a","kind":"tool","name":"echo","input":{"x":1}},
			{"node_id":"b","kind":"tool","name":"echo","input_map":{"y":"a.output.x"},"retry":{"max_attempts":3},"label":"B","position":{"x":10,"y":20}},
			{"node_id":"c","kind":"skill","name":"sub","on_error":"skip"}],
			"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`,
		"branch": `{"name":"br","nodes":[
			{"node_id":"check","kind":"branch","condition":"input.n > ` + "`0`" + `"},
			{"node_id":"yes","kind":"tool","name":"echo"},
			{"node_id":"no","kind":"tool","name":"echo"},
			{"node_id":"after","kind":"tool","name":"echo"}],
			"edges":[{"source":"check","target":"yes","label":"true"},{"source":"check","target":"no","label":"false"},{"source":"check","target":"after"}]}`,
		"map and handler": `{"name":"mp","nodes":[
			{"node_id":"batch","kind":"map","items_path":"input.files","map_node":"each","on_error":"fix"},
			{"node_id":"each","kind":"tool","name":"echo"},
			{"node_id":"fix","kind":"tool","name":"echo"},
			{"node_id":"proc1","kind":"proc","config":{"argv":["true"]}}],
			"edges":[{"source":"batch","target":"proc1"}]}`,
		"a2e seed request": `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`,
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			c := exportDecode(t, doc)
			req, err := a2e.Export(c)
			if err != nil {
				t.Fatalf("Export: %v", err)
			}
			if req.Type != chain.TypeRequest || req.Version != chain.WireVersion || req.ID == "" || req.Ts == 0 || req.ChainID != c.Name {
				t.Fatalf("bad envelope: %+v", req)
			}
			b, err := json.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			back, got, err := chain.DecodeDocument(b, chain.Limits{})
			if err != nil {
				t.Fatalf("decode exported: %v\n%s", err, b)
			}
			if got == nil {
				t.Fatalf("exported document is not a chain/req: %s", b)
			}
			want := c.Clone()
			want.Description = "" // A2E has no description
			if d := inspect.Diff(want, back); !d.Empty() {
				t.Fatalf("round trip changed the chain: %+v\n%s", d, b)
			}
			// The successor fields are on the wire, never edges.
			var raw map[string]any
			_ = json.Unmarshal(b, &raw)
			if _, ok := raw["edges"]; ok {
				t.Fatalf("A2E export has edges: %s", b)
			}
		})
	}
}

func TestExportA2ESuccessorFields(t *testing.T) {
	t.Parallel()
	c := exportDecode(t, `{"name":"br","nodes":[
		{"node_id":"a","kind":"tool","name":"echo"},
		{"node_id":"check","kind":"branch","condition":"output"},
		{"node_id":"yes","kind":"tool","name":"echo"},
		{"node_id":"no","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"check"},{"source":"check","target":"yes","label":"true"},{"source":"check","target":"no","label":"false"}]}`)
	req, err := a2e.Export(c)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []map[string]any
	for _, r := range req.Nodes {
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, m)
	}
	if nodes[0]["next_node"] != "check" || nodes[1]["true_node"] != "yes" || nodes[1]["false_node"] != "no" {
		t.Fatalf("successors not reconstructed: %v", nodes)
	}
	if _, ok := nodes[2]["next_node"]; ok {
		t.Fatalf("terminal node has a next_node: %v", nodes[2])
	}
}

func TestExportA2ERefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc string
		want      a2e.ExportError
	}{
		{"conditional edge", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"id":"e1","source":"a","target":"b","condition":"output"}]}`, a2e.ExportError{EdgeID: "e1", Field: "condition"}},
		{"loop edge", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"id":"back","source":"b","target":"a","max_iterations":3}]}`, a2e.ExportError{EdgeID: "back", Field: "max_iterations"}},
		{"two successors", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"a","target":"c"}]}`, a2e.ExportError{NodeID: "a", EdgeID: "a->c", Field: "next_node"}},
		{"routing all", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"}]}`, a2e.ExportError{NodeID: "a", Field: "routing"}},
		{"parallel kind", `{"name":"x","nodes":[{"node_id":"p","kind":"parallel","branches":["b"]},{"node_id":"b","kind":"tool","name":"echo"}]}`, a2e.ExportError{NodeID: "p", Field: "kind"}},
		{"condition kind", `{"name":"x","nodes":[{"node_id":"c","kind":"condition","cases":[{"handle":"h","when":"true"}]}]}`, a2e.ExportError{NodeID: "c", Field: "kind"}},
		{"interrupt kind", `{"name":"x","nodes":[{"node_id":"i","kind":"interrupt"}]}`, a2e.ExportError{NodeID: "i", Field: "kind"}},
		{"label on a tool edge", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"id":"e","source":"a","target":"b","label":"ok"}]}`, a2e.ExportError{EdgeID: "e", Field: "label"}},
		{"default edge", `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"id":"e","source":"a","target":"b","default":true}]}`, a2e.ExportError{EdgeID: "e", Field: "default"}},
		{"strict routing", `{"name":"x","strict_routing":true,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, a2e.ExportError{Field: "strict_routing"}},
		{"empty chain", `{"name":"x","nodes":[]}`, a2e.ExportError{Field: "nodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a2e.Export(exportDecode(t, tt.doc))
			var ee *a2e.ExportError
			if !errors.As(err, &ee) {
				t.Fatalf("want *ExportError, got %v", err)
			}
			if ee.NodeID != tt.want.NodeID || ee.EdgeID != tt.want.EdgeID || ee.Field != tt.want.Field {
				t.Fatalf("got %+v, want node %q edge %q field %q", ee, tt.want.NodeID, tt.want.EdgeID, tt.want.Field)
			}
			if ee.Msg == "" || !strings.Contains(ee.Error(), "cannot be expressed in A2E") {
				t.Fatalf("message: %q", ee.Error())
			}
		})
	}
}
