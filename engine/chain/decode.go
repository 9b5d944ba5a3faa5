package chain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine/internal/clip"
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
	MaxPinnedBytes      int // the pinned outputs together (compact JSON); default 2 MiB

	// Per-run budgets: a run that uses more ends budget_exceeded.
	MaxNodeExecutions int   // node starts, map items and branches included; default 1,000,000
	MaxOutputBytes    int64 // outputs held in memory (approximate JSON bytes); default 128 MiB
	MaxStoredBytes    int64 // events and checkpoints written (approximate); default 256 MiB

	// Ceilings: a chain asking for more fails validation.
	MaxChainTimeout float64 // seconds; default 86,400 (a day)
	MaxIterations   int     // any loop edge's max_iterations; default 1,000,000
	MaxDepth        int     // sub-chain nesting (max_depth); default 10
}

// DefaultLimits are the limits used when a host sets none.
var DefaultLimits = Limits{
	MaxDocumentBytes:    16 << 20,
	MaxNodes:            10_000,
	MaxEdges:            50_000,
	MaxExpressionLength: 16 << 10,
	MaxMapItems:         10_000,
	MaxIDLength:         256,
	MaxPinnedBytes:      2 << 20,
	MaxNodeExecutions:   1_000_000,
	MaxOutputBytes:      128 << 20,
	MaxStoredBytes:      256 << 20,
	MaxChainTimeout:     86_400,
	MaxIterations:       1_000_000,
	MaxDepth:            10,
}

// WithDefaults fills zero fields from DefaultLimits.
func (l Limits) WithDefaults() Limits {
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
	if l.MaxPinnedBytes > 0 {
		d.MaxPinnedBytes = l.MaxPinnedBytes
	}
	if l.MaxNodeExecutions > 0 {
		d.MaxNodeExecutions = l.MaxNodeExecutions
	}
	if l.MaxOutputBytes > 0 {
		d.MaxOutputBytes = l.MaxOutputBytes
	}
	if l.MaxStoredBytes > 0 {
		d.MaxStoredBytes = l.MaxStoredBytes
	}
	if l.MaxChainTimeout > 0 {
		d.MaxChainTimeout = l.MaxChainTimeout
	}
	if l.MaxIterations > 0 {
		d.MaxIterations = l.MaxIterations
	}
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	return d
}

