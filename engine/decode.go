package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Limits bound what a chain document may hold. The zero value of a field means
// its default.
type Limits struct {
	MaxDocumentBytes    int // whole document; default 16 MiB
	MaxNodes            int // default 10,000
	MaxEdges            int // default 50,000
	MaxExpressionLength int // any one expression; default 16 KiB
	MaxMapItems         int // items one map node may fan out over; default 10,000
	MaxIDLength         int // node and edge ids; default 256
}

// DefaultLimits are the limits used when a host sets none.
var DefaultLimits = Limits{
	MaxDocumentBytes:    16 << 20,
	MaxNodes:            10_000,
	MaxEdges:            50_000,
	MaxExpressionLength: 16 << 10,
	MaxMapItems:         10_000,
	MaxIDLength:         256,
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxDocumentBytes > 0 {
		d.MaxDocumentBytes = l.MaxDocumentBytes
	}
	if l.MaxNodes > 0 {
		d.MaxNodes = l.MaxNodes
	}
	if l.MaxEdges > 0 {
		d.MaxEdges = l.MaxEdges
	}
	if l.MaxExpressionLength > 0 {
		d.MaxExpressionLength = l.MaxExpressionLength
	}
	if l.MaxMapItems > 0 {
		d.MaxMapItems = l.MaxMapItems
	}
	if l.MaxIDLength > 0 {
		d.MaxIDLength = l.MaxIDLength
	}
	return d
}

// Decode reads a chain document: a studio chain or an A2E chain/req message.
// Decoding is strict: unknown fields, unknown kinds, wrong types, duplicate ids
// and over-limit sizes are *DecodeError values naming the node, edge and field.
// A2E successor fields are normalised into edges.
func Decode(data []byte, lim Limits) (*Chain, error) {
	c, _, err := DecodeDocument(data, lim)
	return c, err
}

