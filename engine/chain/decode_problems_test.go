package chain

import (
	"strings"
	"testing"
)

// DecodeAll lists every problem of a document, each with its node or edge,
// field, rule and place, in document order.
func TestDecodeAllListsEveryProblem(t *testing.T) {
	t.Parallel()
	doc := `{
  "name": "broken",
  "timeout": "soon",
  "nodes": [
    {"node_id": "a", "kind": "tool", "retry": {"max_attempts": "3"}},
    {"node_id": "b", "kind": "tool", "name": "echo"},
    {"node_id": "c", "kind": "nope", "timeout": -1},
    {"node_id": "d", "kind": "tool", "labl": "x"},
    {"node_id": "b", "kind": "tool"}
  ],
  "edges": [
    {"source": "a", "target": "b"},
    {"source": "b", "target": "c", "max_iterations": "many"}
  ]
}`
	want := []Problem{
		{Path: "timeout", Field: "timeout", Rule: DecodeWrongType, Line: 3},
		{Path: `nodes[0] "a".retry.max_attempts`, Node: "a", Field: "retry.max_attempts", Rule: DecodeWrongType, Line: 5},
		{Path: `nodes[2] "c".kind`, Node: "c", Field: "kind", Rule: DecodeBadValue, Line: 7},
		{Path: `nodes[2] "c".timeout`, Node: "c", Field: "timeout", Rule: DecodeBadValue, Line: 7},
		{Path: `nodes[3] "d".labl`, Node: "d", Field: "labl", Rule: DecodeUnknownField, Line: 8},
		{Path: `nodes[4] "b".node_id`, Node: "b", Field: "node_id", Rule: DecodeDuplicateID, Line: 9},
		{Path: `edges[1] "b" -> "c".max_iterations`, Edge: "b->c", Field: "max_iterations", Rule: DecodeWrongType, Line: 13},
	}
	c, got := DecodeAll([]byte(doc), Limits{})
	if c != nil || len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Path != w.Path || g.Node != w.Node || g.Edge != w.Edge || g.Field != w.Field || g.Rule != w.Rule || g.Line != w.Line || g.Column < 1 || g.Message == "" {
			t.Errorf("problem %d = %+v, want %+v", i, g, w)
		}
	}
	// the field's own column: "max_attempts": "3"
	if g := got[1]; g.Column != strings.Index(strings.Split(doc, "\n")[4], `"3"`)+1 {
		t.Errorf("max_attempts column %d", g.Column)
	}
}

func TestDecodeAllOneProblemCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc, rule, msg string
		line, col      int
	}{
		{"{\n  \"name\": \"x\",\n  \"nodes\": [}\n", DecodeSyntax, "malformed JSON: invalid character '}'", 3, 13},
		{"{\n  \"nodes\": [", DecodeSyntax, "truncated JSON: the document ends before the value is complete", 2, 13},
		{`null`, DecodeWrongType, "wrong type: got JSON null", 0, 0},
		{"\xff", DecodeEncoding, "not valid UTF-8", 0, 0},
		{`{"type":"chain/req","chain_id":"x",` + "\n" + `"nodes":[{"node_id":"a","kind":"tool","retry":7}]}`, DecodeWrongType, "want an object", 2, 47},
		{`{"nodes":[{"node_id":"a","kind":"tool"}],"edges":[{"id":"e","source":"a","target":"a"},{"id":"e","source":"a","target":"a"}]}`, DecodeDuplicateID, `duplicate edge id "e"`, 1, 94},
	} {
		_, got := DecodeAll([]byte(tc.doc), Limits{})
		if len(got) != 1 || got[0].Rule != tc.rule || !strings.HasPrefix(got[0].Message, tc.msg) && !strings.Contains(got[0].Message, tc.msg) || got[0].Line != tc.line || got[0].Column != tc.col {
			t.Errorf("%q: %+v", tc.doc, got)
		}
	}
	if c, got := DecodeAll([]byte(`{"nodes":[{"node_id":"a","kind":"tool"}]}`), Limits{}); c == nil || got != nil {
		t.Errorf("a good document: %v %+v", c, got)
	}
	// Over the size limit: that one problem, not one per part.
	if _, got := DecodeAll([]byte(`{"nodes":[{"node_id":"a","kind":"tool"}]}`), Limits{MaxDocumentBytes: 10}); len(got) != 1 || got[0].Rule != DecodeOverLimit {
		t.Errorf("size: %+v", got)
	}
}

// Every field of a node is checked, even beside a bad identity, and the
// list stops at MaxProblems.
func TestDecodeAllChecksEveryField(t *testing.T) {
	t.Parallel()
	_, got := DecodeAll([]byte(`{"nodes":[{"node_id":5,"kind":"x","retry":{"max_attempts":0,"backoff":"z"},"Routing":"all"}]}`), Limits{})
	var paths []string
	for _, p := range got {
		paths = append(paths, p.Path)
	}
	if s := strings.Join(paths, " "); s != "nodes[0].node_id nodes[0].kind nodes[0].retry.max_attempts nodes[0].retry.backoff nodes[0].Routing" {
		t.Errorf("paths = %s", s)
	}
	var b strings.Builder
	b.WriteString(`{"nodes":[`)
	for i := 0; i < 2*MaxProblems; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"node_id":"n","kind":"bad"}`)
	}
	b.WriteString("]}")
	if _, got := DecodeAll([]byte(b.String()), Limits{}); len(got) != MaxProblems {
		t.Errorf("%d problems, want %d", len(got), MaxProblems)
	}
}
