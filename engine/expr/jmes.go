package expr

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/jmespath/go-jmespath"
)

// go-jmespath exposes its AST node type but not the node's fields, so the
// static analysis reads them with reflection (read-only, once per Parse).
// If a future version renames the fields, analysis degrades to "reads the
// whole root" and evaluation stays correct.

type jnode struct {
	typ      int
	str      string // string value (field name, function name, key)
	isStr    bool
	children []jnode
}

var jast struct {
	ok                     bool
	typ, value, children   int
	nodeType, nodeChildren reflect.Type
}

func init() {
	t := reflect.TypeOf(jmespath.ASTNode{})
	ft, ok1 := t.FieldByName("nodeType")
	fv, ok2 := t.FieldByName("value")
	fc, ok3 := t.FieldByName("children")
	if !ok1 || !ok2 || !ok3 || len(ft.Index) != 1 || len(fv.Index) != 1 || len(fc.Index) != 1 {
		return
	}
	if ft.Type.Kind() != reflect.Int || fv.Type.Kind() != reflect.Interface ||
		fc.Type.Kind() != reflect.Slice || fc.Type.Elem() != t {
		return
	}
	jast.ok = true
	jast.typ, jast.value, jast.children = ft.Index[0], fv.Index[0], fc.Index[0]
}

func toJNode(v reflect.Value) jnode {
	n := jnode{typ: int(v.Field(jast.typ).Int())}
	if val := v.Field(jast.value); !val.IsNil() {
		if e := val.Elem(); e.Kind() == reflect.String {
			n.str, n.isStr = e.String(), true
		}
	}
	ch := v.Field(jast.children)
	if l := ch.Len(); l > 0 {
		n.children = make([]jnode, l)
		for i := 0; i < l; i++ {
			n.children[i] = toJNode(ch.Index(i))
		}
	}
	return n
}

// go-jmespath's node types as ints, constant so a switch over them is a
// jump table.
const (
	jField      = int(jmespath.ASTField)
	jSubexpr    = int(jmespath.ASTSubexpression)
	jIndexExpr  = int(jmespath.ASTIndexExpression)
	jIndex      = int(jmespath.ASTIndex)
	jSlice      = int(jmespath.ASTSlice)
	jProjection = int(jmespath.ASTProjection)
	jValueProj  = int(jmespath.ASTValueProjection)
	jFilterProj = int(jmespath.ASTFilterProjection)
	jFlatten    = int(jmespath.ASTFlatten)
	jPipe       = int(jmespath.ASTPipe)
	jFunction   = int(jmespath.ASTFunctionExpression)
	jExpRef     = int(jmespath.ASTExpRef)
	jComparator = int(jmespath.ASTComparator)
	jMultiList  = int(jmespath.ASTMultiSelectList)
	jMultiHash  = int(jmespath.ASTMultiSelectHash)
	jKeyVal     = int(jmespath.ASTKeyValPair)
	jNot        = int(jmespath.ASTNotExpression)
	jAnd        = int(jmespath.ASTAndExpression)
	jOr         = int(jmespath.ASTOrExpression)
	jIdentity   = int(jmespath.ASTIdentity)
	jCurrent    = int(jmespath.ASTCurrentNode)
	jLiteral    = int(jmespath.ASTLiteral)
)

// jmesTokenName spells go-jmespath's token names in syntax errors.
var jmesTokenName = strings.NewReplacer(
	"tEOF", "end of input", "tRparen", `")"`, "tLparen", `"("`,
	"tRbracket", `"]"`, "tLbracket", `"["`, "tRbrace", `"}"`, "tLbrace", `"{"`,
	"tComma", `","`, "tColon", `":"`, "tDot", `"."`, "tPipe", `"|"`,
	"tUnquotedIdentifier", "identifier", "tQuotedIdentifier", "quoted identifier",
	"tNumber", "number", "tStar", `"*"`, "tFilter", `"[?"`, "tFlatten", `"[]"`,
	"tJSONLiteral", "literal", "tStringLiteral", "raw string", "tCurrent", `"@"`,
	"tExpref", `"&"`, "tOr", `"||"`, "tAnd", `"&&"`, "tNot", `"!"`,
	"tEQ", `"=="`, "tNE", `"!="`, "tLTE", `"<="`, "tGTE", `">="`, "tLT", `"<"`, "tGT", `">"`,
	"tUnknown", `"="`,
)