// DecodeDocument is Decode that also returns the A2E request when the document
// was one (nil for a studio chain).
func DecodeDocument(data []byte, lim Limits) (*Chain, *Request, error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxDocumentBytes {
		return nil, nil, &DecodeError{Msg: fmt.Sprintf("document is %d bytes, over the limit of %d", len(data), lim.MaxDocumentBytes)}
	}
	if !utf8.Valid(data) {
		return nil, nil, &DecodeError{Msg: fmt.Sprintf("document is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(data))}
	}
	var head struct {
		Type  *string         `json:"type"`
		Nodes json.RawMessage `json:"nodes"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, nil, jsonError("", err, data)
	}
	if head.Type != nil {
		if *head.Type != TypeRequest {
			return nil, nil, &DecodeError{Path: "type", Msg: fmt.Sprintf("unknown message type %q (a chain document has no type; an A2E request has type %q)", *head.Type, TypeRequest)}
		}
		req, err := decodeRequest(data, lim)
		if err != nil {
			return nil, nil, err
		}
		c, err := req.Chain(lim)
		if err != nil {
			return nil, nil, err
		}
		return c, req, nil
	}
	c, err := decodeChain(data, lim)
	return c, nil, err
}

// chainFields is the top level of a studio document with nodes and edges kept
// raw, so each can be decoded with a path that names it.
type chainFields struct {
	Name             string            `json:"name"`
	Description      string            `json:"description"`
	EntryNode        string            `json:"entry_node"`
	StrictRouting    bool              `json:"strict_routing"`
	StrictConditions bool              `json:"strict_conditions"`
	Timeout          float64           `json:"timeout"`
	MaxConcurrency   int               `json:"max_concurrency"`
	MaxDepth         int               `json:"max_depth"`
	Nodes            []json.RawMessage `json:"nodes"`
	Edges            []json.RawMessage `json:"edges"`
}

func decodeChain(data []byte, lim Limits) (*Chain, error) {
	var f chainFields
	if err := strictUnmarshal(data, &f); err != nil {
		return nil, jsonError("", err, data)
	}
	c := &Chain{
		Name: f.Name, Description: f.Description, EntryNode: f.EntryNode,
		StrictRouting: f.StrictRouting, StrictConditions: f.StrictConditions,
		Timeout: f.Timeout, MaxConcurrency: f.MaxConcurrency, MaxDepth: f.MaxDepth,
	}
	if err := checkChainFields(c); err != nil {
		return nil, err
	}
	nodes, err := decodeNodes(f.Nodes, lim)
	if err != nil {
		return nil, err
	}
	c.Nodes = nodes
	if len(f.Edges) > lim.MaxEdges {
		return nil, &DecodeError{Path: "edges", Msg: fmt.Sprintf("%d edges, over the limit of %d", len(f.Edges), lim.MaxEdges)}
	}
	c.Edges = make([]Edge, 0, len(f.Edges))
	for i, raw := range f.Edges {
		var e Edge
		path := fmt.Sprintf("edges[%d]", i)
		if err := strictUnmarshal(raw, &e); err != nil {
			return nil, jsonError(path, err, raw)
		}
		if e.ID != "" {
			path += fmt.Sprintf(" %q", e.ID)
		} else {
			path += fmt.Sprintf(" %q -> %q", e.Source, e.Target)
		}
		if err := checkEdgeFields(&e, path, lim); err != nil {
			return nil, err
		}
		c.Edges = append(c.Edges, e)
	}
	if err := Normalize(c); err != nil {
		return nil, err
	}
	return c, nil
}

func checkChainFields(c *Chain) error {
	if c.Timeout < 0 {
		return &DecodeError{Path: "timeout", Msg: "must be a number of seconds ≥ 0"}
	}
	if c.MaxConcurrency < 0 {
		return &DecodeError{Path: "max_concurrency", Msg: "must be ≥ 0 (0 means the host default)"}
	}
	if c.MaxDepth < 0 {
		return &DecodeError{Path: "max_depth", Msg: "must be ≥ 1 (0 means the default)"}
	}
	return nil
}

func decodeNodes(raws []json.RawMessage, lim Limits) ([]Node, error) {
	if len(raws) > lim.MaxNodes {
		return nil, &DecodeError{Path: "nodes", Msg: fmt.Sprintf("%d nodes, over the limit of %d", len(raws), lim.MaxNodes)}
	}
	nodes := make([]Node, 0, len(raws))
	seen := make(map[string]int, len(raws))
	for i, raw := range raws {
		path := fmt.Sprintf("nodes[%d]", i)
		var id struct {
			ID any `json:"node_id"`
		}
		_ = json.Unmarshal(raw, &id) // only to name the node in errors
		if s, ok := id.ID.(string); ok && s != "" {
			path += fmt.Sprintf(" %q", truncate(s, 64))
		}
		var n Node
		if err := strictUnmarshal(raw, &n); err != nil {
			return nil, jsonError(path, err, raw)
		}
		if err := checkNodeFields(&n, path, lim); err != nil {
			return nil, err
		}
		if j, dup := seen[n.ID]; dup {
			return nil, &DecodeError{Path: path + ".node_id", Msg: fmt.Sprintf("duplicate node id %q (also nodes[%d])", n.ID, j)}
		}
		seen[n.ID] = i
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func checkNodeFields(n *Node, path string, lim Limits) error {
	bad := func(field, msg string) error { return &DecodeError{Path: path + "." + field, Msg: msg} }
	switch {
	case n.ID == "":
		return bad("node_id", "is required")
	case len(n.ID) > lim.MaxIDLength:
		return bad("node_id", fmt.Sprintf("is %d bytes, over the limit of %d", len(n.ID), lim.MaxIDLength))
	case IsReserved(n.ID):
		return bad("node_id", fmt.Sprintf("%q is reserved for the expression context (reserved: %s)", n.ID, strings.Join(ReservedNames, ", ")))
	case strings.ContainsAny(n.ID, "\x00\n\r\t"):
		return bad("node_id", "may not contain control characters")
	case n.Kind == "":
		return bad("kind", "is required (one of "+kindList()+")")
	case !n.Kind.valid():
		return bad("kind", fmt.Sprintf("unknown kind %q (one of %s)", n.Kind, kindList()))
	}
	switch n.Routing {
	case "", RoutingFirst, RoutingAll:
	default:
		return bad("routing", fmt.Sprintf("unknown routing %q (first or all)", n.Routing))
	}
	switch n.Dispatch {
	case "", DispatchParallel, DispatchSequential:
	default:
		return bad("dispatch", fmt.Sprintf("unknown dispatch %q (parallel or sequential)", n.Dispatch))
	}
	switch n.ParallelFailureMode {
	case "", FailContinue, FailFast, FailAnySuccess:
	default:
		return bad("parallel_failure_mode", fmt.Sprintf("unknown mode %q (continue, fail_fast or any_success)", n.ParallelFailureMode))
	}
	if n.Timeout < 0 {
		return bad("timeout", "must be a number of seconds ≥ 0")
	}
	if r := n.Retry; r != nil {
		if r.MaxAttempts < 1 || r.MaxAttempts > 100 {
			return bad("retry.max_attempts", fmt.Sprintf("must be between 1 and 100, got %d", r.MaxAttempts))
		}
		switch r.Backoff {
		case "", "fixed", "exponential":
		default:
			return bad("retry.backoff", fmt.Sprintf("unknown backoff %q (fixed or exponential)", r.Backoff))
		}
		if r.InitialDelaySeconds < 0 || r.InitialDelaySeconds > 3600 {
			return bad("retry.initial_delay_seconds", "must be between 0 and 3600")
		}
	}
	for k, v := range n.InputMap {
		if len(v) > lim.MaxExpressionLength {
			return bad("input_map."+k, fmt.Sprintf("expression is %d bytes, over the limit of %d", len(v), lim.MaxExpressionLength))
		}
	}
	for k, v := range n.SetState {
		if len(v) > lim.MaxExpressionLength {
			return bad("set_state."+k, fmt.Sprintf("expression is %d bytes, over the limit of %d", len(v), lim.MaxExpressionLength))
		}
	}
	for i, cs := range n.Cases {
		if len(cs.When) > lim.MaxExpressionLength {
			return bad(fmt.Sprintf("cases[%d].when", i), fmt.Sprintf("expression is %d bytes, over the limit of %d", len(cs.When), lim.MaxExpressionLength))
		}
	}
	for field, v := range map[string]string{"condition": n.Condition, "items_path": n.ItemsPath} {
		if len(v) > lim.MaxExpressionLength {
			return bad(field, fmt.Sprintf("expression is %d bytes, over the limit of %d", len(v), lim.MaxExpressionLength))
		}
	}
	return nil
}

func checkEdgeFields(e *Edge, path string, lim Limits) error {
	bad := func(field, msg string) error { return &DecodeError{Path: path + "." + field, Msg: msg} }
	switch {
	case e.Source == "":
		return bad("source", "is required")
	case e.Target == "":
		return bad("target", "is required")
	case len(e.ID) > lim.MaxIDLength:
		return bad("id", fmt.Sprintf("is %d bytes, over the limit of %d", len(e.ID), lim.MaxIDLength))
	case len(e.Condition) > lim.MaxExpressionLength:
		return bad("condition", fmt.Sprintf("expression is %d bytes, over the limit of %d", len(e.Condition), lim.MaxExpressionLength))
	case e.MaxIterations < 0:
		return bad("max_iterations", "must be ≥ 1 on a loop edge (0 or absent on other edges)")
	}
	switch e.OnMaxReached {
	case "", OnMaxError, OnMaxContinue:
	default:
		return bad("on_max_reached", fmt.Sprintf("unknown value %q (error or continue)", e.OnMaxReached))
	}
	return nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// strictUnmarshal decodes one JSON value, refusing unknown fields and trailing data.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns encoding/json's errors into a DecodeError with a path.
func jsonError(path string, err error, data []byte) error {
	join := func(a, b string) string {
		if a == "" {
			return b
		}
		if b == "" {
			return a
		}
		return a + "." + b
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, int(syn.Offset))
		return &DecodeError{Path: path, Msg: fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, syn.Error())}
	case errors.As(err, &typ):
		field := typ.Field
		return &DecodeError{Path: join(path, field), Msg: fmt.Sprintf("wrong type: got JSON %s, want %s", typ.Value, goTypeName(typ.Type.String()))}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &DecodeError{Path: path, Msg: "truncated JSON: the document ends before the value is complete"}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &DecodeError{Path: join(path, strings.Trim(f, `"`)), Msg: "unknown field"}
	}
	return &DecodeError{Path: path, Msg: strings.TrimPrefix(msg, "json: ")}
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "map["):
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "string" || t == "engine.Kind":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "*engine.") || strings.HasPrefix(t, "engine."):
		return "an object"
	}
	return t
}

func lineCol(data []byte, off int) (int, int) {
	if off > len(data) {
		off = len(data)
	}
	line, col := 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
