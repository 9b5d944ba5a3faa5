package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine"
)

// decodeProblem is one reason a document does not decode, with where it is:
// the decoder's path and the 1-based line and column in the document.
type decodeProblem struct {
	Path    string `json:"path,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	off     int
}

// maxDecodeProblems bounds the list (a document of 10,000 bad nodes).
const maxDecodeProblems = 100

// decodeProblems finds as many reasons as it can why data does not decode,
// where the decoder stops at the first. How far it goes:
//   - JSON that does not parse, a document over the size limit, or one that
//     is not an object: the one problem, with its line and column.
//   - An A2E chain/req message: the decoder's one problem.
//   - A studio document: each top-level field, each node and each edge is
//     decoded on its own, and each field of a failing node or edge on its
//     own too, so every bad field is reported; then duplicate node ids.
//     Problems that only show once every part decodes (a duplicate edge id)
//     come from the whole-document decode.
//
// first is the whole document's decode error when the caller has it.
func decodeProblems(data []byte, lim engine.Limits, first error) []decodeProblem {
	if first == nil {
		if _, _, err := engine.DecodeDocument(data, lim); err != nil {
			first = err
		} else {
			return nil
		}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return []decodeProblem{wholeProblem(data, first)}
	}
	if raw, ok := top["type"]; ok && string(raw) != "null" {
		p := wholeProblem(data, first)
		if p.Line == 0 {
			p.off = locate(data, 0, p.Path)
			p.Line, p.Column = engine.LineCol(data, p.off)
		}
		return []decodeProblem{p}
	}
	offs := topOffsets(data)
	var out []decodeProblem
	seen := map[string]bool{}
	add := func(path, msg string, off int) {
		key := path + "\x00" + msg
		if seen[key] {
			return
		}
		seen[key] = true
		out = append(out, decodeProblem{Path: path, Message: msg, off: off})
	}

	// top-level fields, one at a time
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "nodes" || k == "edges" {
			continue
		}
		mini := map[string]json.RawMessage{k: top[k], "nodes": json.RawMessage("[]")}
		if de := decodeMini(mini, lim); de != nil {
			add(de.Path, de.Msg, locate(data, offs.key[k], strings.TrimPrefix(de.Path, k)))
		}
	}
	rawNodes, hasNodes := top["nodes"]
	if !hasNodes || string(rawNodes) == "null" {
		add("nodes", "is required: a chain document needs a list of nodes (it may be empty)", 0)
	} else if de := decodeMini(map[string]json.RawMessage{"nodes": rawNodes}, lim); de != nil {
		var nodes []json.RawMessage
		if json.Unmarshal(rawNodes, &nodes) != nil || len(nodes) > lim.MaxNodes && lim.MaxNodes > 0 {
			add(de.Path, de.Msg, offs.key["nodes"])
		} else {
			ids := map[string]int{}
			for i, raw := range nodes {
				off := offs.at("nodes", i)
				before := len(out)
				partProblems(raw, "nodes", i, lim, data, off, add)
				if len(out) == before {
					var n struct {
						ID string `json:"node_id"`
					}
					_ = json.Unmarshal(raw, &n)
					if j, dup := ids[n.ID]; dup {
						add(fmt.Sprintf("nodes[%d] %q.node_id", i, n.ID), fmt.Sprintf("duplicate node id %q (also nodes[%d])", n.ID, j), locate(data, off, ".node_id"))
					} else {
						ids[n.ID] = i
					}
				}
				if len(out) >= maxDecodeProblems {
					break
				}
			}
		}
	}
	if rawEdges, ok := top["edges"]; ok && string(rawEdges) != "null" && len(out) < maxDecodeProblems {
		var edges []json.RawMessage
		if err := json.Unmarshal(rawEdges, &edges); err != nil {
			if de := decodeMini(map[string]json.RawMessage{"nodes": json.RawMessage("[]"), "edges": rawEdges}, lim); de != nil {
				add(de.Path, de.Msg, offs.key["edges"])
			}
		} else {
			for i, raw := range edges {
				partProblems(raw, "edges", i, lim, data, offs.at("edges", i), add)
				if len(out) >= maxDecodeProblems {
					break
				}
			}
		}
	}
	if len(out) == 0 {
		return []decodeProblem{wholeProblem(data, first)}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].off < out[j].off })
	if len(out) > maxDecodeProblems {
		out = out[:maxDecodeProblems]
	}
	for i := range out {
		out[i].Line, out[i].Column = engine.LineCol(data, out[i].off)
	}
	return out
}

// partProblems decodes one node or edge (list[i]) alone; when it fails, it
// decodes its identity fields (node_id and kind; source and target) alone,
// then each other field alone beside them (beside stand-ins when the
// identity itself is bad, so a bad kind does not hide a bad retry), and
// reports every distinct problem.
func partProblems(raw json.RawMessage, list string, i int, lim engine.Limits, data []byte, off int, add func(path, msg string, off int)) {
	one := func(part json.RawMessage) *engine.DecodeError {
		mini := map[string]json.RawMessage{"nodes": json.RawMessage("[]")}
		mini[list] = json.RawMessage("[" + string(part) + "]")
		return decodeMini(mini, lim)
	}
	whole := one(raw)
	if whole == nil {
		return
	}
	report := func(de *engine.DecodeError) {
		field := partField(de.Path, list)
		path := fmt.Sprintf("%s[%d]", list, i) + partName(raw, list)
		if field != "" {
			path += "." + field
		}
		add(path, de.Msg, locate(data, off, "."+field))
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		report(whole)
		return
	}
	keep, standIn := []string{"node_id", "kind"}, map[string]json.RawMessage{"node_id": json.RawMessage(`"node"`), "kind": json.RawMessage(`"tool"`)}
	if list == "edges" {
		keep, standIn = []string{"source", "target"}, map[string]json.RawMessage{"source": json.RawMessage(`"a"`), "target": json.RawMessage(`"b"`)}
	}
	found := false
	base := map[string]json.RawMessage{}
	for _, k := range keep {
		if v, ok := obj[k]; ok {
			base[k] = v
		}
	}
	if de := one(mustJSON(base)); de != nil {
		report(de)
		found = true
		base = standIn
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, identity := standIn[k]; identity {
			continue
		}
		part := map[string]json.RawMessage{k: obj[k]}
		for bk, bv := range base {
			part[bk] = bv
		}
		if de := one(mustJSON(part)); de != nil {
			report(de)
			found = true
		}
	}
	if !found {
		report(whole)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// decodeMini decodes a small document built from parts of the real one.
func decodeMini(doc map[string]json.RawMessage, lim engine.Limits) *engine.DecodeError {
	b, err := json.Marshal(doc)
	if err != nil {
		return &engine.DecodeError{Msg: err.Error()}
	}
	_, _, err = engine.DecodeDocument(b, lim)
	if err == nil {
		return nil
	}
	var de *engine.DecodeError
	if errors.As(err, &de) {
		return de
	}
	return &engine.DecodeError{Msg: err.Error()}
}

// partField is the field part of a decoder path about a mini document's
// only node or edge: `nodes[0] "a".retry.max_attempts` → retry.max_attempts.
func partField(path, list string) string {
	rest, ok := strings.CutPrefix(path, list+"[0]")
	if !ok {
		return path
	}
	if strings.HasPrefix(rest, " ") {
		rest = rest[1:]
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			rest = rest[len(q):]
		}
		// an edge is named "source" -> "target"
		if r, ok := strings.CutPrefix(rest, " -> "); ok {
			if q, err := strconv.QuotedPrefix(r); err == nil {
				rest = r[len(q):]
			}
		}
	}
	return strings.TrimPrefix(rest, ".")
}

// partName names a node by its id and an edge by its id or its ends, as the
// decoder does.
func partName(raw json.RawMessage, list string) string {
	var p struct {
		ID     any `json:"id"`
		NodeID any `json:"node_id"`
		Source any `json:"source"`
		Target any `json:"target"`
	}
	_ = json.Unmarshal(raw, &p)
	str := func(v any) string { s, _ := v.(string); return s }
	if list == "nodes" {
		if s := str(p.NodeID); s != "" {
			return " " + strconv.Quote(shortID(s))
		}
		return ""
	}
	if s := str(p.ID); s != "" {
		return " " + strconv.Quote(shortID(s))
	}
	return fmt.Sprintf(" %q -> %q", shortID(str(p.Source)), shortID(str(p.Target)))
}

func shortID(s string) string {
	if len(s) <= 64 {
		return s
	}
	n := 64
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

var syntaxAt = regexp.MustCompile(`^(malformed JSON|truncated JSON: the document ends) at line (\d+), column (\d+)(: | before)`)

// wholeProblem is the whole document's decode error as one problem; a JSON
// syntax error's line and column move from the message to the fields.
func wholeProblem(data []byte, err error) decodeProblem {
	p := decodeProblem{Message: err.Error()}
	var de *engine.DecodeError
	if errors.As(err, &de) {
		p.Path, p.Message = de.Path, de.Msg
	}
	if m := syntaxAt.FindStringSubmatch(p.Message); m != nil {
		p.Line, _ = strconv.Atoi(m[2])
		p.Column, _ = strconv.Atoi(m[3])
		if m[4] == ": " {
			p.Message = m[1] + ": " + p.Message[len(m[0]):]
		} else {
			p.Message = m[1] + " before" + p.Message[len(m[0]):]
		}
	}
	return p
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
				continue
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

// locate follows a field path (".retry.max_attempts", ".cases[1].when")
// from the value at off, and returns the offset of the deepest part found.
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