// jmesDepthAt returns the offset where bracket nesting exceeds max, or -1.
// Quoted identifiers, raw strings and JSON literals are skipped.
func jmesDepthAt(src string, max int) int {
	depth := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '\'', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
			if depth > max {
				return i
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return -1
}

func (e *Expr) jmesSyntaxError(err error) *SyntaxError {
	pos := 0
	msg := err.Error()
	var se jmespath.SyntaxError
	unknown := false
	if errors.As(err, &se) {
		pos = srcPos(se.Offset, e.dollars)
		msg = strings.TrimPrefix(msg, "SyntaxError: ")
		// go-jmespath's lexer makes tUnknown of one thing only: an "="
		// that does not start "==".
		unknown = strings.Contains(msg, "tUnknown")
		msg = jmesTokenName.Replace(msg)
	}
	if pos < 0 {
		pos = 0
	}
	if pos > len(e.src) {
		pos = len(e.src)
	}
	if unknown {
		msg = loneEquals(e.src, pos)
	}
	return &SyntaxError{Src: e.src, Pos: pos, Msg: msg}
}

// loneEquals explains an "=" at pos that is not an operator: "==" compares
// (and "=!", "=<", "=>" are "!=", "<=", ">=" the wrong way round).
func loneEquals(src string, pos int) string {
	if pos < len(src) && src[pos] == '=' && pos+1 < len(src) {
		if op := src[pos+1]; op == '!' || op == '<' || op == '>' {
			return fmt.Sprintf(`"=%c" is not an operator: did you mean "%c="?`, op, op)
		}
	}
	return `"=" is not an operator: did you mean "==" (JMESPath compares with ==)?`
}

func (e *Expr) parseJMESPath(lim Limits) (err error) {
	if pos := jmesDepthAt(e.src, lim.MaxDepth); pos >= 0 {
		return &SyntaxError{Src: e.src, Pos: pos,
			Msg: "nesting deeper than the limit of " + strconv.Itoa(lim.MaxDepth) + " (MaxDepth)"}
	}
	defer func() {
		// go-jmespath can panic on some malformed input.
		if r := recover(); r != nil {
			err = &SyntaxError{Src: e.src, Pos: len(e.src), Msg: "invalid expression"}
		}
	}()
	e.jsrc, e.dollars = rewriteDollar(e.src)
	ast, perr := jmespath.NewParser().Parse(e.jsrc)
	if perr != nil {
		return e.jmesSyntaxError(perr)
	}
	a := jmesAnalysis{seen: map[string]bool{}}
	if jast.ok {
		root := toJNode(reflect.ValueOf(ast))
		if err := e.validate(root); err != nil {
			return err
		}
		if err := e.checkDollar(root); err != nil {
			return err
		}
		a.walk(root, false)
		if a.dollars < len(e.dollars) {
			// A "$" the walk did not reach (inside a filter or a
			// projection) reads from the root at run time: count the whole
			// context as read.
			a.readsRoot = true
		}
	} else {
		if len(e.dollars) > 0 {
			return &SyntaxError{Src: e.src, Pos: e.dollars[0], Msg: `"$" is not supported by this build`}
		}
		a.readsRoot = true
	}
	e.readsRoot = a.readsRoot
	e.chains, e.chainText = a.chains, a.chainText
	e.readChains, e.readText = a.reads, a.readText
	roots := map[string]bool{}
	for _, r := range a.refs {
		if !roots[r.Root] {
			roots[r.Root] = true
			e.roots = append(e.roots, r.Root)
		}
	}
	if a.readsRoot {
		a.refs = append(a.refs, Ref{Root: "@"})
	}
	e.refs = sortRefs(a.refs)
	return nil
}

// validate rejects what go-jmespath's parser lets through but cannot
// evaluate: empty nodes (left by a swallowed error) and calls of anything
// but a known function name.
func (e *Expr) validate(n jnode) *SyntaxError {
	switch n.typ {
	case int(jmespath.ASTEmpty):
		return &SyntaxError{Src: e.src, Pos: len(e.src), Msg: "incomplete expression"}
	case jFunction:
		if !n.isStr {
			return &SyntaxError{Src: e.src, Pos: max(0, strings.IndexByte(e.src, '(')),
				Msg: "only a function name can be called"}
		}
		if n.str == "sort_by" {
			e.sortsBy = true
		}
		if _, ok := jmesSigs[n.str]; !ok {
			pos := strings.Index(e.src, n.str+"(")
			if pos < 0 {
				pos = max(0, strings.Index(e.src, n.str))
			}
			msg := "unknown function " + n.str + "()"
			if alt := Suggest(n.str, FunctionNames()); alt != "" {
				msg += "; did you mean " + alt + "()?"
			}
			return &SyntaxError{Src: e.src, Pos: pos, Msg: msg}
		}
		if msg := arityError(n.str, len(n.children)); msg != "" {
			return &SyntaxError{Src: e.src, Pos: max(0, strings.Index(e.src, n.str)), Msg: msg}
		}
	}
	for _, c := range n.children {
		if err := e.validate(c); err != nil {
			return err
		}
	}
	return nil
}

type jmesAnalysis struct {
	refs      []Ref
	readsRoot bool
	chains    [][]string
	chainText []string
	seen      map[string]bool
	reads     [][]string // every chain, optional ones too (EvalTraced)
	readText  []string
	readSeen  map[string]bool
	dollars   int // "$" path starts consumed by addChain
}

// fieldChain returns the names of a pure field chain (a, a.b, "x-y".b).
func fieldChain(n jnode, out []string) ([]string, bool) {
	switch n.typ {
	case jField:
		return append(out, n.str), true
	case jSubexpr:
		if len(n.children) != 2 {
			return nil, false
		}
		out, ok := fieldChain(n.children[0], out)
		if !ok {
			return nil, false
		}
		return fieldChain(n.children[1], out)
	}
	return nil, false
}

// lead returns the static field names n reads first from its input: for
// a.b[0].c it is [a b]; it stops at anything dynamic.
func lead(n jnode, out []string) []string {
	switch n.typ {
	case jField:
		return append(out, n.str)
	case jSubexpr:
		if len(n.children) != 2 {
			return out
		}
		if names, ok := fieldChain(n.children[0], out); ok {
			return lead(n.children[1], names)
		}
		return lead(n.children[0], out)
	case jIndexExpr, jProjection, jValueProj, jFilterProj, jFlatten, jPipe:
		if len(n.children) > 0 {
			return lead(n.children[0], out)
		}
	}
	return out
}

func (a *jmesAnalysis) addChain(names []string, optional bool) {
	if names[0] == rootField {
		// $.a.b reads a.b from the root; $ alone reads all of it.
		a.dollars++
		if names = names[1:]; len(names) == 0 {
			a.readsRoot = true
			return
		}
	}
	r := Ref{Root: names[0]}
	if len(names) > 1 {
		r.Field = names[1]
	}
	a.refs = append(a.refs, r)
	text := jmesPathText(names)
	if !a.readSeen[text] {
		if a.readSeen == nil {
			a.readSeen = map[string]bool{}
		}
		a.readSeen[text] = true
		a.reads = append(a.reads, names)
		a.readText = append(a.readText, text)
	}
	if optional {
		return
	}
	if a.seen[text] {
		return
	}
	a.seen[text] = true
	a.chains = append(a.chains, names)
	a.chainText = append(a.chainText, text)
}

// walk visits n evaluated against the root. optional marks chains whose
// absence is expected (operands of ||, the right of &&, not_null
// arguments); they are not checked in strict mode.
func (a *jmesAnalysis) walk(n jnode, optional bool) {
	switch n.typ {
	case jField, jSubexpr, jIndexExpr, jProjection, jValueProj, jFilterProj, jFlatten, jPipe:
		if names := lead(n, nil); len(names) > 0 {
			a.addChain(names, optional)
			return
		}
		// Only the left child is evaluated against the root; the rest is
		// relative to it.
		if len(n.children) > 0 {
			a.walk(n.children[0], optional)
		}
	case jFunction:
		opt := optional || n.str == "not_null"
		for _, c := range n.children {
			if c.typ != jExpRef {
				a.walk(c, opt)
			}
		}
	case jComparator, jMultiList, jMultiHash, jKeyVal, jNot:
		for _, c := range n.children {
			a.walk(c, optional)
		}
	case jAnd:
		for i, c := range n.children {
			a.walk(c, optional || i > 0)
		}
	case jOr:
		for _, c := range n.children {
			a.walk(c, true)
		}
	case jIdentity, jCurrent:
		a.readsRoot = true
	}
}

func isJMESIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func jmesPathText(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('.')
		}
		if isJMESIdent(n) {
			b.WriteString(n)
		} else {
			b.WriteString(strconv.Quote(n))
		}
	}
	return b.String()
}

