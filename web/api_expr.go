package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// The expression editor's two endpoints: what a field can read
// (names, upstream nodes, the shape of the last run's data, functions), and
// a preview that evaluates an expression against the last run's data with
// the engine's evaluator under a small budget.

const (
	exprBodyLimit    = 64 << 10 // a preview request: an expression and a few ids
	exprPreviewBytes = 2000     // JSON text of a preview result shown, at most
	exprShapeDepth   = 4        // levels of a shape summary below a name
	exprShapeKeys    = 50       // keys listed per object
	exprShapeNodes   = 4000     // shape entries per answer, across every name
	exprShapeUp      = 200      // upstream nodes whose output is summarised
	exprEvalTimeout  = 250 * time.Millisecond
	exprRunsCached   = 4 // finished runs kept decoded (they never change)
)

// exprBudget bounds one preview evaluation, far below a run's.
var exprBudget = expr.Budget{MaxElements: 200_000, MaxBytes: 4 << 20}

// exprRunData is what a run recorded that expressions can read.
type exprRunData struct {
	runID   string
	test    string // set when the data is a chain test's in-memory run (no run yet)
	version int    // the chain version that test ran on
	status  engine.RunStatus
	input   map[string]any
	outputs map[string]any // node id → output, for the nodes that produced one
}

// exprRunCache keeps the last few finished runs decoded: a preview is
// evaluated on every keystroke and reading a run folds its whole log.
type exprRunCache struct {
	mu   sync.Mutex
	runs []*exprRunData // most recent use last
}

func (c *exprRunCache) get(id string) *exprRunData {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, d := range c.runs {
		if d.runID == id {
			c.runs = append(append(c.runs[:i:i], c.runs[i+1:]...), d)
			return d
		}
	}
	return nil
}

func (c *exprRunCache) put(d *exprRunData) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.runs {
		if o.runID == d.runID { // a chain's test data: the newer replaces it
			c.runs = append(c.runs[:i:i], c.runs[i+1:]...)
			break
		}
	}
	c.runs = append(c.runs, d)
	if len(c.runs) > exprRunsCached {
		c.runs = c.runs[len(c.runs)-exprRunsCached:]
	}
}

func finished(s engine.RunStatus) bool {
	return s != engine.StatusRunning && s != engine.StatusQueued && s != engine.StatusPaused
}

