package chain

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// a2eLinearRequest is A2E's "Simple Linear Chain" wire example, verbatim.
const a2eLinearRequest = `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`

// doc wraps node and edge JSON into a studio chain document.
func doc(nodes string, edges ...string) string {
	s := `{"name":"t","nodes":[` + nodes + `]`
	if len(edges) > 0 {
		s += `,"edges":[` + strings.Join(edges, ",") + `]`
	}
	return s + `}`
}

// req wraps node JSON into an A2E chain/req message; extra is spliced in as
// further top-level fields.
func req(nodes, extra string) string {
	s := `{"type":"chain/req","id":"r1","version":"1.0","ts":1,"session_id":"s","chain_id":"c","entry_node":"a","nodes":[` + nodes + `]`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const nodeA = `{"node_id":"a","kind":"tool","name":"echo"}`
const nodeB = `{"node_id":"b","kind":"tool","name":"echo"}`

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 20)
	cases := []struct {
		name   string
		doc    string
		lim    Limits
		path   string
		phrase string
	}{
		// JSON shape
		{"malformed", "{\"nodes\": [],\n  \"name\": tru}", Limits{}, "", "malformed JSON at line 2, column 14"},
		{"malformed in node", "{\"nodes\": [\n{\"node_id\": \"a\" \"kind\": \"tool\"}]}", Limits{}, "", "malformed JSON at line 2, column 17"},
		{"truncated", `{"nodes":[{"node_id":"a","kind":"tool"}`, Limits{}, "", "truncated JSON"},
		{"truncated string", `{"nodes":[{"node_id":"a`, Limits{}, "", "truncated JSON"},
		{"empty document", ``, Limits{}, "", "truncated JSON"},
		{"trailing data", doc(nodeA) + ` x`, Limits{}, "", "after top-level value"},
		{"second document", doc(nodeA) + ` {}`, Limits{}, "", "after top-level value"},
		{"top-level array", `[]`, Limits{}, "", "want an object"},
		{"top-level null", `null`, Limits{}, "", "want an object"},
		{"top-level string", `"nodes"`, Limits{}, "", "want an object"},
		{"nested 10000 deep in input", doc(`{"node_id":"a","kind":"tool","input":{"x":` + nested(10_000) + `}}`), Limits{}, "", "exceeded max depth"},
		{"nested 10001 deep at top", nested(10_001), Limits{}, "", "exceeded max depth"},
		{"nested objects 10001 deep", strings.Repeat(`{"a":`, 10_001) + "1" + strings.Repeat("}", 10_001), Limits{}, "", "exceeded max depth"},
		{"nested 10000 deep at top", nested(10_000), Limits{}, "", "want an object"},
		{"malformed after multibyte", "{\"name\": \"日本\" x, \"nodes\": []}", Limits{}, "", "line 1, column 15"},
		{"invalid UTF-8", "{\"name\":\"ab\xffcd\",\"nodes\":[]}", Limits{}, "", "not valid UTF-8 (first bad byte at offset 11)"},
		{"invalid UTF-8 truncated rune", "{\"nodes\":[],\"name\":\"\xe2\x82\"}", Limits{}, "", "offset 20"},

		// wrong types
		{"retry.max_attempts string", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":"3"}}`), Limits{}, `nodes[0] "a".retry.max_attempts`, "wrong type: got JSON string, want an integer"},
		{"retry.max_attempts fraction", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":1.5}}`), Limits{}, `nodes[0] "a".retry.max_attempts`, "want an integer"},
		{"node_id number", doc(`{"node_id":7,"kind":"tool"}`), Limits{}, `nodes[0].node_id`, "wrong type: got JSON number, want a string"},
		{"kind array", doc(`{"node_id":"a","kind":["tool"]}`), Limits{}, `nodes[0] "a".kind`, "want a string"},
		{"input not object", doc(`{"node_id":"a","kind":"tool","input":[1]}`), Limits{}, `nodes[0] "a".input`, "want an object"},
		{"input_map value not string", doc(`{"node_id":"a","kind":"tool","input_map":{"x":1}}`), Limits{}, `nodes[0] "a".input_map`, "wrong type"},
		{"timeout string", doc(nodeA)[:len(doc(nodeA))-1] + `,"timeout":"10"}`, Limits{}, "timeout", "want a number"},
		{"strict_routing string", `{"strict_routing":"yes","nodes":[]}`, Limits{}, "strict_routing", "want true or false"},
		{"nodes object", `{"nodes":{}}`, Limits{}, "nodes", "want an array"},
		{"node not object", `{"nodes":[1]}`, Limits{}, "nodes[0]", "want an object"},
		{"edges not array", `{"nodes":[],"edges":"a->b"}`, Limits{}, "edges", "want an array"},
		{"edge max_iterations string", doc(nodeA+","+nodeB, `{"source":"a","target":"b","max_iterations":"5"}`), Limits{}, "edges[0].max_iterations", "want an integer"},
		{"position.x string", doc(`{"node_id":"a","kind":"tool","position":{"x":"1","y":0}}`), Limits{}, `nodes[0] "a".position.x`, "want a number"},
		{"type number", `{"type":5,"nodes":[]}`, Limits{}, "type", "want a string"},

		// unknown fields
		{"unknown top-level field", `{"nodes":[],"nodez":[]}`, Limits{}, "nodez", "unknown field"},
		{"unknown node field", doc(`{"node_id":"a","kind":"tool","colour":"red"}`), Limits{}, `nodes[0] "a".colour`, "unknown field"},
		{"unknown edge field", doc(nodeA+","+nodeB, `{"source":"a","target":"b","weight":2}`), Limits{}, "edges[0].weight", "unknown field"},
		{"unknown retry field", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":3,"jitter":true}}`), Limits{}, `nodes[0] "a".retry.jitter`, "unknown field"},
		{"unknown case field", doc(`{"node_id":"a","kind":"condition","cases":[{"handle":"x","when":"true"},{"handle":"y","when":"true","else":1}]}`), Limits{}, `nodes[0] "a".cases[1].else`, "unknown field"},
		{"unknown position field", doc(`{"node_id":"a","kind":"tool","position":{"x":1,"y":2,"z":3}}`), Limits{}, `nodes[0] "a".position.z`, "unknown field"},
		{"field name in wrong case", doc(`{"node_id":"a","Kind":"tool"}`), Limits{}, `nodes[0] "a".Kind`, `case-sensitive: did you mean "kind"`},
		{"top-level name in wrong case", `{"NODES":[]}`, Limits{}, "NODES", "case-sensitive"},
		{"unknown request field", req(nodeA, `"priority":1`), Limits{}, "priority", "unknown field"},
		{"unknown field in request node", req(`{"node_id":"a","kind":"tool","extra":1}`, ""), Limits{}, `nodes[0] "a".extra`, "unknown field"},

		// required and enumerated values
		{"missing nodes", `{"name":"x"}`, Limits{}, "nodes", "is required"},
		{"null nodes", `{"nodes":null}`, Limits{}, "nodes", "is required"},
		{"missing node_id", doc(`{"kind":"tool"}`), Limits{}, "nodes[0].node_id", "is required"},
		{"empty node_id", doc(`{"node_id":"","kind":"tool"}`), Limits{}, "nodes[0].node_id", "is required"},
		{"missing kind", doc(`{"node_id":"a"}`), Limits{}, `nodes[0] "a".kind`, "is required (one of tool, skill"},
		{"unknown kind", doc(`{"node_id":"a","kind":"lambda"}`), Limits{}, `nodes[0] "a".kind`, `unknown kind "lambda" (one of tool, skill, proc, branch, condition, map, parallel, interrupt, agent)`},
		{"case missing when", doc(`{"node_id":"a","kind":"condition","cases":[{"handle":"x"}]}`), Limits{}, `nodes[0] "a".cases[0].when`, "is required"},
		{"case missing handle", doc(`{"node_id":"a","kind":"condition","cases":[{"when":"true"}]}`), Limits{}, `nodes[0] "a".cases[0].handle`, "is required"},
		{"edge missing source", doc(nodeA, `{"target":"a"}`), Limits{}, `edges[0] "" -> "a".source`, "is required"},
		{"edge missing target", doc(nodeA, `{"source":"a"}`), Limits{}, `edges[0] "a" -> "".target`, "is required"},
		{"bad routing", doc(`{"node_id":"a","kind":"tool","routing":"any"}`), Limits{}, `nodes[0] "a".routing`, `unknown routing "any" (first or all)`},
		{"bad dispatch", doc(`{"node_id":"a","kind":"tool","dispatch":"serial"}`), Limits{}, `nodes[0] "a".dispatch`, `unknown dispatch "serial"`},
		{"bad parallel_failure_mode", doc(`{"node_id":"a","kind":"parallel","parallel_failure_mode":"all_or_nothing"}`), Limits{}, `nodes[0] "a".parallel_failure_mode`, "continue, fail_fast or any_success"},
		{"bad on_max_reached", doc(nodeA, `{"source":"a","target":"a","max_iterations":3,"on_max_reached":"stop"}`), Limits{}, `edges[0] "a" -> "a".on_max_reached`, `unknown value "stop" (error or continue)`},
		{"bad backoff", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":2,"backoff":"linear"}}`), Limits{}, `nodes[0] "a".retry.backoff`, `unknown backoff "linear" (fixed or exponential)`},
		{"retry.max_attempts 0", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":0}}`), Limits{}, `nodes[0] "a".retry.max_attempts`, "must be between 1 and 100, got 0"},
		{"retry.max_attempts missing", doc(`{"node_id":"a","kind":"tool","retry":{"backoff":"fixed"}}`), Limits{}, `nodes[0] "a".retry.max_attempts`, "must be between 1 and 100"},
		{"retry.max_attempts 101", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":101}}`), Limits{}, `nodes[0] "a".retry.max_attempts`, "got 101"},
		{"retry delay negative", doc(`{"node_id":"a","kind":"tool","retry":{"max_attempts":2,"initial_delay_seconds":-1}}`), Limits{}, `nodes[0] "a".retry.initial_delay_seconds`, "between 0 and 3600"},
		{"negative node timeout", doc(`{"node_id":"a","kind":"tool","timeout":-1}`), Limits{}, `nodes[0] "a".timeout`, "≥ 0"},
		{"negative chain timeout", `{"timeout":-0.5,"nodes":[]}`, Limits{}, "timeout", "≥ 0"},
		{"negative max_concurrency", `{"max_concurrency":-1,"nodes":[]}`, Limits{}, "max_concurrency", "≥ 0"},
		{"negative max_depth", `{"max_depth":-1,"nodes":[]}`, Limits{}, "max_depth", "≥ 1"},
		{"negative max_iterations", doc(nodeA, `{"source":"a","target":"a","max_iterations":-1}`), Limits{}, `edges[0] "a" -> "a".max_iterations`, "≥ 1"},
		{"unknown type", `{"type":"chain/resp","nodes":[]}`, Limits{}, "type", `unknown message type "chain/resp"`},

		// ids
		{"duplicate node ids", doc(nodeA + "," + nodeB + "," + nodeA), Limits{}, `nodes[2] "a".node_id`, `duplicate node id "a" (also nodes[0])`},
		{"duplicate edge ids", doc(nodeA+","+nodeB, `{"id":"e","source":"a","target":"b"}`, `{"id":"e","source":"b","target":"a"}`), Limits{}, "edges[1].id", `duplicate edge id "e" (also edges[0])`},
		{"control character in node id", doc(`{"node_id":"a\u0001b","kind":"tool"}`), Limits{}, `nodes[0] "a\x01b".node_id`, "control characters"},
		{"newline in node id", doc(`{"node_id":"a\nb","kind":"tool"}`), Limits{}, `nodes[0] "a\nb".node_id`, "control characters"},

		// limits
		{"document size", doc(nodeA), Limits{MaxDocumentBytes: 20}, "", "over the limit of 20"},
		{"node count", doc(nodeA + "," + nodeB), Limits{MaxNodes: 1}, "nodes", "2 nodes, over the limit of 1"},
		{"request node count", req(nodeA+","+nodeB, ""), Limits{MaxNodes: 1}, "nodes", "2 nodes, over the limit of 1"},
		{"edge count", doc(nodeA+","+nodeB, `{"source":"a","target":"b"}`, `{"source":"b","target":"a"}`), Limits{MaxEdges: 1}, "edges", "2 edges, over the limit of 1"},
		{"node id length", doc(`{"node_id":"` + long + `","kind":"tool"}`), Limits{MaxIDLength: 10}, `nodes[0] "` + long + `".node_id`, "is 20 bytes, over the limit of 10"},
		{"edge id length", doc(nodeA+","+nodeB, `{"id":"`+long+`","source":"a","target":"b"}`), Limits{MaxIDLength: 10}, `edges[0] "` + long + `".id`, "is 20 bytes, over the limit of 10"},
		{"edge target length", doc(nodeA, `{"source":"a","target":"`+long+`"}`), Limits{MaxIDLength: 10}, `edges[0] "a" -> "` + long + `".target`, "over the limit of 10"},
		{"next_node length", doc(`{"node_id":"a","kind":"tool","next_node":"` + long + `"}`), Limits{MaxIDLength: 10}, `nodes[0] "a".next_node`, "over the limit of 10"},
		{"entry_node length", `{"entry_node":"` + long + `","nodes":[]}`, Limits{MaxIDLength: 10}, "entry_node", "over the limit of 10"},
		{"request entry_node length", `{"type":"chain/req","entry_node":"` + long + `","nodes":[` + nodeA + `]}`, Limits{MaxIDLength: 10}, "entry_node", "over the limit of 10"},
		{"branches length", doc(`{"node_id":"a","kind":"parallel","branches":["b","` + long + `"]}`), Limits{MaxIDLength: 10}, `nodes[0] "a".branches[1]`, "over the limit of 10"},
		{"condition length", doc(`{"node_id":"a","kind":"branch","condition":"` + long + `"}`), Limits{MaxExpressionLength: 10}, `nodes[0] "a".condition`, "expression is 20 bytes, over the limit of 10"},
		{"items_path length", doc(`{"node_id":"a","kind":"map","items_path":"` + long + `"}`), Limits{MaxExpressionLength: 10}, `nodes[0] "a".items_path`, "over the limit of 10"},
		{"input_map length", doc(`{"node_id":"a","kind":"tool","input_map":{"k":"` + long + `"}}`), Limits{MaxExpressionLength: 10}, `nodes[0] "a".input_map.k`, "over the limit of 10"},
		{"set_state length", doc(`{"node_id":"a","kind":"tool","set_state":{"k":"` + long + `"}}`), Limits{MaxExpressionLength: 10}, `nodes[0] "a".set_state.k`, "over the limit of 10"},
		{"case when length", doc(`{"node_id":"a","kind":"condition","cases":[{"handle":"h","when":"` + long + `"}]}`), Limits{MaxExpressionLength: 10}, `nodes[0] "a".cases[0].when`, "over the limit of 10"},
		{"edge condition length", doc(nodeA+","+nodeB, `{"source":"a","target":"b","condition":"`+long+`"}`), Limits{MaxExpressionLength: 10}, `edges[0] "a" -> "b".condition`, "over the limit of 10"},
	}
	for _, r := range ReservedNames {
		cases = append(cases, struct {
			name   string
			doc    string
			lim    Limits
			path   string
			phrase string
		}{"reserved id " + r, doc(`{"node_id":"` + r + `","kind":"tool"}`), Limits{}, `nodes[0] "` + r + `".node_id`, "is reserved for the expression context"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode([]byte(tc.doc), tc.lim)
			if err == nil {
				t.Fatalf("want an error, got chain %+v", c)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("want *DecodeError, got %T: %v", err, err)
			}
			if de.Path != tc.path {
				t.Errorf("path = %q, want %q (error: %v)", de.Path, tc.path, err)
			}
			if !strings.Contains(de.Msg, tc.phrase) {
				t.Errorf("message = %q, want it to contain %q", de.Msg, tc.phrase)
			}
			if de.Code() != CodeDecode {
				t.Errorf("code = %q, want %q", de.Code(), CodeDecode)
			}
		})
	}
}

func TestDecodeValidDocuments(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]string{
		"empty nodes": `{"nodes":[]}`,
		"every field": `{"name":"n","description":"d","entry_node":"a","strict_routing":true,"strict_conditions":true,"timeout":1.5,"max_concurrency":2,"max_depth":3,
			"nodes":[{"node_id":"a","kind":"condition","name":"x","input":{"k":[1,{"z":null}]},"input_map":{"k":"input.k"},"condition":"c","items_path":"p","map_node":"b",
			"on_error":"skip","label":"L","description":"D","timeout":2,"retry":{"max_attempts":3,"backoff":"exponential","initial_delay_seconds":0.5},"routing":"all","dispatch":"sequential",
			"set_state":{"s":"output"},"cases":[{"handle":"h","when":"true"}],"branches":["b"],"parallel_failure_mode":"fail_fast","reachable":false,"position":{"x":1,"y":-2},"config":{"c":1}},
			{"node_id":"b","kind":"agent"}],
			"edges":[{"id":"e1","source":"a","target":"b","label":"h","condition":"x","default":true,"max_iterations":2,"on_max_reached":"continue"}]}`,
		"null optional fields": `{"name":null,"nodes":[{"node_id":"a","kind":"tool","retry":null,"position":null,"input":null}],"edges":null}`,
		"unicode ids":          doc(`{"node_id":"ünï","kind":"tool","next_node":"日本"},{"node_id":"日本","kind":"tool"}`),
		"long auto edge id":    doc(`{"node_id":"abcdefghij","kind":"tool","next_node":"klmnopqrst"},{"node_id":"klmnopqrst","kind":"tool"}`),
	} {
		t.Run(name, func(t *testing.T) {
			lim := Limits{}
			if name == "long auto edge id" {
				lim.MaxIDLength = 10
			}
			c, err := Decode([]byte(d), lim)
			if err != nil {
				t.Fatal(err)
			}
			// What Decode returns must decode again, under the same limits, to the same chain.
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := Decode(b, lim)
			if err != nil {
				t.Fatalf("re-decoding %s: %v", b, err)
			}
			if !reflect.DeepEqual(c, c2) {
				t.Fatalf("round trip changed the chain:\n%+v\n%+v", c, c2)
			}
		})
	}
}

func TestDecodeEdgeIDOverLimitUnlessAuto(t *testing.T) {
	t.Parallel()
	lim := Limits{MaxIDLength: 4}
	nodes := `{"node_id":"abcd","kind":"tool"},{"node_id":"efgh","kind":"tool"}`
	for _, id := range []string{"abcd->efgh", "abcd->efgh#2", "abcd->efgh#17"} {
		if _, err := Decode([]byte(doc(nodes, `{"id":"`+id+`","source":"abcd","target":"efgh"}`)), lim); err != nil {
			t.Errorf("auto-form id %q: %v", id, err)
		}
	}
	for _, id := range []string{"abcd->efgh#1", "abcd->efgh#02", "abcd->efgh#x", "abcd->efgh#", "efgh->abcd", "abcd->efgh2"} {
		if _, err := Decode([]byte(doc(nodes, `{"id":"`+id+`","source":"abcd","target":"efgh"}`)), lim); err == nil {
			t.Errorf("id %q is over the limit and not the edge's auto id, want an error", id)
		}
	}
}

func TestDecodeErrorMessageIsRuneSafe(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("é", 40) // 80 bytes: the path truncates it to 64
	_, err := Decode([]byte(doc(`{"node_id":"`+id+`","kind":"nope"}`)), Limits{})
	if err == nil {
		t.Fatal("want an error")
	}
	if !strings.Contains(err.Error(), strings.Repeat("é", 32)+"…") {
		t.Fatalf("path should hold 32 whole runes and an ellipsis: %v", err)
	}
	if !json.Valid([]byte(`"` + strings.ReplaceAll(err.Error(), `"`, `'`) + `"`)) {
		t.Fatalf("error is not valid UTF-8: %q", err)
	}
}

// --- A2E --------------------------------------------------------------------

func TestA2ELinearExample(t *testing.T) {
	t.Parallel()
	c, r, err := DecodeDocument([]byte(a2eLinearRequest), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Type != TypeRequest || r.ID != "c1" || r.Version != "1.0" || r.Ts != 1716123456.789 || r.SessionID != "s1" || r.ChainID != "abc123" || !r.IsStreaming() {
		t.Fatalf("request = %+v", r)
	}
	if r.Timeout == nil || *r.Timeout != 300 || c.Timeout != 300 {
		t.Fatalf("timeout: request %v, chain %v", r.Timeout, c.Timeout)
	}
	if c.Name != "abc123" || c.EntryNode != "read" || len(c.Nodes) != 2 {
		t.Fatalf("chain = %+v", c)
	}
	want := []Edge{{ID: "read->summarize", Source: "read", Target: "summarize"}}
	if !reflect.DeepEqual(c.Edges, want) {
		t.Fatalf("edges = %+v, want %+v", c.Edges, want)
	}
	if c.Nodes[0].NextNode != "" {
		t.Fatalf("next_node should be normalised away, got %q", c.Nodes[0].NextNode)
	}
	if got := c.Nodes[1].InputMap["text"]; got != "read.output" {
		t.Fatalf("input_map = %v", c.Nodes[1].InputMap)
	}
	if c.Nodes[0].Input["path"] != "/data/input.txt" || c.Nodes[0].OnError != "abort" || c.Nodes[1].Kind != KindSkill {
		t.Fatalf("nodes = %+v", c.Nodes)
	}
}

func TestA2EBranchBecomesLabelledEdges(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(req(`{"node_id":"a","kind":"branch","condition":"x","true_node":"yes","false_node":"no"},{"node_id":"yes","kind":"tool"},{"node_id":"no","kind":"tool"}`, "")), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{
		{ID: "a->yes", Source: "a", Target: "yes", Label: "true"},
		{ID: "a->no", Source: "a", Target: "no", Label: "false"},
	}
	if !reflect.DeepEqual(c.Edges, want) {
		t.Fatalf("edges = %+v, want %+v", c.Edges, want)
	}
	if n := c.Nodes[0]; n.TrueNode != "" || n.FalseNode != "" {
		t.Fatalf("successor fields should be cleared: %+v", n)
	}
}

func TestA2EDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		_, r, err := DecodeDocument([]byte(`{"type":"chain/req","nodes":[`+nodeA+`]}`), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ID) != 36 || r.Version != WireVersion || r.Ts <= 0 || len(r.ChainID) != 8 || !r.IsStreaming() {
			t.Fatalf("defaults not applied: %+v", r)
		}
	})
	for _, tc := range []struct{ name, doc, path, phrase string }{
		{"version", req(nodeA, `"version":"2.0"`), "version", `unsupported protocol version "2.0"`},
		{"type", `{"type":"chain/event","nodes":[` + nodeA + `]}`, "type", `unknown message type "chain/event"`},
		{"empty nodes", `{"type":"chain/req","nodes":[]}`, "nodes", "at least one node"},
		{"missing nodes", `{"type":"chain/req"}`, "nodes", "at least one node"},
		{"negative timeout", req(nodeA, `"timeout":-1`), "timeout", "≥ 0"},
		{"streaming string", req(nodeA, `"streaming":"yes"`), "streaming", "want true or false"},
		{"duplicate node", req(nodeA+","+nodeA, ""), `nodes[1] "a".node_id`, "duplicate node id"},
		{"studio field in request", req(nodeA, `"edges":[]`), "edges", "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc), Limits{})
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("want *DecodeError, got %v", err)
			}
			if de.Path != tc.path || !strings.Contains(de.Msg, tc.phrase) {
				t.Fatalf("got %q: %q, want %q: …%q…", de.Path, de.Msg, tc.path, tc.phrase)
			}
		})
	}
}