// The rules of decode problems (DecodeError.Rule, Problem.Rule).
const (
	DecodeSyntax       = "json_syntax"   // JSON that does not parse, or ends early
	DecodeEncoding     = "encoding"      // the document is not UTF-8
	DecodeWrongType    = "wrong_type"    // a value of another JSON type than the field's
	DecodeUnknownField = "unknown_field" // a key the format does not have
	DecodeRequired     = "required"      // a field that must be given is not
	DecodeOverLimit    = "over_limit"    // a size or count over the host's limits
	DecodeDuplicateID  = "duplicate_id"  // two nodes (or edges) share an id
	DecodeBadValue     = "bad_value"     // a value the field does not allow
)

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
	lim = lim.WithDefaults()
	if len(data) > lim.MaxDocumentBytes {
		return nil, nil, &DecodeError{Rule: DecodeOverLimit, Msg: fmt.Sprintf("document is %d bytes, over the limit of %d", len(data), lim.MaxDocumentBytes)}
	}
	if !utf8.Valid(data) {
		return nil, nil, &DecodeError{Rule: DecodeEncoding, Msg: fmt.Sprintf("document is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(data))}
	}
	// The top level must be an object; its exact "type" key (field names are
	// case-sensitive) tells an A2E request from a studio chain.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, jsonError("", err, data)
	}
	if top == nil {
		return nil, nil, &DecodeError{Rule: DecodeWrongType, Msg: "wrong type: got JSON null, want an object (a chain document or an A2E chain/req message)"}
	}
	if raw, ok := top["type"]; ok && string(raw) != "null" {
		var typ string
		if err := json.Unmarshal(raw, &typ); err != nil {
			return nil, nil, jsonError("type", err, raw)
		}
		if typ != TypeRequest {
			return nil, nil, &DecodeError{Path: "type", Rule: DecodeBadValue, Msg: fmt.Sprintf("unknown message type %q (a chain document has no type; an A2E request has type %q)", typ, TypeRequest)}
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
	Name             string                     `json:"name"`
	Description      string                     `json:"description"`
	EntryNode        string                     `json:"entry_node"`
	StrictRouting    bool                       `json:"strict_routing"`
	StrictConditions bool                       `json:"strict_conditions"`
	Timeout          float64                    `json:"timeout"`
	MaxConcurrency   int                        `json:"max_concurrency"`
	MaxDepth         int                        `json:"max_depth"`
	SampleInput      map[string]any             `json:"sample_input"`
	Budget           *ModelBudget               `json:"budget"`
	Nodes            []json.RawMessage          `json:"nodes"`
	Edges            []json.RawMessage          `json:"edges"`
	Tests            []json.RawMessage          `json:"tests"`
	PinnedOutputs    map[string]json.RawMessage `json:"pinned_outputs"`
	Notes            []json.RawMessage          `json:"notes"`
}

func decodeChain(data []byte, lim Limits) (*Chain, error) {
	var f chainFields
	if err := strictUnmarshalAt("", data, &f); err != nil {
		return nil, err
	}
	if f.Nodes == nil {
		return nil, &DecodeError{Path: "nodes", Rule: DecodeRequired, Msg: "is required: a chain document needs a list of nodes (it may be empty)"}
	}
	c := &Chain{
		Name: f.Name, Description: f.Description, EntryNode: f.EntryNode,
		StrictRouting: f.StrictRouting, StrictConditions: f.StrictConditions,
		Timeout: f.Timeout, MaxConcurrency: f.MaxConcurrency, MaxDepth: f.MaxDepth,
		SampleInput: f.SampleInput, Budget: f.Budget,
	}
	if err := checkChainFields(c, lim); err != nil {
		return nil, err
	}
	nodes, err := decodeNodes(f.Nodes, lim)
	if err != nil {
		return nil, err
	}
	c.Nodes = nodes
	if len(f.Edges) > lim.MaxEdges {
		return nil, &DecodeError{Path: "edges", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d edges, over the limit of %d", len(f.Edges), lim.MaxEdges)}
	}
	c.Edges = make([]Edge, 0, len(f.Edges))
	for i, raw := range f.Edges {
		e, err := decodeEdge("edges", i, raw, lim)
		if err != nil {
			return nil, err
		}
		c.Edges = append(c.Edges, e)
	}
	if err := Normalize(c); err != nil {
		return nil, err
	}
	if c.Tests, err = decodeTests(f.Tests); err != nil {
		return nil, err
	}
	if c.PinnedOutputs, err = decodePins(f.PinnedOutputs, lim); err != nil {
		return nil, err
	}
	if c.Notes, err = decodeNotes(f.Notes, lim); err != nil {
		return nil, err
	}
	return c, nil
}

func checkChainFields(c *Chain, lim Limits) error {
	if errs := chainFieldErrors(c, lim); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// chainFieldErrors are every problem of the chain's own fields.
func chainFieldErrors(c *Chain, lim Limits) []*DecodeError {
	var errs []*DecodeError
	if c.Timeout < 0 {
		errs = append(errs, &DecodeError{Path: "timeout", Rule: DecodeBadValue, Msg: "must be a number of seconds ≥ 0"})
	}
	if c.MaxConcurrency < 0 {
		errs = append(errs, &DecodeError{Path: "max_concurrency", Rule: DecodeBadValue, Msg: "must be ≥ 0 (0 means the host default)"})
	}
	if c.MaxDepth < 0 {
		errs = append(errs, &DecodeError{Path: "max_depth", Rule: DecodeBadValue, Msg: "must be ≥ 1 (0 means the default)"})
	}
	if len(c.EntryNode) > lim.MaxIDLength {
		errs = append(errs, &DecodeError{Path: "entry_node", Rule: DecodeOverLimit, Msg: fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(c.EntryNode), lim.MaxIDLength)})
	}
	return errs
}

func decodeNodes(raws []json.RawMessage, lim Limits) ([]Node, error) {
	if len(raws) > lim.MaxNodes {
		return nil, &DecodeError{Path: "nodes", Rule: DecodeOverLimit, Msg: fmt.Sprintf("%d nodes, over the limit of %d", len(raws), lim.MaxNodes)}
	}
	nodes := make([]Node, 0, len(raws))
	seen := make(map[string]int, len(raws))
	for i, raw := range raws {
		n, path, err := decodeNode("nodes", i, raw, lim)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[n.ID]; dup {
			return nil, &DecodeError{Path: path + ".node_id", Rule: DecodeDuplicateID, Msg: fmt.Sprintf("duplicate node id %q (also nodes[%d])", n.ID, j)}
		}
		seen[n.ID] = i
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// decodeNode strictly decodes list[i], one node, and checks its fields; the
// path it returns names the node for later errors.
func decodeNode(list string, i int, raw json.RawMessage, lim Limits) (Node, string, error) {
	path := fmt.Sprintf("%s[%d]", list, i)
	var id struct {
		ID any `json:"node_id"`
	}
	_ = json.Unmarshal(raw, &id) // only to name the node in errors
	if s, ok := id.ID.(string); ok && s != "" {
		path += fmt.Sprintf(" %q", clip.String(s, 64))
	}
	var n Node
	if err := strictUnmarshalAt(path, raw, &n); err != nil {
		return Node{}, path, err
	}
	if err := checkNodeFields(&n, path, lim); err != nil {
		return Node{}, path, err
	}
	return n, path, nil
}

// decodeEdge strictly decodes list[i], one edge, and checks its fields.
func decodeEdge(list string, i int, raw json.RawMessage, lim Limits) (Edge, error) {
	var e Edge
	path := fmt.Sprintf("%s[%d]", list, i)
	if err := strictUnmarshalAt(path, raw, &e); err != nil {
		return Edge{}, err
	}
	if e.ID != "" {
		path += fmt.Sprintf(" %q", clip.String(e.ID, 64))
	} else {
		path += fmt.Sprintf(" %q -> %q", clip.String(e.Source, 64), clip.String(e.Target, 64))
	}
	if err := checkEdgeFields(&e, path, lim); err != nil {
		return Edge{}, err
	}
	return e, nil
}

func checkNodeFields(n *Node, path string, lim Limits) error {
	if errs := nodeFieldErrors(n, path, lim); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// nodeFieldErrors are every problem of a decoded node's fields, the one a
// strict decode reports first.
func nodeFieldErrors(n *Node, path string, lim Limits) []*DecodeError {
	var errs []*DecodeError
	bad := func(rule, field, msg string) {
		errs = append(errs, &DecodeError{Path: path + "." + field, Rule: rule, Msg: msg})
	}
	switch {
	case n.ID == "":
		bad(DecodeRequired, "node_id", "is required")
	case len(n.ID) > lim.MaxIDLength:
		bad(DecodeOverLimit, "node_id", fmt.Sprintf("is %d bytes, over the limit of %d", len(n.ID), lim.MaxIDLength))
	case IsReserved(n.ID):
		bad(DecodeBadValue, "node_id", fmt.Sprintf("%q is reserved for the expression context (reserved: %s)", n.ID, strings.Join(ReservedNames, ", ")))
	case strings.IndexFunc(n.ID, unicode.IsControl) >= 0:
		bad(DecodeBadValue, "node_id", "may not contain control characters")
	}
	switch {
	case n.Kind == "":
		bad(DecodeRequired, "kind", "is required (one of "+kindList()+")")
	case !n.Kind.valid():
		bad(DecodeBadValue, "kind", fmt.Sprintf("unknown kind %q (one of %s)", n.Kind, kindList()))
	}
	switch n.Routing {
	case "", RoutingFirst, RoutingAll:
	default:
		bad(DecodeBadValue, "routing", fmt.Sprintf("unknown routing %q (first or all)", n.Routing))
	}
	switch n.Dispatch {
	case "", DispatchParallel, DispatchSequential:
	default:
		bad(DecodeBadValue, "dispatch", fmt.Sprintf("unknown dispatch %q (parallel or sequential)", n.Dispatch))
	}
	switch n.ParallelFailureMode {
	case "", FailContinue, FailFast, FailAnySuccess:
	default:
		bad(DecodeBadValue, "parallel_failure_mode", fmt.Sprintf("unknown mode %q (continue, fail_fast or any_success)", n.ParallelFailureMode))
	}
	// Successor fields name nodes, so they obey the id limit; they become
	// edges whose auto ids are built from them.
	for _, f := range []struct{ name, v string }{{"true_node", n.TrueNode}, {"false_node", n.FalseNode}, {"next_node", n.NextNode}, {"map_node", n.MapNode}} {
		if len(f.v) > lim.MaxIDLength {
			bad(DecodeOverLimit, f.name, fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(f.v), lim.MaxIDLength))
		}
	}
	for i, b := range n.Branches {
		if len(b) > lim.MaxIDLength {
			bad(DecodeOverLimit, fmt.Sprintf("branches[%d]", i), fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(b), lim.MaxIDLength))
		}
	}
	if n.Timeout < 0 {
		bad(DecodeBadValue, "timeout", "must be a number of seconds ≥ 0")
	}
	if r := n.Retry; r != nil {
		if r.MaxAttempts < 1 || r.MaxAttempts > 100 {
			bad(DecodeBadValue, "retry.max_attempts", fmt.Sprintf("must be between 1 and 100, got %d", r.MaxAttempts))
		}
		switch r.Backoff {
		case "", "fixed", "exponential":
		default:
			bad(DecodeBadValue, "retry.backoff", fmt.Sprintf("unknown backoff %q (fixed or exponential)", r.Backoff))
		}
		if r.InitialDelaySeconds < 0 || r.InitialDelaySeconds > 3600 {
			bad(DecodeBadValue, "retry.initial_delay_seconds", "must be between 0 and 3600")
		}
	}
	tooLong := func(field, v string) {
		if len(v) > lim.MaxExpressionLength {
			bad(DecodeOverLimit, field, fmt.Sprintf("expression is %d bytes, over the limit of %d", len(v), lim.MaxExpressionLength))
		}
	}
	for k, v := range n.InputMap {
		tooLong("input_map."+k, v)
	}
	for k, v := range n.SetState {
		tooLong("set_state."+k, v)
	}
	for i, cs := range n.Cases {
		tooLong(fmt.Sprintf("cases[%d].when", i), cs.When)
	}
	tooLong("condition", n.Condition)
	tooLong("items_path", n.ItemsPath)
	return errs
}

func checkEdgeFields(e *Edge, path string, lim Limits) error {
	if errs := edgeFieldErrors(e, path, lim); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// edgeFieldErrors are every problem of a decoded edge's fields, the one a
// strict decode reports first.
func edgeFieldErrors(e *Edge, path string, lim Limits) []*DecodeError {
	var errs []*DecodeError
	bad := func(rule, field, msg string) {
		errs = append(errs, &DecodeError{Path: path + "." + field, Rule: rule, Msg: msg})
	}
	if e.Source == "" {
		bad(DecodeRequired, "source", "is required")
	}
	if e.Target == "" {
		bad(DecodeRequired, "target", "is required")
	}
	if len(e.Source) > lim.MaxIDLength {
		bad(DecodeOverLimit, "source", fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(e.Source), lim.MaxIDLength))
	}
	if len(e.Target) > lim.MaxIDLength {
		bad(DecodeOverLimit, "target", fmt.Sprintf("names a node id of %d bytes, over the limit of %d", len(e.Target), lim.MaxIDLength))
	}
	if len(e.ID) > lim.MaxIDLength && !isAutoEdgeID(e) {
		// An id Normalize derived from the edge's endpoints ("a->b", "a->b#2")
		// is bounded by the node id limit and must survive a round trip.
		bad(DecodeOverLimit, "id", fmt.Sprintf("is %d bytes, over the limit of %d", len(e.ID), lim.MaxIDLength))
	}
	if len(e.Condition) > lim.MaxExpressionLength {
		bad(DecodeOverLimit, "condition", fmt.Sprintf("expression is %d bytes, over the limit of %d", len(e.Condition), lim.MaxExpressionLength))
	}
	if e.MaxIterations < 0 {
		bad(DecodeBadValue, "max_iterations", "must be ≥ 1 on a loop edge (0 or absent on other edges)")
	}
	switch e.OnMaxReached {
	case "", OnMaxError, OnMaxContinue:
	default:
		bad(DecodeBadValue, "on_max_reached", fmt.Sprintf("unknown value %q (error or continue)", e.OnMaxReached))
	}
	return errs
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// isAutoEdgeID reports whether e's id has the form Normalize gives an unnamed
// edge: "source->target", or "source->target#n" with n ≥ 2.
func isAutoEdgeID(e *Edge) bool {
	base := e.Source + "->" + e.Target
	rest, ok := strings.CutPrefix(e.ID, base)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	num, ok := strings.CutPrefix(rest, "#")
	if !ok || num == "" || len(num) > 9 || num[0] == '0' {
		return false
	}
	for _, r := range num {
		if r < '0' || r > '9' {
			return false
		}
	}
	return num != "1"
}

// strictUnmarshalAt decodes one JSON object into v, refusing field names that
// are not exactly (case-sensitively) v's JSON names, at any depth of v's own
// structs, and turns errors into a *DecodeError under path.
func strictUnmarshalAt(path string, data []byte, v any) error {
	if err := checkKeys(path, data, reflect.TypeOf(v)); err != nil {
		return err
	}
	if err := strictUnmarshal(data, v); err != nil {
		return jsonError(path, err, data)
	}
	return nil
}

// requiredKeys are keys that must be present even though their zero value is
// accepted (the validator reports an empty handle or when).
var requiredKeys = map[reflect.Type][]string{
	reflect.TypeFor[Case](): {"handle", "when"},
}

// checkKeys walks data along type t and reports the first object key that is
// not one of t's JSON field names exactly, with its full path. encoding/json
// matches names case-insensitively and names no path in its unknown-field
// error, so a strict decoder checks keys itself. Values that are not what t
// expects are left for encoding/json to report.
func checkKeys(path string, data []byte, t reflect.Type) error {
	var first *DecodeError
	walkKeys(path, data, t, func(e *DecodeError) bool { first = e; return false })
	if first != nil {
		return first
	}
	return nil
}

// walkKeys is checkKeys that hands each problem to report, and stops when
// report returns false; it returns false when it stopped.
func walkKeys(path string, data []byte, t reflect.Type, report func(*DecodeError) bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return true
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic first error
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				if !report(unknownField(joinPath(path, k), k, fields)) {
					return false
				}
				continue
			}
			if !walkKeys(joinPath(path, k), obj[k], ft, report) {
				return false
			}
		}
		for _, k := range requiredKeys[t] {
			if _, ok := obj[k]; !ok {
				if !report(&DecodeError{Path: joinPath(path, k), Rule: DecodeRequired, Msg: "is required"}) {
					return false
				}
			}
		}
	case reflect.Slice:
		et := t.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct {
			return true
		}
		var items []json.RawMessage
		if json.Unmarshal(data, &items) != nil {
			return true
		}
		for i, raw := range items {
			if !walkKeys(fmt.Sprintf("%s[%d]", path, i), raw, et, report) {
				return false
			}
		}
	}
	return true
}

// unknownField is the problem of key k, which is none of fields, at path.
func unknownField(path, k string, fields map[string]reflect.Type) *DecodeError {
	msg := "unknown field"
	for name := range fields {
		if strings.EqualFold(name, k) {
			msg = fmt.Sprintf("unknown field (field names are case-sensitive: did you mean %q?)", name)
		}
	}
	return &DecodeError{Path: path, Rule: DecodeUnknownField, Msg: msg}
}

var jsonFieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields maps a struct's JSON field names to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := jsonFieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	index := jsonFieldIndex(t)
	m := make(map[string]reflect.Type, len(index))
	for name, i := range index {
		m[name] = t.Field(i).Type
	}
	jsonFieldCache.Store(t, m)
	return m
}

var jsonIndexCache sync.Map // reflect.Type → map[string]int

// jsonFieldIndex maps a struct's JSON field names to their field indexes.
func jsonFieldIndex(t reflect.Type) map[string]int {
	if m, ok := jsonIndexCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = i
	}
	jsonIndexCache.Store(t, m)
	return m
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "." + b
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
	join := joinPath
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		if syn.Error() == "unexpected end of JSON input" {
			line, col := LineCol(data, int(syn.Offset))
			return &DecodeError{Path: path, Rule: DecodeSyntax, Line: line, Column: col,
				Msg:       fmt.Sprintf("truncated JSON: the document ends at line %d, column %d before the value is complete", line, col),
				placeless: "truncated JSON: the document ends before the value is complete"}
		}
		// Offset counts the bytes read, the offending one included.
		line, col := LineCol(data, int(syn.Offset)-1)
		return &DecodeError{Path: path, Rule: DecodeSyntax, Line: line, Column: col,
			Msg:       fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, syn.Error()),
			placeless: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		field := typ.Field
		return &DecodeError{Path: join(path, field), Rule: DecodeWrongType, Msg: fmt.Sprintf("wrong type: got JSON %s, want %s", typ.Value, goTypeName(typ.Type.String()))}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &DecodeError{Path: path, Rule: DecodeSyntax, Msg: "truncated JSON: the document ends before the value is complete"}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return &DecodeError{Path: join(path, strings.Trim(f, `"`)), Rule: DecodeUnknownField, Msg: "unknown field"}
	}
	return &DecodeError{Path: path, Msg: strings.TrimPrefix(msg, "json: ")}
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "map["):
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case t == "string" || t == "chain.Kind":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "*chain.") || strings.HasPrefix(t, "chain.") || strings.HasPrefix(t, "struct"):
		return "an object"
	}
	return t
}

// LineCol returns the 1-based line and column (in characters) of byte offset
// off in data, for error messages about JSON documents.
func LineCol(data []byte, off int) (int, int) {
	off = max(0, min(off, len(data)))
	line, col := 1, 1
	for _, b := range data[:off] {
		switch {
		case b == '\n':
			line++
			col = 1
		case utf8.RuneStart(b):
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