// lastRunData is the chain's latest run's data, or nil when it never ran.
func (s *Server) lastRunData(ctx context.Context, chainID, runID string) (*exprRunData, error) {
	if runID == "" {
		rs, _, err := s.db.ListRuns(ctx, store.RunFilter{ChainID: chainID, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, nil
		}
		runID = rs[0].ID
		if d := s.exprRuns.get(runID); d != nil && finished(rs[0].Status) {
			return d, nil
		}
	} else if d := s.exprRuns.get(runID); d != nil {
		return d, nil
	}
	r, err := s.db.GetRun(ctx, runID)
	if err != nil {
		return nil, storeErr(err, fmt.Sprintf("run %q", runID))
	}
	if r.ChainID != chainID {
		return nil, apiError(EINVALID, "wrong_run", fmt.Sprintf("run %s is not a run of chain %q", runID, chainID), map[string]any{"path": "run_id"})
	}
	d := &exprRunData{runID: r.ID, status: r.Status, input: r.Input, outputs: map[string]any{}}
	for _, n := range r.Nodes {
		if n.Status == engine.PhaseDone {
			d.outputs[n.NodeID] = n.Output
		}
	}
	if finished(r.Status) {
		s.exprRuns.put(d)
	}
	return d, nil
}

// exprTestRunTimeout bounds the in-memory run of a chain test a preview
// reads when the chain never ran (mocks stand in for anything outside).
const exprTestRunTimeout = 2 * time.Second

// exprData is the latest run's data, or, when the chain never ran, the data
// of its first test's in-memory run (its input and mocks), or nil.
// A test's data is kept per chain, with the version it ran on: while an
// expression is being typed the saved version often does not validate (a
// half-written expression), and the engine runs no invalid chain, so the
// last version whose test ran is what the preview reads meanwhile.
//
// A preview passes the expression being typed (typed, src): the test runs on
// the chain with that expression in its field, as it will be once saved.
func (s *Server) exprData(ctx context.Context, ch *store.Chain, runID string, typed *exprTarget, src string) (*exprRunData, error) {
	d, err := s.lastRunData(ctx, ch.ID, runID)
	if d != nil || err != nil || runID != "" || len(ch.Doc.Tests) == 0 {
		return d, err
	}
	key := "test:" + ch.ID
	last := s.exprRuns.get(key)
	if last != nil && last.version == ch.Version {
		return last, nil
	}
	doc := ch.Doc
	if typed != nil {
		doc, _ = engine.WithExpr(doc, typed.Node, typed.Edge, typed.Field, src)
	}
	tr, err := chaintest.RunTrace(ctx, doc, chaintest.Options{Registry: s.reg, Limits: s.cfg.Limits, Timeout: exprTestRunTimeout}, 0)
	if err != nil {
		return last, nil //nolint:nilerr // no data (or older data) is the preview's "not run yet" case
	}
	d = &exprRunData{runID: key, test: tr.Test, version: ch.Version, status: tr.Status, input: tr.Input, outputs: tr.Outputs}
	s.exprRuns.put(d)
	return d, nil
}

// describeData fills a context or preview answer's run_id / test / note.
func describeData(out map[string]any, d *exprRunData) {
	switch {
	case d == nil:
		out["note"] = "the chain has not run yet: names read null"
	case d.test != "":
		out["test"] = d.test
		out["note"] = fmt.Sprintf("the chain has not run yet: names read what its test %q gives (its input and mocks, run in memory)", d.test)
	default:
		out["run_id"] = d.runID
	}
}

// exprTarget reads which field is meant: node (or edge) and field.
type exprTarget struct {
	Node  string `json:"node"`
	Edge  string `json:"edge"`
	Field string `json:"field"`
	RunID string `json:"run_id"`
}

func (s *Server) exprField(ch *store.Chain, t exprTarget) (*engine.ExprField, error) {
	if t.Field == "" {
		return nil, apiError(EBADREQUEST, "bad_parameter", "field is required (condition, items_path, cases[N].when, input_map.KEY or set_state.KEY)", map[string]any{"path": "field"})
	}
	if (t.Node == "") == (t.Edge == "") {
		return nil, apiError(EBADREQUEST, "bad_parameter", "name exactly one of node and edge", map[string]any{"path": "node"})
	}
	if t.Node != "" && ch.Doc.Node(t.Node) == nil {
		return nil, apiError(ENOTFOUND, "not_found", fmt.Sprintf("node %q is not in chain %q", t.Node, ch.ID), map[string]any{"node_id": t.Node})
	}
	f, err := engine.ExprFieldContext(ch.Doc, t.Node, t.Edge, t.Field)
	if err != nil {
		return nil, apiError(EINVALID, "bad_field", err.Error(), map[string]any{"path": "field", "node_id": t.Node, "edge_id": t.Edge})
	}
	return f, nil
}

// exprScope is what the expression reads at the field, from the run's data:
// the field's names (exprOutput for `output`), node_results, and each node
// id as {output}. Lookups are lazy: one keystroke's preview reads a few
// names of a chain that may have thousands of nodes.
type exprScope struct {
	f      *engine.ExprField
	d      *exprRunData
	out    any
	hasOut bool
}

func newExprScope(f *engine.ExprField, d *exprRunData) *exprScope {
	s := &exprScope{f: f, d: d}
	s.out, s.hasOut = exprOutput(f, d)
	return s
}

// exprOutput is `output` at the field: the node's own output, or what it
// received (one source's output, an object keyed by several sources' ids,
// the run's input for a root).
func exprOutput(f *engine.ExprField, d *exprRunData) (any, bool) {
	if d == nil {
		return nil, false
	}
	switch {
	case len(f.From) == 1:
		out, ok := d.outputs[f.From[0]]
		return out, ok
	case len(f.From) == 0:
		return d.input, true
	}
	m := map[string]any{}
	for _, id := range f.From {
		if out, ok := d.outputs[id]; ok {
			m[id] = out
		}
	}
	return m, true
}

func (s *exprScope) Lookup(name string) (any, bool) {
	if engine.IsReserved(name) && name != "node_results" && !contains(s.f.Names, name) {
		return nil, false // not offered at this field: it reads nothing, as in a run
	}
	switch name {
	case "steps", "when":
		return map[string]any{}, true
	case "output":
		return s.out, s.hasOut
	}
	if s.d == nil {
		return nil, false
	}
	switch name {
	case "input", "trigger":
		return s.d.input, true
	case "node_results":
		m := make(map[string]any, len(s.d.outputs))
		for id, out := range s.d.outputs {
			m[id] = out
		}
		return m, true
	}
	if out, ok := s.d.outputs[name]; ok {
		return map[string]any{"output": out}, true
	}
	return nil, false
}

// Root builds the whole context, for expressions that read `@`.
func (s *exprScope) Root() map[string]any {
	m := map[string]any{}
	names := append([]string{"node_results"}, s.f.Names...)
	if s.d != nil {
		for id := range s.d.outputs {
			names = append(names, id)
		}
	}
	for _, n := range names {
		if v, ok := s.Lookup(n); ok {
			m[n] = v
		}
	}
	return m
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Shape is a bounded summary of a value's structure for completion.
type Shape struct {
	Type string            `json:"type"` // object, array, string, number, boolean, null
	Keys map[string]*Shape `json:"keys,omitempty"`
	Elem *Shape            `json:"elem,omitempty"` // an array's first element
	More bool              `json:"more,omitempty"` // keys were left out
}

func shapeOf(v any, depth int, budget *int) *Shape {
	*budget--
	switch x := v.(type) {
	case map[string]any:
		s := &Shape{Type: "object"}
		if depth <= 0 || *budget <= 0 {
			s.More = len(x) > 0
			return s
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > exprShapeKeys {
			keys, s.More = keys[:exprShapeKeys], true
		}
		s.Keys = make(map[string]*Shape, len(keys))
		for _, k := range keys {
			if *budget <= 0 {
				s.More = true
				break
			}
			s.Keys[k] = shapeOf(x[k], depth-1, budget)
		}
		return s
	case []any:
		s := &Shape{Type: "array"}
		if len(x) > 0 && depth > 0 && *budget > 0 {
			s.Elem = shapeOf(x[0], depth-1, budget)
		}
		return s
	case string:
		return &Shape{Type: "string"}
	case float64, int, int64, json.Number:
		return &Shape{Type: "number"}
	case bool:
		return &Shape{Type: "boolean"}
	case nil:
		return &Shape{Type: "null"}
	}
	return &Shape{Type: "unknown"}
}

// exprName is one completion of a context name.
type exprName struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

var exprNameDetail = map[string]string{
	"output":       "this field's data (see output_of)",
	"input":        "the run's input",
	"trigger":      "the run's input (agent chains' name for it)",
	"state":        "keys set by set_state (not kept with a run: null in previews)",
	"node_results": "every finished node's output, by id",
	"steps":        "outputs of the links a sequential dispatch already ran",
	"when":         "the guards of a sequential dispatch, by link",
	"item":         "the map item this body runs for",
	"index":        "the map item's position",
	"error":        "the failure this handler handles: node, message, code, attempts",
	"resume":       "the value the run was resumed with",
}

// GET /v1/chains/{id}/expr/context?node=&edge=&field=&run_id=
func (s *Server) exprContext(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.db.GetChain(ctx, c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	t := exprTarget{Node: c.QueryParam("node"), Edge: c.QueryParam("edge"), Field: c.QueryParam("field"), RunID: c.QueryParam("run_id")}
	f, err := s.exprField(ch, t)
	if err != nil {
		return err
	}
	d, err := s.exprData(ctx, ch, t.RunID, nil, "")
	if err != nil {
		return err
	}
	names := make([]exprName, 0, len(f.Names))
	for _, n := range f.Names {
		names = append(names, exprName{Name: n, Detail: exprNameDetail[n]})
	}
	out := map[string]any{
		"names": names, "upstream": orEmpty(f.Upstream), "output_of": f.OutputOf, "from": orEmpty(f.From),
		"functions": expr.Functions(), "run_id": "",
	}
	shapes := map[string]*Shape{}
	describeData(out, d)
	if d != nil {
		budget := exprShapeNodes
		sc := newExprScope(f, d)
		for _, n := range []string{"output", "input", "trigger"} {
			if v, ok := sc.Lookup(n); ok && contains(f.Names, n) {
				shapes[n] = shapeOf(v, exprShapeDepth, &budget)
			}
		}
		for i, id := range f.Upstream {
			if i >= exprShapeUp || budget <= 0 {
				break
			}
			if v, ok := d.outputs[id]; ok {
				shapes[id] = &Shape{Type: "object", Keys: map[string]*Shape{"output": shapeOf(v, exprShapeDepth, &budget)}}
			}
		}
	}
	out["schema_shapes"] = s.schemaShapes(ch.Doc, f, shapes)
	out["shapes"] = shapes
	return c.JSON(http.StatusOK, out)
}

// schemaShapes fills in, from the tools' declared output schemas, the
// shapes no run gave (the chain never ran, or the run did not reach the
// node), so a field completes `fetch.output.` before the first run.
// It returns the names it filled.
func (s *Server) schemaShapes(c *engine.Chain, f *engine.ExprField, shapes map[string]*Shape) []string {
	filled := []string{}
	budget := exprShapeNodes
	for _, sh := range shapes {
		budget -= shapeSize(sh)
	}
	schemaOf := func(id string) map[string]any {
		for i := range c.Nodes {
			if n := &c.Nodes[i]; n.ID == id && n.Kind == engine.KindTool {
				sc, _ := s.reg.OutputSchema(n.Name)
				return sc
			}
		}
		return nil
	}
	if _, ok := shapes["output"]; !ok && contains(f.Names, "output") && len(f.From) == 1 {
		if sc := schemaOf(f.From[0]); sc != nil {
			shapes["output"] = shapeOfSchema(sc, exprShapeDepth, &budget)
			filled = append(filled, "output")
		}
	}
	for i, id := range f.Upstream {
		if i >= exprShapeUp || budget <= 0 {
			break
		}
		if _, ok := shapes[id]; ok {
			continue
		}
		if sc := schemaOf(id); sc != nil {
			shapes[id] = &Shape{Type: "object", Keys: map[string]*Shape{"output": shapeOfSchema(sc, exprShapeDepth, &budget)}}
			filled = append(filled, id)
		}
	}
	return filled
}

func shapeSize(sh *Shape) int {
	if sh == nil {
		return 0
	}
	n := 1 + shapeSize(sh.Elem)
	for _, k := range sh.Keys {
		n += shapeSize(k)
	}
	return n
}

// shapeOfSchema is shapeOf for a JSON Schema: its type, properties and
// items, as deep and as many as shapeOf would list.
func shapeOfSchema(sc map[string]any, depth int, budget *int) *Shape {
	*budget--
	sh := &Shape{Type: schemaType(sc)}
	if depth <= 0 {
		if sh.Type == "" {
			sh.Type = "any"
		}
		return sh
	}
	if props, ok := sc["properties"].(map[string]any); ok {
		if sh.Type == "" {
			sh.Type = "object"
		}
		sh.Keys = map[string]*Shape{}
		for k, v := range props {
			if len(sh.Keys) >= exprShapeKeys || *budget <= 0 {
				sh.More = true
				break
			}
			sub, _ := v.(map[string]any)
			sh.Keys[k] = shapeOfSchema(sub, depth-1, budget)
		}
	}
	if items, ok := sc["items"].(map[string]any); ok && *budget > 0 {
		if sh.Type == "" {
			sh.Type = "array"
		}
		sh.Elem = shapeOfSchema(items, depth-1, budget)
	}
	if sh.Type == "" {
		sh.Type = "any" // the schema does not say: any JSON value
	}
	return sh
}

// schemaType is a schema's JSON type ("integer" is a number; of a list of
// types, the first that is not null); "" when it says none.
func schemaType(sc map[string]any) string {
	t := sc["type"]
	if l, ok := t.([]any); ok {
		t = nil
		for _, x := range l {
			if x != "null" {
				t = x
				break
			}
		}
	}
	switch t {
	case "integer":
		return "number"
	case nil:
		return ""
	}
	str, _ := t.(string)
	return str
}

// exprPreviewRequest is the body of POST /v1/chains/{id}/expr/preview.
type exprPreviewRequest struct {
	exprTarget
	Expr string `json:"expr"`
}

// POST /v1/chains/{id}/expr/preview {node|edge, field, expr, run_id?}
func (s *Server) exprPreview(c echo.Context) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, exprBodyLimit+1))
	if err != nil {
		return apiError(EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
	}
	if len(body) > exprBodyLimit {
		return apiError(ETOOLARGE, "too_large", fmt.Sprintf("a preview request is at most %d bytes", exprBodyLimit), nil)
	}
	var req exprPreviewRequest
	if err := bindJSONBytes(body, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Expr) == "" {
		return apiError(EBADREQUEST, "bad_parameter", "expr is required", map[string]any{"path": "expr"})
	}
	if len(req.Expr) > expr.DefaultLimits.MaxLength {
		return apiError(ETOOLARGE, "too_large", fmt.Sprintf("expr is %d bytes; an expression is at most %d", len(req.Expr), expr.DefaultLimits.MaxLength), map[string]any{"path": "expr"})
	}
	ctx := c.Request().Context()
	ch, err := s.db.GetChain(ctx, c.Param("id"))
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", c.Param("id")))
	}
	f, err := s.exprField(ch, req.exprTarget)
	if err != nil {
		return err
	}
	d, err := s.exprData(ctx, ch, req.RunID, &req.exprTarget, req.Expr)
	if err != nil {
		return err
	}
	out := map[string]any{"run_id": ""}
	describeData(out, d)
	// The expression's own faults are the preview's answer, not a bad
	// request: 200 with "error", as the field's check shows them.
	e, err := expr.Parse(req.Expr)
	if err != nil {
		pe := map[string]any{"code": "expression_syntax", "message": err.Error()}
		var se *expr.SyntaxError
		if errors.As(err, &se) {
			line, col := engine.ExprPlace(se.Src, se.Pos)
			pe["message"], pe["pos"], pe["line"], pe["column"] = fmt.Sprintf("%s (at line %d, column %d)", se.Msg, line, col), se.Pos, line, col
		}
		out["error"] = pe
		return c.JSON(http.StatusOK, out)
	}
	warnings, fixes := exprWarnings(ch.Doc, f, e), bareWordFixes(ch.Doc, f, e)
	sc := newExprScope(f, d)
	ectx, cancel := context.WithTimeout(expr.WithBudget(ctx, exprBudget), exprEvalTimeout)
	defer cancel()
	v, err := e.EvalContext(ectx, sc, false)
	if err != nil {
		msg := err.Error()
		var ee *expr.EvalError
		if errors.As(err, &ee) {
			msg = ee.Msg
		}
		out["error"] = map[string]any{"code": "expression_eval", "message": msg}
		out["warnings"], out["fixes"] = warnings, fixes
		return c.JSON(http.StatusOK, out)
	}
	text, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("preview: marshal the result: %w", err)
	}
	truncated := len(text) > exprPreviewBytes
	if truncated {
		text = text[:exprPreviewBytes]
	}
	out["value"], out["type"], out["truncated"], out["warnings"], out["fixes"] = string(text), jsonType(v), truncated, warnings, fixes
	return c.JSON(http.StatusOK, out)
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	return "number"
}

