package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Problem is one reason a document does not decode, and where it is.
type Problem struct {
	Path    string // the decoder's path: `nodes[2] "fetch".retry.max_attempts`
	Node    string // the node's id, when the problem is in a node
	Edge    string // the edge's id, or "source->target", when it is in an edge
	Field   string // the field, in the node or edge or at the top: "retry.max_attempts"
	Rule    string // DecodeSyntax, DecodeWrongType, …; "" when the decoder names none
	Message string
	Line    int // 1-based place in the document; 0 when unknown
	Column  int
	off     int
}

// MaxProblems bounds the problems DecodeAll lists (a document of 10,000 bad
// nodes).
const MaxProblems = 100

// DecodeAll is Decode in collect-all mode: when data does not decode, it
// lists every problem it finds, in document order, instead of the first.
//   - JSON that does not parse, a document over the size limit, or one that
//     is not an object: the one problem.
//   - An A2E chain/req message: the decoder's one problem.
//   - A studio document: every unknown field and value of the wrong type,
//     every bad value of each top-level field, node and edge, duplicate node
//     ids, and the first problem of the tests and of the notes. A problem
//     that only shows once every part decodes (a duplicate edge id) is
//     listed alone, once the others are fixed.
func DecodeAll(data []byte, lim Limits) (*Chain, []Problem) {
	c, _, err := DecodeDocument(data, lim)
	if err == nil {
		return c, nil
	}
	var first *DecodeError
	if !errors.As(err, &first) {
		first = &DecodeError{Msg: err.Error()}
	}
	lim = lim.WithDefaults()
	var top map[string]json.RawMessage
	if first.Rule == DecodeOverLimit && first.Path == "" || first.Rule == DecodeEncoding ||
		json.Unmarshal(data, &top) != nil || top == nil {
		return nil, []Problem{wholeProblem(data, first, false)}
	}
	if raw, ok := top["type"]; ok && string(raw) != "null" {
		return nil, []Problem{wholeProblem(data, first, true)}
	}
	ps := documentProblems(data, top, lim)
	if len(ps) == 0 {
		return nil, []Problem{wholeProblem(data, first, true)}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].off < ps[j].off })
	if len(ps) > MaxProblems {
		ps = ps[:MaxProblems]
	}
	for i := range ps {
		ps[i].Line, ps[i].Column = LineCol(data, ps[i].off)
	}
	return nil, ps
}

// wholeProblem is the whole document's decode error as its one problem, at
// the place its path names when located.
func wholeProblem(data []byte, e *DecodeError, located bool) Problem {
	p := Problem{Path: e.Path, Field: e.Path, Rule: e.Rule, Message: e.Msg}
	switch {
	case e.Line > 0:
		p.Line, p.Column = e.Line, e.Column
		if e.placeless != "" {
			p.Message = e.placeless
		}
	case located:
		p.Line, p.Column = LineCol(data, locate(data, 0, e.Path))
	}
	return p
}

// problemList collects the problems of a studio document, each once.
type problemList struct {
	data []byte
	out  []Problem
	seen map[string]bool
}

func (l *problemList) full() bool { return len(l.out) >= MaxProblems }

// add records e, found in the part at offset off whose path is prefix (a
// node or an edge).
func (l *problemList) add(e *DecodeError, prefix string, off int, node, edge string) {
	field := strings.TrimPrefix(strings.TrimPrefix(e.Path, prefix), ".")
	l.record(Problem{Path: e.Path, Node: node, Edge: edge, Field: field, Rule: e.Rule, Message: e.Msg, off: locate(l.data, off, field)})
}

// addTop records e, found in a top-level field (or in the tests or notes).
func (l *problemList) addTop(e *DecodeError, offs offsets) {
	k, rest := e.Path, ""
	if i := strings.IndexAny(k, ".["); i >= 0 {
		k, rest = k[:i], k[i:]
	}
	l.record(Problem{Path: e.Path, Field: e.Path, Rule: e.Rule, Message: e.Msg, off: locate(l.data, offs.key[k], rest)})
}

func (l *problemList) record(p Problem) {
	key := p.Path + "\x00" + p.Message
	if l.seen[key] {
		return
	}
	l.seen[key] = true
	l.out = append(l.out, p)
}

