package expr

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/jmespath/go-jmespath"
)

// Spelling tells which of the three surface syntaxes an expression uses.
type Spelling int

const (
	// JMESPath is the canonical spelling, e.g. length(output.items) > `0`.
	JMESPath Spelling = iota
	// Comparison is `<operand> <op> <operand>` with {{ path }} operands,
	// e.g. {{state.x}} == billing.
	Comparison
	// Guard is a single {{ ... }} holding a Jinja-like expression,
	// e.g. {{ output.data.score > 7 }}.
	Guard
)

// String returns "jmespath", "comparison" or "guard".
func (s Spelling) String() string {
	switch s {
	case JMESPath:
		return "jmespath"
	case Comparison:
		return "comparison"
	case Guard:
		return "guard"
	}
	return "Spelling(" + strconv.Itoa(int(s)) + ")"
}

// Limits bound what Parse accepts. A zero field means the default.
type Limits struct {
	MaxLength int // source length in bytes
	MaxDepth  int // nesting of parentheses, brackets and braces
}

// DefaultLimits are the limits Parse uses.
var DefaultLimits = Limits{MaxLength: 16384, MaxDepth: 128}

func (l Limits) norm() Limits {
	if l.MaxLength <= 0 {
		l.MaxLength = DefaultLimits.MaxLength
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	return l
}

// Scope resolves top-level names lazily.
type Scope interface {
	Lookup(name string) (any, bool)
}

// Rooter is optionally implemented by a Scope that can hand out the whole
// context; it is used only when an expression reads the root ("@").
type Rooter interface {
	Root() map[string]any
}

// MapScope is a Scope (and Rooter) backed by a map.
type MapScope map[string]any

// Lookup implements Scope.
func (m MapScope) Lookup(name string) (any, bool) {
	v, ok := m[name]
	return v, ok
}

// Root implements Rooter.
func (m MapScope) Root() map[string]any { return m }

// Ref is a static reference an expression reads: the top-level name and,
// when known, the first field below it. Root "@" means the whole context.
type Ref struct {
	Root  string
	Field string
}

// SyntaxError reports a malformed expression. Pos is a 0-based byte offset
// into Src.
type SyntaxError struct {
	Src string
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	return "syntax error at position " + strconv.Itoa(e.Pos) + " in " + quoteSrc(e.Src, e.Pos) + ": " + e.Msg
}

// MissingPathError is returned by Eval in strict mode when a path does not
// exist.
type MissingPathError struct {
	Path string
}

func (e *MissingPathError) Error() string {
	return "path " + strconv.Quote(e.Path) + " does not exist"
}

// EvalError is a runtime error, e.g. a JMESPath function given the wrong
// type or a filter applied to a value it cannot handle.
type EvalError struct {
	Src string
	Msg string
	Err error // the cause when it has a type of its own (a *BudgetError)
}

func (e *EvalError) Error() string {
	return "cannot evaluate " + quoteSrc(e.Src, 0) + ": " + e.Msg
}

func (e *EvalError) Unwrap() error { return e.Err }

// quoteSrc quotes src, shortening it to about 80 bytes around pos.
func quoteSrc(src string, pos int) string {
	const max = 80
	if len(src) <= max {
		return strconv.Quote(src)
	}
	if pos < 0 {
		pos = 0
	}
	if pos > len(src) {
		pos = len(src)
	}
	start := pos - max/2
	if start < 0 {
		start = 0
	}
	end := start + max
	if end > len(src) {
		end = len(src)
		start = end - max
	}
	for start > 0 && !utf8.RuneStart(src[start]) {
		start--
	}
	for end < len(src) && !utf8.RuneStart(src[end]) {
		end++
	}
	s := src[start:end]
	if start > 0 {
		s = "..." + s
	}
	if end < len(src) {
		s += "..."
	}
	return strconv.Quote(s)
}

// Expr is a parsed expression. It is immutable and safe for concurrent use.
type Expr struct {
	src      string
	spelling Spelling
	refs     []Ref

	// guard and comparison
	root node

	// JMESPath
	jsrc      string             // src with each bare "$" rewritten for go-jmespath (dollar.go)
	dollars   []int              // offsets in src of the rewritten "$"s
	jp        *jmespath.JMESPath // compiled on first evaluation: validation only parses
	jpOnce    sync.Once
	jpErr     error
	dnOnce    sync.Once
	dn        *dnode     // the tree the budgeted evaluator walks; nil if it cannot be built
	dcalls    []srcCall  // the calls as written, for error messages
	roots     []string   // top-level names read
	readsRoot bool       // reads "@"
	sortsBy   bool       // calls sort_by, which go-jmespath runs in place on its argument
	chains    [][]string // static field chains checked in strict mode
	chainText []string   // chains as written, for MissingPathError

	// EvalTraced: every static field chain read from the context
	// (optional ones too), and as written
	readChains [][]string
	readText   []string
}

// Parse parses src using DefaultLimits.
func Parse(src string) (*Expr, error) { return ParseWith(src, DefaultLimits) }

// ParseWith parses src under the given limits.
func ParseWith(src string, lim Limits) (*Expr, error) {
	lim = lim.norm()
	if len(src) > lim.MaxLength {
		return nil, &SyntaxError{Src: src, Pos: lim.MaxLength,
			Msg: "expression is longer than the limit of " + strconv.Itoa(lim.MaxLength) + " bytes (MaxLength)"}
	}
	start, end := trimSpan(src)
	if start == end {
		return nil, &SyntaxError{Src: src, Pos: 0, Msg: "empty expression"}
	}
	e := &Expr{src: src}
	trimmed := src[start:end]
	switch {
	case strings.HasPrefix(trimmed, "{{") && closeAt(src, start+2) == end-2:
		e.spelling = Guard
		p := newParser(src, start+2, start, lim)
		n, after, err := p.parseTemplateExpr()
		if err != nil {
			return nil, err
		}
		if after != end {
			return nil, &SyntaxError{Src: src, Pos: after, Msg: "unexpected text after \"}}\""}
		}
		e.root = n
	case strings.Contains(trimmed, "{{"):
		e.spelling = Comparison
		n, err := parseComparison(src, start, end, lim)
		if err != nil {
			return nil, err
		}
		e.root = n
	default:
		e.spelling = JMESPath
		if err := e.parseJMESPath(lim); err != nil {
			return nil, err
		}
		return e, nil
	}
	var refs []Ref
	walkNode(e.root, func(p *pathNode) { refs = append(refs, p.ref()) })
	e.refs = sortRefs(refs)
	return e, nil
}

// Source returns the text the expression was parsed from.
func (e *Expr) Source() string { return e.src }

// Spelling returns which spelling the source used.
func (e *Expr) Spelling() Spelling { return e.spelling }

// Refs returns the static references the expression reads, sorted and
// unique. The caller must not modify the result.
func (e *Expr) Refs() []Ref { return e.refs }

// Contexter is optionally implemented by a Scope whose evaluations belong
// to a run or a node: evaluation stops when the context ends.
type Contexter interface {
	Context() context.Context
}

// Eval evaluates the expression against s. In strict mode a missing path is
// a *MissingPathError; otherwise it reads as nil. A JMESPath evaluation runs
// under its context's budget (WithBudget; a *BudgetError past it) and stops when the context of
// a Contexter scope ends.
func (e *Expr) Eval(s Scope, strict bool) (any, error) {
	return e.EvalContext(contextOf(s), s, strict)
}

// contextOf is the context of a Contexter scope, else nil.
func contextOf(s Scope) context.Context {
	if c, ok := s.(Contexter); ok {
		return c.Context()
	}
	return nil
}

// EvalContext is Eval under ctx (nil means none): a JMESPath evaluation
// returns the context's cause once it ends.
func (e *Expr) EvalContext(ctx context.Context, s Scope, strict bool) (any, error) {
	if s == nil {
		s = MapScope(nil)
	}
	if e.spelling == JMESPath {
		return e.evalJMESPath(ctx, s, strict)
	}
	v, err := e.root.eval(s, strict)
	if err != nil {
		return nil, withSrc(err, e.src)
	}
	return v, nil
}

// withSrc fills in the source of an *EvalError raised by a node (nil stays nil).
func withSrc(err error, src string) error {
	if ee, ok := err.(*EvalError); ok && ee.Src == "" {
		ee.Src = src
	}
	return err
}

// Test evaluates the expression and reports whether the result is Truthy.
func (e *Expr) Test(s Scope, strict bool) (bool, error) {
	v, err := e.Eval(s, strict)
	if err != nil {
		return false, err
	}
	return Truthy(v), nil
}

// Truthy reports whether v counts as true: true; a non-zero number; the text
// "true", "1" or "yes" (case-insensitive, trimmed); a non-empty []any or
// map[string]any. Everything else is false.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		t := strings.TrimSpace(x)
		return t == "1" || strings.EqualFold(t, "true") || strings.EqualFold(t, "yes")
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	if f, ok := toNumber(v, false); ok {
		return f != 0
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func trimSpan(s string) (int, int) {
	start, end := 0, len(s)
	for start < end && isSpace(s[start]) {
		start++
	}
	for end > start && isSpace(s[end-1]) {
		end--
	}
	return start, end
}

func sortRefs(refs []Ref) []Ref {
	if len(refs) == 0 {
		return nil
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Root != refs[j].Root {
			return refs[i].Root < refs[j].Root
		}
		return refs[i].Field < refs[j].Field
	})
	out := refs[:1]
	for _, r := range refs[1:] {
		if r != out[len(out)-1] {
			out = append(out, r)
		}
	}
	return out
}
