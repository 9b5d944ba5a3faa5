package views

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sort"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// The node view's data columns (views/nodeview.templ): a run's data for one
// node, as a table of its top-level fields and as JSON, each cut to a
// preview so that a node whose input is megabytes opens as fast as one
// whose input is a line; "Show all" asks for the whole value.

// NodeViewData is what the node view's Input and Output columns show.
type NodeViewData struct {
	ChainID, NodeID string
	Run             *store.Run         // nil: the chain has no run yet
	Record          *engine.NodeResult // the node's own result in Run
	Received        any
	HasReceived     bool
	Missing         string
	From            []string // see ops.NodeView; none: a root's run input
	Withheld        bool
	// ShowsInput: the node sets input or input_map, so what its tool got
	// differs from what it received; that is shown too.
	ShowsInput bool
	// All names the part shown whole (received, input, node_input, output).
	All string
}

// The parts of the view a value is shown in, as the page asks for them.
const (
	NVReceived  = "received"
	NVRunInput  = "input"
	NVNodeInput = "node_input"
	NVOutput    = "output"
)

// NVPreviewBytes is how much of a value's JSON the view shows before
// "Show all"; NVFieldRows how many top-level fields its table lists.
const (
	NVPreviewBytes = 16 << 10
	NVFieldRows    = 200
	nvCellBytes    = 120
)

// errCut stops an encoding that has written what the preview shows.
var errCut = errors.New("cut")

// capWriter keeps the first max bytes written to it, then fails.
type capWriter struct {
	buf bytes.Buffer
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	room := w.max - w.buf.Len()
	if len(p) > room {
		w.buf.Write(p[:room])
		return room, errCut
	}
	return w.buf.Write(p)
}

// jsonPrefix is v's JSON (indented when indent) up to max bytes, and
// whether it was cut. Encoding stops at the cut: a 1 MB value costs what
// its first max bytes cost.
func jsonPrefix(v any, max int, indent bool) (string, bool) {
	w := &capWriter{max: max}
	opts := []jsonv2.Options{jsonv2.Deterministic(true), jsontext.EscapeForHTML(false), jsontext.AllowInvalidUTF8(true)}
	if indent {
		opts = append(opts, jsontext.WithIndent("  "))
	}
	err := jsonv2.MarshalWrite(w, v, opts...)
	if errors.Is(err, errCut) {
		return w.buf.String(), true
	}
	if err != nil {
		b, _ := json.Marshal(v)
		return string(b), false
	}
	return string(bytes.TrimSuffix(w.buf.Bytes(), []byte("\n"))), false
}

// nvJSON is the JSON the view shows of v: whole when all, else its first
// NVPreviewBytes, ending at a whole line.
func nvJSON(v any, all bool) (text string, cut bool) {
	if all {
		return pretty(v), false
	}
	text, cut = jsonPrefix(v, NVPreviewBytes, true)
	if cut {
		if i := bytes.LastIndexByte([]byte(text), '\n'); i > 0 {
			text = text[:i]
		}
		text += "\n…"
	}
	return text, cut
}

// NVField is one row of a value's table: a top-level field (or item).
type NVField struct {
	Name    string // the key, or [N] for an item
	Segs    string // its path below the value as a JSON array of keys and indexes
	Type    string
	Preview string
}

// nvFields lists v's top-level fields (an object's keys, sorted; a list's
// first items); a scalar is one row of its own. more counts the rows left out.
func nvFields(v any) (rows []NVField, more int) {
	cell := func(x any) string {
		s, cut := jsonPrefix(x, nvCellBytes, false)
		if cut {
			s += "…"
		}
		return s
	}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		if len(keys) > NVFieldRows {
			keys, more = keys[:NVFieldRows], len(keys)-NVFieldRows
		}
		for _, k := range keys {
			segs, _ := json.Marshal([]string{k})
			rows = append(rows, NVField{Name: k, Segs: string(segs), Type: typeName(x[k]), Preview: cell(x[k])})
		}
	case []any:
		n := len(x)
		if n > NVFieldRows {
			n, more = NVFieldRows, len(x)-NVFieldRows
		}
		for i := range n {
			rows = append(rows, NVField{Name: "[" + strconv.Itoa(i) + "]", Segs: "[" + strconv.Itoa(i) + "]", Type: typeName(x[i]), Preview: cell(x[i])})
		}
	default:
		rows = append(rows, NVField{Name: "(the value)", Segs: "[]", Type: typeName(v), Preview: cell(v)})
	}
	return rows, more
}

// typeName is a JSON value's type for people; a list says how long it is.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object (" + plural(len(x), "field", "fields") + ")"
	case []any:
		return "list (" + plural(len(x), "item", "items") + ")"
	case string:
		return "text"
	case bool:
		return "boolean"
	case float64, float32, int, int64, json.Number:
		return "number"
	}
	return "value"
}

// nvSize is about how large v is as JSON, for people (bytes below 1 KB).
func nvSize(v any) string {
	if n := engine.ValueSize(v, 1<<10); n < 1<<10 {
		return plural(int(n), "byte", "bytes")
	}
	return sizeText(v)
}