// exprWarnings names the names e reads that resolve to nothing at the field,
// with the closest name that does ("did you mean").
func exprWarnings(c *engine.Chain, f *engine.ExprField, e *expr.Expr) []map[string]string {
	known := func(n string) bool { return contains(f.Names, n) || (c.Node(n) != nil && !engine.IsReserved(n)) }
	cands := append(append([]string{}, f.Names...), f.Upstream...)
	out := []map[string]string{}
	seen := map[string]bool{}
	bare := map[string]bool{} // explained by its fix (bareWordFixes), unless it looks like a typo
	for _, b := range expr.BareWords(e, known) {
		bare[b.Word] = true
	}
	for _, r := range e.Refs() {
		name := r.Root
		if name == "" || name == "@" || known(name) || seen[name] {
			continue
		}
		seen[name] = true
		w := map[string]string{"name": name, "message": fmt.Sprintf("%s is neither a node nor a name this field can read; it is always null", name)}
		alt := expr.Suggest(name, cands)
		if alt == "" && bare[name] {
			continue
		}
		if alt != "" {
			w["did_you_mean"] = alt
			w["message"] += "; did you mean " + alt + "?"
		}
		out = append(out, w)
	}
	return out
}

// exprFix is a one-click edit: the whole expression rewritten.
type exprFix struct {
	Message string `json:"message"`
	Expr    string `json:"expr"`
}