var dataPool = sync.Pool{New: func() any { return make(map[string]any, 8) }}

func (e *Expr) evalJMESPath(ctx context.Context, s Scope, strict bool) (result any, err error) {
	tr, tracing := s.(*Trace)
	if tracing {
		s = tr.scope
	}
	var data map[string]any
	pooled := false
	switch sc := s.(type) {
	case MapScope:
		// Already a map: hand it over as is, nothing to build.
		data = sc
	default:
		if e.readsRoot {
			if r, ok := s.(Rooter); ok {
				data = r.Root()
				break
			}
			data = make(map[string]any, len(e.roots))
		} else {
			data = dataPool.Get().(map[string]any)
			pooled = true
		}
		for _, name := range e.roots {
			if v, ok := s.Lookup(name); ok {
				data[name] = v
			}
		}
	}
	if pooled {
		defer func() {
			clear(data)
			dataPool.Put(data)
		}()
	}
	if tracing {
		e.traceChains(tr, data)
	}
	if strict {
		for i, ch := range e.chains {
			if !chainExists(data, ch) {
				return nil, &MissingPathError{Path: e.chainText[i]}
			}
		}
	}
	e.dnOnce.Do(func() { e.dn, e.dcalls = compileDiag(e.jsrc, e.src) })
	if e.dn != nil {
		return evalBudgeted(ctx, e.src, e.dn, e.dcalls, data)
	}
	if len(e.dollars) > 0 {
		// Only the budgeted evaluator knows "$" is the root; go-jmespath
		// would read a field of that name and answer null.
		return nil, &EvalError{Src: e.src, Msg: `"$" cannot be evaluated here`}
	}
	defer func() {
		if r := recover(); r != nil {
			msg := explainJMESPath(e.src, data)
			if msg == "" {
				msg = "evaluation failed"
			}
			result, err = nil, &EvalError{Src: e.src, Msg: msg}
		}
	}()
	e.jpOnce.Do(func() {
		// The source already parsed, so this cannot fail with a syntax error;
		// it is deferred because compiling builds a function table (≈80 allocations).
		e.jp, e.jpErr = jmespath.Compile(e.jsrc)
	})
	if e.jpErr != nil {
		return nil, &EvalError{Src: e.src, Msg: e.jpErr.Error()}
	}
	searched := data
	if e.sortsBy || !jast.ok && strings.Contains(e.src, "sort_by") {
		// go-jmespath's sort_by sorts the array it is given in place: give
		// it a copy, not another node's output.
		searched = CloneJSON(data).(map[string]any)
	}
	v, err := e.jp.Search(searched)
	if err != nil {
		return nil, &EvalError{Src: e.src, Msg: ExplainJMESPathError(e.src, data, err)}
	}
	return v, nil
}