// receivedPrefix is the name the node's expressions read its received data
// by: `input` for a root (the run's input), `output` for the others.
func (d NodeViewData) receivedPrefix() string {
	if len(d.From) == 0 {
		return "input"
	}
	return "output"
}

func (d NodeViewData) fromText() string {
	switch len(d.From) {
	case 0:
		return "the run's input"
	case 1:
		return "the output of " + d.From[0]
	}
	s := "the outputs of "
	for i, id := range d.From {
		if i > 0 {
			s += ", "
		}
		s += id
	}
	return s + ", by node id"
}

// receivedText follows the run's link: what the node received there.
func (d NodeViewData) receivedText() string {
	if !d.HasReceived {
		return "."
	}
	return ": this node received " + d.fromText() + ", read as"
}

func (d NodeViewData) fromAttr() string {
	b, _ := json.Marshal(d.From)
	if d.From == nil {
		return "[]"
	}
	return string(b)
}

func (d NodeViewData) runLabel() string {
	if d.Run == nil {
		return ""
	}
	s := shortRunID(d.Run.ID) + ", " + statusText(string(d.Run.Status)) + ", " + ago(d.Run.Started)
	if d.Run.ChainVersion > 0 {
		s += ", v" + itoa(d.Run.ChainVersion)
	}
	return s
}

func runIDOf(r *store.Run) string {
	if r == nil {
		return ""
	}
	return r.ID
}

func boolAttr(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func orEmptyMap(m map[string]any) any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func hasSource(ss []NodeSource, id string) bool {
	for _, s := range ss {
		if s.Run.ID == id {
			return true
		}
	}
	return false
}

// sourceLabel names a run in the node view's picker.
func sourceLabel(s NodeSource) string {
	t := ago(s.Run.Started) + " · " + statusText(string(s.Run.Status))
	if s.Run.ChainVersion > 0 {
		t += " · v" + itoa(s.Run.ChainVersion)
	}
	t += " · " + shortRunID(s.Run.ID)
	if s.Problem != "" {
		t += " (cannot feed this node alone)"
	}
	return t
}

// pinnable reports whether the output shown can be pinned from the view: a
// node that ran and finished (not one whose pin or earlier output stood
// in), with no stored credential sent, whose answer would otherwise be
// copied into the chain document.
func (d NodeViewData) pinnable() bool {
	r := d.Record
	return d.Run != nil && r != nil && r.Status == engine.PhaseDone && !r.Pinned && !r.Reused && !r.Credentialed
}

// Bounds of the schema the view infers from a value: fields an object
// lists, items of a list looked at, and how deep it goes.
const (
	nvSchemaFields = 200
	nvSchemaItems  = 50
	nvSchemaDepth  = 8
	nvSchemaNodes  = 5000 // values looked at in all
)

// nvSchema is a JSON Schema of v's shape, inferred from the value (the types
// of its fields and of its lists' first items, within the bounds above), as
// indented JSON: what a person writes an output_schema, a mock or an
// expression against.
func nvSchema(v any) string {
	left := nvSchemaNodes
	b, err := json.MarshalIndent(inferSchema(v, 0, &left), "", "  ")
	if err != nil {
		return "{}"
	}
	return string(b)
}

func inferSchema(v any, depth int, left *int) map[string]any {
	if *left <= 0 {
		return map[string]any{"description": "not looked at: the value is too large to infer all of it"}
	}
	*left--
	switch x := v.(type) {
	case nil:
		return map[string]any{"type": "null"}
	case bool:
		return map[string]any{"type": "boolean"}
	case string:
		return map[string]any{"type": "string"}
	case float64:
		if x == float64(int64(x)) {
			return map[string]any{"type": "integer"}
		}
		return map[string]any{"type": "number"}
	case int, int64, json.Number:
		return map[string]any{"type": "number"}
	case map[string]any:
		s := map[string]any{"type": "object"}
		if depth >= nvSchemaDepth || len(x) == 0 {
			return s
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		props := map[string]any{}
		for i, k := range keys {
			if i == nvSchemaFields {
				s["x-more-fields"] = len(keys) - nvSchemaFields
				break
			}
			props[k] = inferSchema(x[k], depth+1, left)
		}
		s["properties"] = props
		return s
	case []any:
		s := map[string]any{"type": "array"}
		if depth >= nvSchemaDepth || len(x) == 0 {
			return s
		}
		// the items' types, merged: one schema when they agree, anyOf when not
		var kinds []map[string]any
		seen := map[string]bool{}
		for i, it := range x {
			if i == nvSchemaItems {
				break
			}
			is := inferSchema(it, depth+1, left)
			key, _ := json.Marshal(is)
			if !seen[string(key)] {
				seen[string(key)] = true
				kinds = append(kinds, is)
			}
		}
		if len(kinds) == 1 {
			s["items"] = kinds[0]
		} else {
			anyOf := make([]any, len(kinds))
			for i, k := range kinds {
				anyOf[i] = k
			}
			s["items"] = map[string]any{"anyOf": anyOf}
		}
		return s
	}
	return map[string]any{}
}