// --- Normalize -----------------------------------------------------------------

func TestNormalizeNextNodeNotDuplicated(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(doc(`{"node_id":"a","kind":"tool","next_node":"b"},`+nodeB, `{"source":"a","target":"b"}`)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{ID: "a->b", Source: "a", Target: "b"}}
	if !reflect.DeepEqual(c.Edges, want) {
		t.Fatalf("edges = %+v, want %+v", c.Edges, want)
	}
	// The A2E form of the same thing.
	c, err = Decode([]byte(req(`{"node_id":"a","kind":"tool","next_node":"b"},`+nodeB, "")), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Edges, want) {
		t.Fatalf("A2E edges = %+v, want %+v", c.Edges, want)
	}
}

func TestNormalizeConditionalEdgeDoesNotAbsorbNextNode(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(doc(`{"node_id":"a","kind":"tool","next_node":"b"},`+nodeB, `{"source":"a","target":"b","condition":"x"}`)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{
		{ID: "a->b", Source: "a", Target: "b", Condition: "x"},
		{ID: "a->b#2", Source: "a", Target: "b"},
	}
	if !reflect.DeepEqual(c.Edges, want) {
		t.Fatalf("edges = %+v, want %+v", c.Edges, want)
	}
}

func TestNormalizeEdgeIDs(t *testing.T) {
	t.Parallel()
	c := &Chain{
		Nodes: []Node{{ID: "a", Kind: KindTool}, {ID: "b", Kind: KindTool}},
		Edges: []Edge{
			{Source: "a", Target: "b", Label: "x"},
			{Source: "a", Target: "b", Label: "y"},
			{ID: "a->b#3", Source: "b", Target: "a"}, // an explicit id in the auto form is kept
			{Source: "a", Target: "b", Label: "z"},
			{Source: "b", Target: "a"},
		},
	}
	if err := Normalize(c); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range c.Edges {
		got = append(got, e.ID)
	}
	want := []string{"a->b", "a->b#2", "a->b#3", "a->b#4", "b->a"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %q, want %q", got, want)
	}
}

func TestNormalizeIdempotent(t *testing.T) {
	t.Parallel()
	c := &Chain{
		Nodes: []Node{
			{ID: "a", Kind: KindBranch, Condition: "x", TrueNode: "b", FalseNode: "c"},
			{ID: "b", Kind: KindTool, NextNode: "c"},
			{ID: "c", Kind: KindTool, NextNode: "a"},
		},
		Edges: []Edge{{Source: "b", Target: "c"}, {Source: "a", Target: "b", Condition: "y"}},
	}
	if err := Normalize(c); err != nil {
		t.Fatal(err)
	}
	once := c.Clone()
	if len(once.Edges) != 5 {
		t.Fatalf("want 5 edges after the first pass, got %+v", once.Edges)
	}
	if err := Normalize(c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(once, c) {
		t.Fatalf("second Normalize changed the chain:\n%+v\n%+v", once.Edges, c.Edges)
	}
}

func TestNormalizeDuplicateExplicitEdgeID(t *testing.T) {
	t.Parallel()
	c := &Chain{Edges: []Edge{{ID: "e", Source: "a", Target: "b"}, {ID: "e", Source: "b", Target: "a"}}}
	err := Normalize(c)
	var de *DecodeError
	if !errors.As(err, &de) || de.Path != "edges[1].id" {
		t.Fatalf("want a DecodeError at edges[1].id, got %v", err)
	}
}

func TestDecodeSampleInput(t *testing.T) {
	t.Parallel()
	c, err := Decode([]byte(`{"name":"t","sample_input":{"name":"Ada","n":[1,2]},"nodes":[`+nodeA+`]}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if c.SampleInput["name"] != "Ada" {
		t.Fatalf("sample_input not kept: %#v", c.SampleInput)
	}
	out, _ := json.Marshal(c)
	if !strings.Contains(string(out), `"sample_input":{"n":[1,2],"name":"Ada"}`) {
		t.Fatalf("sample_input not written back: %s", out)
	}
	_, err = Decode([]byte(`{"name":"t","sample_input":[1],"nodes":[`+nodeA+`]}`), Limits{})
	if err == nil || !strings.Contains(err.Error(), "sample_input") {
		t.Fatalf("a non-object sample_input must be refused naming the field, got %v", err)
	}
}