func documentProblems(data []byte, top map[string]json.RawMessage, lim Limits) []Problem {
	l := &problemList{data: data, seen: map[string]bool{}}
	offs := topOffsets(data)
	addTop := func(e *DecodeError) { l.addTop(e, offs) }
	var f chainFields
	bad := decodeApart("", top, &f, addTop)
	c := &Chain{Timeout: f.Timeout, MaxConcurrency: f.MaxConcurrency, MaxDepth: f.MaxDepth, EntryNode: f.EntryNode}
	for _, e := range chainFieldErrors(c, lim) {
		if !bad[e.Path] {
			addTop(e)
		}
	}
	if _, err := decodeTests(f.Tests); err != nil && !bad["tests"] {
		addTop(asDecodeError(err, "tests"))
	}
	if _, err := decodePins(f.PinnedOutputs, lim); err != nil && !bad[PinsField] {
		addTop(asDecodeError(err, PinsField))
	}
	if _, err := decodeNotes(f.Notes, lim); err != nil && !bad["notes"] {
		addTop(asDecodeError(err, "notes"))
	}
	switch {
	case bad["nodes"]:
	case f.Nodes == nil:
		addTop(&DecodeError{Path: "nodes", Rule: DecodeRequired, Msg: "is required: a chain document needs a list of nodes (it may be empty)"})
	case len(f.Nodes) > lim.MaxNodes:
		addTop(&DecodeError{Path: "nodes", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d nodes, over the limit of %d", len(f.Nodes), lim.MaxNodes)})
	default:
		ids := map[string]int{}
		for i, raw := range f.Nodes {
			if l.full() {
				break
			}
			l.nodeProblems(i, raw, offs.at("nodes", i), lim, ids)
		}
	}
	switch {
	case bad["edges"] || l.full():
	case len(f.Edges) > lim.MaxEdges:
		addTop(&DecodeError{Path: "edges", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d edges, over the limit of %d", len(f.Edges), lim.MaxEdges)})
	default:
		for i, raw := range f.Edges {
			if l.full() {
				break
			}
			l.edgeProblems(i, raw, offs.at("edges", i), lim)
		}
	}
	return l.out
}

func asDecodeError(err error, path string) *DecodeError {
	var e *DecodeError
	if errors.As(err, &e) {
		return e
	}
	return &DecodeError{Path: path, Msg: err.Error()}
}

// nodeProblems lists every problem of node i: unknown fields and values of
// the wrong type (each field decoded apart), the value checks of the fields
// that decoded, and, for a node without problems, a duplicate id.
func (l *problemList) nodeProblems(i int, raw json.RawMessage, off int, lim Limits, ids map[string]int) {
	var id struct {
		ID any `json:"node_id"`
	}
	_ = json.Unmarshal(raw, &id)
	name, _ := id.ID.(string)
	path := fmt.Sprintf("nodes[%d]", i)
	if name != "" {
		path += fmt.Sprintf(" %q", clip.String(name, 64))
	}
	before := len(l.out)
	report := func(e *DecodeError) { l.add(e, path, off, name, "") }
	var n Node
	bad, ok := decodePart(path, raw, &n, report)
	if !ok {
		return
	}
	for _, e := range nodeFieldErrors(&n, path, lim) {
		if !bad[partKey(e.Path, path)] {
			report(e)
		}
	}
	if len(l.out) > before {
		return
	}
	if j, dup := ids[n.ID]; dup {
		report(&DecodeError{Path: path + ".node_id", Rule: DecodeDuplicateID, Msg: fmt.Sprintf("duplicate node id %q (also nodes[%d])", n.ID, j)})
		return
	}
	ids[n.ID] = i
}

// edgeProblems lists every problem of edge i, as nodeProblems does a node's.
func (l *problemList) edgeProblems(i int, raw json.RawMessage, off int, lim Limits) {
	var ends struct {
		ID     any `json:"id"`
		Source any `json:"source"`
		Target any `json:"target"`
	}
	path := fmt.Sprintf("edges[%d]", i)
	var name string
	if json.Unmarshal(raw, &ends) == nil {
		str := func(v any) string { s, _ := v.(string); return s }
		if name = str(ends.ID); name != "" {
			path += fmt.Sprintf(" %q", clip.String(name, 64))
		} else {
			name = str(ends.Source) + "->" + str(ends.Target)
			path += fmt.Sprintf(" %q -> %q", clip.String(str(ends.Source), 64), clip.String(str(ends.Target), 64))
		}
	}
	report := func(e *DecodeError) { l.add(e, path, off, "", name) }
	var e Edge
	bad, ok := decodePart(path, raw, &e, report)
	if !ok {
		return
	}
	for _, de := range edgeFieldErrors(&e, path, lim) {
		if !bad[partKey(de.Path, path)] {
			report(de)
		}
	}
}

// decodePart decodes one node or edge (an object, or null: no fields) into
// v apart, field by field; ok is false when raw is not an object at all.
func decodePart(path string, raw json.RawMessage, v any, report func(*DecodeError)) (bad map[string]bool, ok bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		if err := strictUnmarshalAt(path, raw, v); err != nil {
			var e *DecodeError
			if errors.As(err, &e) {
				report(e)
			}
		}
		return nil, false
	}
	return decodeApart(path, obj, v, report), true
}

// partKey is the top-level key of a node's or an edge's field that a path
// under prefix names: `nodes[0] "a".retry.max_attempts` → retry.
func partKey(p, prefix string) string {
	k := strings.TrimPrefix(strings.TrimPrefix(p, prefix), ".")
	if i := strings.IndexAny(k, ".["); i >= 0 {
		k = k[:i]
	}
	return k
}

// decodeApart decodes the object obj into the struct *v one field at a
// time, so it reports every unknown field (at any depth) and every value of
// the wrong type, where a strict decode stops at the first. It returns the
// keys whose values did not decode.
func decodeApart(path string, obj map[string]json.RawMessage, v any, report func(*DecodeError)) map[string]bool {
	rv := reflect.ValueOf(v).Elem()
	t := rv.Type()
	fields := jsonFields(t)
	index := jsonFieldIndex(t)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := map[string]bool{}
	for _, k := range keys {
		p := joinPath(path, k)
		i, ok := index[k]
		if !ok {
			report(unknownField(p, k, fields))
			bad[k] = true
			continue
		}
		fv := reflect.New(rv.Field(i).Type())
		unknown := false
		walkKeys(p, obj[k], fv.Type(), func(e *DecodeError) bool { report(e); unknown = true; return true })
		if unknown {
			bad[k] = true
			continue
		}
		if err := strictUnmarshal(obj[k], fv.Interface()); err != nil {
			report(asDecodeError(jsonError(p, err, obj[k]), p))
			bad[k] = true
			continue
		}
		rv.Field(i).Set(fv.Elem())
	}
	return bad
}

// offsets are byte offsets in the document: each top-level key's value and
// each element of the nodes and edges arrays.
type offsets struct {
	key  map[string]int
	elem map[string][]int
}

func (o offsets) at(list string, i int) int {
	if i < len(o.elem[list]) {
		return o.elem[list][i]
	}
	return o.key[list]
}

func topOffsets(data []byte) offsets {
	o := offsets{key: map[string]int{}, elem: map[string][]int{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return o
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return o
		}
		k, _ := t.(string)
		o.key[k] = skipSpace(data, int(dec.InputOffset()), true)
		if k == "nodes" || k == "edges" {
			if t, err := dec.Token(); err == nil && t == json.Delim('[') {
				for dec.More() {
					start := skipSpace(data, int(dec.InputOffset()), false)
					var raw json.RawMessage
					if dec.Decode(&raw) != nil {
						return o
					}
					o.elem[k] = append(o.elem[k], start)
				}
				if _, err := dec.Token(); err != nil {
					return o
				}
			}
			continue
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return o
		}
	}
	return o
}

// skipSpace moves off past whitespace and separators (a colon after a key
// when colon, else a comma) to where the next value starts.
func skipSpace(data []byte, off int, colon bool) int {
	for off < len(data) {
		switch c := data[off]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == ':' && colon, c == ',' && !colon:
		default:
			return off
		}
		off++
	}
	return off
}

// locate follows a field path ("retry.max_attempts", "cases[1].when") from
// the value at off, and returns the offset of the deepest part found.
func locate(data []byte, off int, path string) int {
	path = strings.TrimPrefix(path, ".")
	if path == "" || off >= len(data) {
		return off
	}
	var parts []string
	for _, seg := range strings.Split(path, ".") {
		name, idx, hasIdx := strings.Cut(seg, "[")
		if name != "" {
			parts = append(parts, name)
		}
		for hasIdx {
			var n string
			n, idx, _ = strings.Cut(idx, "]")
			parts = append(parts, "["+n)
			_, idx, hasIdx = strings.Cut(idx, "[")
		}
	}
	for _, p := range parts {
		next, ok := child(data, off, p)
		if !ok {
			return off
		}
		off = next
	}
	return off
}

// child finds the value of key (or "[n": element n) in the value at off.
func child(data []byte, off int, key string) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	t, err := dec.Token()
	if err != nil {
		return 0, false
	}
	if idx, isIdx := strings.CutPrefix(key, "["); isIdx {
		n, err := strconv.Atoi(idx)
		if err != nil || t != json.Delim('[') {
			return 0, false
		}
		for i := 0; dec.More(); i++ {
			start := skipSpace(data, off+int(dec.InputOffset()), false)
			if i == n {
				return start, true
			}
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return 0, false
			}
		}
		return 0, false
	}
	if t != json.Delim('{') {
		return 0, false
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return 0, false
		}
		start := skipSpace(data, off+int(dec.InputOffset()), true)
		if k, _ := kt.(string); k == key {
			return start, true
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return 0, false
		}
	}
	return 0, false
}
