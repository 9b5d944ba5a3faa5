package exprhelp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
)

// Name is one completion of a context name.
type Name struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

var nameDetail = map[string]string{
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

// Names are the names field f can read, in the order completion offers
// them, each with what it reads.
func Names(f *chain.ExprField) []Name {
	names := make([]Name, 0, len(f.Names))
	for _, n := range f.Names {
		names = append(names, Name{Name: n, Detail: nameDetail[n]})
	}
	return names
}

// Bounds of one preview, far below a run's.
const (
	PreviewBytes       = 2000 // JSON text of a preview result shown, at most
	PreviewEvalTimeout = 250 * time.Millisecond
)

// PreviewBudget bounds one preview evaluation.
var PreviewBudget = expr.Budget{MaxElements: 200_000, MaxBytes: 4 << 20}

// Preview is what an expression gives at a field. The expression's own
// faults are part of it (Error), not a failure of the preview.
type Preview struct {
	Error *PreviewError
	// Warnings and Fixes are nil when the expression does not parse.
	Warnings []Warning
	Fixes    []Fix
	// Without Error: the result's JSON text (at most PreviewBytes; Truncated
	// says it was cut) and its JSON type.
	Value     string
	Type      string
	Truncated bool
}

// PreviewError is an expression's syntax or evaluation error. The fields
// are in the order of the keys of the answer that carries it.
type PreviewError struct {
	Code    string `json:"code"` // expression_syntax or expression_eval
	Column  int    `json:"column,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
	Pos     *int   `json:"pos,omitempty"` // byte offset of a syntax error
}

// Warning names a name an expression reads that resolves to nothing at the
// field, with the closest name that does. The fields are in the order of
// the keys of the answer that carries it.
type Warning struct {
	DidYouMean string `json:"did_you_mean,omitempty"`
	Message    string `json:"message"`
	Name       string `json:"name"`
}

// Fix is a one-click edit: the whole expression rewritten.
type Fix struct {
	Message string `json:"message"`
	Expr    string `json:"expr"`
}

// Evaluate previews src at field f of chain c over d (nil: nothing ran)
// under PreviewBudget and PreviewEvalTimeout. The error is only for a
// result that cannot be written as JSON.
func Evaluate(ctx context.Context, c *chain.Chain, f *chain.ExprField, d *RunData, src string) (*Preview, error) {
	e, err := expr.Parse(src)
	if err != nil {
		pe := &PreviewError{Code: "expression_syntax", Message: err.Error()}
		var se *expr.SyntaxError
		if errors.As(err, &se) {
			line, col := chain.ExprPlace(se.Src, se.Pos)
			pos := se.Pos
			pe.Message, pe.Pos, pe.Line, pe.Column = fmt.Sprintf("%s (at line %d, column %d)", se.Msg, line, col), &pos, line, col
		}
		return &Preview{Error: pe}, nil
	}
	p := &Preview{Warnings: warnings(c, f, e), Fixes: bareWordFixes(c, f, e)}
	ectx, cancel := context.WithTimeout(expr.WithBudget(ctx, PreviewBudget), PreviewEvalTimeout)
	defer cancel()
	v, err := e.EvalContext(ectx, NewScope(f, d), false)
	if err != nil {
		msg := err.Error()
		var ee *expr.EvalError
		if errors.As(err, &ee) {
			msg = ee.Msg
		}
		if errors.Is(ectx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			// The preview's own time budget, not the caller's: say so, as
			// the element budget does, rather than "context deadline
			// exceeded".
			msg = fmt.Sprintf("the preview stopped after %v, its time budget: the expression is too costly to preview (a run has larger budgets)", PreviewEvalTimeout)
		}
		p.Error = &PreviewError{Code: "expression_eval", Message: msg}
		return p, nil
	}
	text, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("preview: marshal the result: %w", err)
	}
	p.Truncated = len(text) > PreviewBytes
	if p.Truncated {
		text = text[:PreviewBytes]
	}
	p.Value, p.Type = string(text), jsonType(v)
	return p, nil
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

// knownAt reports whether name resolves at field f: a name the field
// reads, or a node of c.
func knownAt(c *chain.Chain, f *chain.ExprField) func(string) bool {
	return func(n string) bool { return contains(f.Names, n) || (c.Node(n) != nil && !chain.IsReserved(n)) }
}

// warnings names the names e reads that resolve to nothing at the field,
// with the closest name that does ("did you mean").
func warnings(c *chain.Chain, f *chain.ExprField, e *expr.Expr) []Warning {
	known := knownAt(c, f)
	cands := append(append([]string{}, f.Names...), f.Upstream...)
	out := []Warning{}
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
		w := Warning{Name: name, Message: fmt.Sprintf("%s is neither a node nor a name this field can read; it is always null", name)}
		alt := expr.Suggest(name, cands)
		if alt == "" && bare[name] {
			continue
		}
		if alt != "" {
			w.DidYouMean = alt
			w.Message += "; did you mean " + alt + "?"
		}
		out = append(out, w)
	}
	return out
}

// bareWordFixes offers, for each comparison with a bare word that names
// nothing (category == billing), the expression with the word quoted as
// text (category == 'billing'), when that rewrite parses and fixes it.
func bareWordFixes(c *chain.Chain, f *chain.ExprField, e *expr.Expr) []Fix {
	known := knownAt(c, f)
	out := []Fix{}
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
		out = append(out, Fix{Message: fmt.Sprintf("%s reads a path that names nothing (always null), not the text %q: compare with the text instead", b.Word, b.Word), Expr: src})
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
