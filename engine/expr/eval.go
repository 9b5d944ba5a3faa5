package expr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

func (n *litNode) eval(Scope, bool) (any, error) { return n.v, nil }

func (n *pathNode) missing(strict bool) (any, error) {
	if strict {
		return nil, &MissingPathError{Path: n.text}
	}
	return nil, nil
}

func (n *pathNode) eval(s Scope, strict bool) (any, error) {
	v, ok := n.resolve(s)
	if t, tracing := s.(*Trace); tracing {
		t.note(n.text, v, ok)
	}
	if !ok {
		return n.missing(strict)
	}
	return v, nil
}

// resolve walks the path; ok is false when any step is missing.
func (n *pathNode) resolve(s Scope) (any, bool) {
	if n.root == "@" { // $ alone: the whole context
		if t, tracing := s.(*Trace); tracing {
			s = t.scope
		}
		r, ok := s.(Rooter)
		if !ok {
			return nil, false
		}
		return r.Root(), true
	}
	v, ok := s.Lookup(n.root)
	if !ok {
		return nil, false
	}
	for i := range n.segs {
		sg := &n.segs[i]
		if sg.isIdx {
			list, ok := v.([]any)
			if !ok {
				return nil, false
			}
			j := sg.idx
			if j < 0 {
				j += len(list)
			}
			if j < 0 || j >= len(list) {
				return nil, false
			}
			v = list[j]
			continue
		}
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[sg.key]
		case Scope:
			v, ok = m.Lookup(sg.key)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

func (n *cmpNode) eval(s Scope, strict bool) (any, error) {
	l, err := n.l.eval(s, strict)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(s, strict)
	if err != nil {
		return nil, err
	}
	return compare(n.op, l, r, n.lText, n.rText), nil
}

func (n *andNode) eval(s Scope, strict bool) (any, error) {
	l, err := n.l.eval(s, strict)
	if err != nil || !Truthy(l) {
		return false, err
	}
	r, err := n.r.eval(s, strict)
	if err != nil {
		return false, err
	}
	return Truthy(r), nil
}

func (n *orNode) eval(s Scope, strict bool) (any, error) {
	l, err := n.l.eval(s, strict)
	if err != nil {
		return false, err
	}
	if Truthy(l) {
		return true, nil
	}
	r, err := n.r.eval(s, strict)
	if err != nil {
		return false, err
	}
	return Truthy(r), nil
}

func (n *notNode) eval(s Scope, strict bool) (any, error) {
	v, err := n.x.eval(s, strict)
	if err != nil {
		return false, err
	}
	return !Truthy(v), nil
}

func (n *truthNode) eval(s Scope, strict bool) (any, error) {
	v, err := n.x.eval(s, strict)
	if err != nil {
		return false, err
	}
	return Truthy(v), nil
}

func (n *negNode) eval(s Scope, strict bool) (any, error) {
	v, err := n.x.eval(s, strict)
	if err != nil {
		return nil, err
	}
	f, ok := toNumber(v, true)
	if !ok {
		return nil, &EvalError{Msg: "- needs a number; it got " + describe(v, false)}
	}
	return -f, nil
}

func (n *listNode) eval(s Scope, strict bool) (any, error) {
	out := make([]any, len(n.items))
	for i, it := range n.items {
		v, err := it.eval(s, strict)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (n *filterNode) eval(s Scope, strict bool) (any, error) {
	v, err := n.x.eval(s, strict)
	if err != nil {
		return nil, err
	}
	return n.fn(v)
}

var filters map[string]func(any) (any, error)

func init() {
	filters = map[string]func(any) (any, error){
		"length": func(v any) (any, error) {
			switch x := v.(type) {
			case nil:
				return 0.0, nil
			case string:
				return float64(utf8.RuneCountInString(x)), nil
			case []any:
				return float64(len(x)), nil
			case map[string]any:
				return float64(len(x)), nil
			}
			return nil, &EvalError{Msg: "the length filter needs a string, list or object; it got " + describe(v, false)}
		},
		"lower":  func(v any) (any, error) { return strings.ToLower(formatValue(v)), nil },
		"upper":  func(v any) (any, error) { return strings.ToUpper(formatValue(v)), nil },
		"int":    func(v any) (any, error) { return math.Trunc(numberOr0(v)), nil },
		"float":  func(v any) (any, error) { return numberOr0(v), nil },
		"string": func(v any) (any, error) { return formatValue(v), nil },
	}
}

func numberOr0(v any) float64 {
	if b, ok := v.(bool); ok {
		if b {
			return 1
		}
		return 0
	}
	if f, ok := toNumber(v, true); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f
	}
	return 0
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := toNumber(v, false); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// toNumber converts numeric Go values (and, when strs is set, strings that
// parse as numbers) to float64.
func toNumber(v any, strs bool) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case string:
		if strs {
			return parseNumber(strings.TrimSpace(x))
		}
	}
	return 0, false
}

// parseNumber parses s when it is a plain decimal number
// ([+-]digits[.digits][e[+-]digits]); it does not allocate on failure.
func parseNumber(s string) (float64, bool) {
	if !looksNumeric(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func looksNumeric(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			d++
		}
		if d == 0 {
			return false
		}
	}
	return i == len(s)
}

// numeric returns v as a number when it counts as one in a comparison;
// text marks a quoted literal, which never does.
func numeric(v any, text bool) (float64, bool) {
	if text {
		return 0, false
	}
	return toNumber(v, true)
}

func compare(op cmpOp, a, b any, aText, bText bool) bool {
	switch op {
	case opEQ:
		return equal(a, b, aText, bText)
	case opNE:
		return !equal(a, b, aText, bText)
	case opLT, opLE, opGT, opGE:
		var c int
		if fa, ok := numeric(a, aText); ok {
			fb, ok := numeric(b, bText)
			if !ok || math.IsNaN(fa) || math.IsNaN(fb) {
				return false
			}
			c = cmpFloat(fa, fb)
		} else {
			sa, ok1 := a.(string)
			sb, ok2 := b.(string)
			if !ok1 || !ok2 {
				return false
			}
			c = strings.Compare(sa, sb)
		}
		switch op {
		case opLT:
			return c < 0
		case opLE:
			return c <= 0
		case opGT:
			return c > 0
		default:
			return c >= 0
		}
	case opIn:
		return contains(b, a, aText)
	case opContains:
		return contains(a, b, bText)
	case opStartsWith:
		h, ok := a.(string)
		if !ok || b == nil {
			return false
		}
		return strings.HasPrefix(h, asText(b))
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func asText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return formatValue(v)
}

func equal(a, b any, aText, bText bool) bool {
	if fa, ok := numeric(a, aText); ok {
		if fb, ok := numeric(b, bText); ok {
			return fa == fb
		}
	}
	return deepEqual(a, b)
}

func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !deepEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !deepEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	fa, ok1 := toNumber(a, false)
	fb, ok2 := toNumber(b, false)
	return ok1 && ok2 && fa == fb
}

// contains reports whether hay holds needle: list membership, substring, or
// key of an object.
func contains(hay, needle any, needleText bool) bool {
	switch h := hay.(type) {
	case []any:
		for _, e := range h {
			if equal(e, needle, false, needleText) {
				return true
			}
		}
	case string:
		if needle == nil {
			return false
		}
		return strings.Contains(h, asText(needle))
	case map[string]any:
		k, ok := needle.(string)
		if !ok {
			return false
		}
		_, ok = h[k]
		return ok
	}
	return false
}

// formatValue renders v for text: strings raw, nil as "", everything else as
// compact JSON.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return formatFloat(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// formatFloat formats like encoding/json (but NaN and infinities as text).
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// e-07 -> e-7, as encoding/json does.
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
		return s
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