func chainExists(data map[string]any, names []string) bool {
	v, ok := data[names[0]]
	if !ok {
		return false
	}
	for _, n := range names[1:] {
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[n]
		case MapScope:
			v, ok = m[n]
		default:
			return false
		}
		if !ok {
			return false
		}
	}
	return true
}

// compileDiag builds the tree the budgeted evaluator walks, or nil when
// go-jmespath's tree cannot be read (evaluation then falls back to it).
// jsrc is what go-jmespath parses (src with "$" rewritten); the calls are
// read from src as written, for error messages.
func compileDiag(jsrc, src string) (root *dnode, calls []srcCall) {
	defer func() {
		if r := recover(); r != nil {
			root, calls = nil, nil
		}
	}()
	if !jast.ok {
		return nil, nil
	}
	ast, err := jmespath.NewParser().Parse(jsrc)
	if err != nil {
		return nil, nil
	}
	root = toDNode(reflect.ValueOf(ast))
	var fns []*dnode
	next := 0
	numberCalls(root, &next, &fns)
	calls = scanCalls(src)
	if len(calls) != len(fns) {
		calls = nil
	}
	return root, calls
}

// evalBudgeted evaluates a compiled tree over data under ctx's budget,
// stopping when ctx ends. It gives go-jmespath's results (the compliance
// suite checks it) with errors that name the function and argument.
func evalBudgeted(ctx context.Context, src string, root *dnode, calls []srcCall, data any) (result any, err error) {
	d := &diag{calls: calls, m: newMeter(ctx, budgetOf(ctx)), root: data}
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, &EvalError{Src: src, Msg: "evaluation failed"}
		}
	}()
	v, _, err := d.eval(root, data)
	if d.m.err != nil {
		var be *BudgetError
		if errors.As(d.m.err, &be) {
			return nil, &EvalError{Src: src, Msg: be.Error(), Err: be}
		}
		return nil, d.m.err
	}
	if err != nil {
		return nil, &EvalError{Src: src, Msg: err.Error()}
	}
	return v, nil
}

// searchCache holds compiled trees for Search, bounded like the transform
// tool's cache was.
var (
	searchCache     sync.Map // src → *searchEntry
	searchCacheSize int64
	searchCacheMu   sync.Mutex
)

type searchEntry struct {
	root  *dnode
	calls []srcCall
}

// Search evaluates the JMESPath src over data under ctx's budget, stopping
// when ctx ends. The caller has checked src's syntax (jmespath.Compile).
func Search(ctx context.Context, src string, data any) (any, error) {
	var ent *searchEntry
	if c, ok := searchCache.Load(src); ok {
		ent = c.(*searchEntry)
	} else {
		jsrc, _ := rewriteDollar(src)
		root, calls := compileDiag(jsrc, src)
		if root == nil {
			return nil, &EvalError{Src: src, Msg: "expression could not be compiled"}
		}
		ent = &searchEntry{root: root, calls: calls}
		searchCacheMu.Lock()
		if searchCacheSize < 1024 {
			if _, loaded := searchCache.LoadOrStore(src, ent); !loaded {
				searchCacheSize++
			}
		}
		searchCacheMu.Unlock()
	}
	return evalBudgeted(ctx, src, ent.root, ent.calls, data)
}
