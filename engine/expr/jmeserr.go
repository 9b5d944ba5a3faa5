package expr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// go-jmespath reports a function given the wrong type as
// `Invalid type for: <nil>, expected: []jmespath.jpType{"string", ...}`,
// naming neither the function nor the argument, and panics on some others
// (merge of a non-object). The evaluator (jmeseval.go) checks each call
// against the function's signature; the words here say which function,
// what it accepts, the argument as written and what it evaluated to.

var kindWords = map[argKind]string{
	kArray: "array", kArrayNumber: "array of numbers", kArrayString: "array of strings",
	kString: "string", kNumber: "number", kObject: "object", kExpref: "expression like &field",
}

var ordinals = []string{"first", "second", "third", "fourth", "fifth"}

// arityError describes a call with the wrong number of arguments, or "".
func arityError(name string, n int) string {
	sig, ok := jmesSigs[name]
	if !ok {
		return ""
	}
	want := len(sig.args)
	switch {
	case sig.variadic && n < want:
		return fmt.Sprintf("%s() needs at least %s, got %d", name, plural(want, "argument"), n)
	case !sig.variadic && n != want:
		return fmt.Sprintf("%s() takes %s, got %d", name, plural(want, "argument"), n)
	}
	return ""
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// kindsText spells accepted kinds the way a person would: "an array, string
// or object".
func kindsText(ks []argKind) string {
	sorted := append([]argKind(nil), ks...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	words := make([]string, len(sorted))
	for i, k := range sorted {
		words[i] = kindWords[k]
	}
	s := words[0]
	if len(words) > 1 {
		s = strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
	}
	if strings.HasPrefix(s, "a") || strings.HasPrefix(s, "o") || strings.HasPrefix(s, "e") {
		return "an " + s
	}
	return "a " + s
}

// describe says what a value is: missing (null), a number 3, a string "x".
func describe(v any, absent bool) string {
	switch x := v.(type) {
	case nil:
		if absent {
			return "missing (null)"
		}
		return "null"
	case bool:
		return "a boolean " + strconv.FormatBool(x)
	case float64:
		return "a number " + strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		if len(x) > 60 {
			return "a string " + strconv.Quote(x[:60]) + "…"
		}
		return "a string " + strconv.Quote(x)
	case []any:
		if len(x) == 0 {
			return "an empty array []"
		}
		return "an array " + shortJSON(x)
	case map[string]any:
		if len(x) == 0 {
			return "an empty object {}"
		}
		return "an object " + shortJSON(x)
	case expref:
		return "an expression reference"
	}
	return fmt.Sprintf("%T", v)
}

func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// srcCall is a function call as written: its name and argument texts.
type srcCall struct {
	name string
	args []string
}

// scanCalls finds the function calls in src, in source order, with their
// arguments as written.
func scanCalls(src string) []srcCall {
	var calls []srcCall
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipQuoted(src, i)
		case isIdent(c, true) && (i == 0 || !isIdent(src[i-1], false)):
			j := i
			for j < len(src) && isIdent(src[j], false) {
				j++
			}
			k := j
			for k < len(src) && isSpace(src[k]) {
				k++
			}
			if k < len(src) && src[k] == '(' {
				calls = append(calls, srcCall{name: src[i:j], args: splitArgs(src, k+1)})
				i = k + 1
				continue
			}
			i = j
		default:
			i++
		}
	}
	return calls
}

// skipQuoted returns the index after the quote closing the one at i.
func skipQuoted(src string, i int) int {
	q := src[i]
	for i++; i < len(src) && src[i] != q; i++ {
		if src[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// splitArgs splits the arguments of a call whose "(" ends at start.
func splitArgs(src string, start int) []string {
	var args []string
	depth, from := 0, start
	for i := start; i < len(src); {
		switch src[i] {
		case '"', '\'', '`':
			i = skipQuoted(src, i)
			continue
		case '(', '[', '{':
			depth++
		case ']', '}':
			depth--
		case ')':
			if depth == 0 {
				if a := strings.TrimSpace(src[from:i]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(src[from:i]))
				from = i + 1
			}
		}
		i++
	}
	return args
}

// argText is argument i of call n as written, or "".
func (d *diag) argText(n *dnode, i int) string {
	if d.calls == nil || n.call < 0 || n.call >= len(d.calls) {
		return ""
	}
	c := d.calls[n.call]
	if c.name != n.str || len(c.args) != len(n.kids) || i >= len(c.args) {
		return ""
	}
	return c.args[i]
}

// typeError says that argument i of call n, which evaluated to v, is none
// of the kinds wanted.
func (d *diag) typeError(n *dnode, i int, want []argKind, v any, absent bool) error {
	sig := jmesSigs[n.str]
	msg := n.str + "() needs " + kindsText(want)
	if len(sig.args) > 1 || sig.variadic && len(n.kids) > 1 {
		if i < len(ordinals) {
			msg += " as its " + ordinals[i] + " argument"
		} else {
			msg += " as argument " + strconv.Itoa(i+1)
		}
	}
	if t := d.argText(n, i); t != "" {
		return errors.New(msg + "; " + t + " is " + describe(v, absent))
	}
	return errors.New(msg + "; it got " + describe(v, absent))
}

// keyTypeError says why sort_by, max_by or min_by cannot order its items:
// key k of item i is neither a number nor a string (first is nil), or not
// of the type of item 0's key first.
func (d *diag) keyTypeError(n *dnode, i int, k any, absent bool, first any) error {
	keyText := d.argText(n, 1)
	if keyText == "" {
		keyText = "the key expression"
	}
	msg := n.str + "() needs " + keyText + " to give only numbers or only strings; "
	if first == nil {
		return fmt.Errorf("%sfor item %d it is %s", msg, i, describe(k, absent))
	}
	return fmt.Errorf("%sfor item 0 it is %s but for item %d %s", msg, describe(first, false), i, describe(k, absent))
}

// explainJMESPath says in plain words why src failed over data: the
// function, the accepted types, the argument as written and what it
// evaluated to. It returns "" when it finds nothing more precise than the
// original error.
func explainJMESPath(src string, data any) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = ""
		}
	}()
	jsrc, _ := rewriteDollar(src)
	root, calls := compileDiag(jsrc, src)
	if root == nil {
		return ""
	}
	d := &diag{calls: calls, m: newMeter(context.Background(), DefaultBudget), root: data}
	_, _, err := d.eval(root, data)
	if err == nil || d.m.err != nil {
		return ""
	}
	return err.Error()
}

// ExplainJMESPathError turns an error (or a recovered panic) of go-jmespath
// evaluating src over data into plain words naming the function, the types
// it accepts, the argument as written and what it evaluated to, e.g.
// `length() needs an array, string or object; languages is missing (null)`.
// Without anything more precise it returns cause as text.
func ExplainJMESPathError(src string, data any, cause any) string {
	if msg := explainJMESPath(src, data); msg != "" {
		return msg
	}
	if err, ok := cause.(error); ok {
		return err.Error()
	}
	return fmt.Sprint(cause)
}