// bareWordFixes offers, for each comparison with a bare word that names
// nothing (category == billing), the expression with the word quoted as
// text (category == 'billing'), when that rewrite parses and fixes it.
func bareWordFixes(c *engine.Chain, f *engine.ExprField, e *expr.Expr) []exprFix {
	known := func(n string) bool { return contains(f.Names, n) || (c.Node(n) != nil && !engine.IsReserved(n)) }
	out := []exprFix{}
	for _, b := range expr.BareWords(e, known) {
		src := quoteOperand(e.Source(), b.Word)
		if src == "" {
			continue
		}
		ne, err := expr.Parse(src)
		if err != nil {
			continue
		}
		still := false
		for _, nb := range expr.BareWords(ne, known) {
			still = still || nb.Word == b.Word && !b.Both
		}
		if still {
			continue
		}
		out = append(out, exprFix{Message: fmt.Sprintf("%s reads a path that names nothing (always null), not the text %q: compare with the text instead", b.Word, b.Word), Expr: src})
	}
	return out
}

// quoteOperand quotes the first whole-word occurrence of word next to a
// comparison operator as a JMESPath raw string; "" when there is none.
func quoteOperand(src, word string) string {
	isID := func(b byte) bool {
		return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
	}
	isOp := func(b byte) bool { return strings.IndexByte("=<>!", b) >= 0 }
	inQuote := byte(0)
	for i := 0; i+len(word) <= len(src); i++ {
		ch := src[i]
		if inQuote != 0 {
			if ch == '\\' {
				i++
			} else if ch == inQuote {
				inQuote = 0
			}
			continue
		}
		if ch == '\'' || ch == '"' || ch == '`' {
			inQuote = ch
			continue
		}
		if !strings.HasPrefix(src[i:], word) || (i > 0 && (isID(src[i-1]) || src[i-1] == '.')) {
			continue
		}
		end := i + len(word)
		if end < len(src) && (isID(src[end]) || src[end] == '.' || src[end] == '[') {
			continue
		}
		l, r := strings.TrimRight(src[:i], " \t"), strings.TrimLeft(src[end:], " \t")
		if (l != "" && isOp(l[len(l)-1])) || (r != "" && isOp(r[0])) {
			return src[:i] + "'" + word + "'" + src[end:]
		}
	}
	return ""
}

// orEmpty answers a nil list as [] rather than null: clients iterate it.
func orEmpty(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
