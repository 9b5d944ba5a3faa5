package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jmespath/go-jmespath"
)

// go-jmespath reports a function given the wrong type as
// `Invalid type for: <nil>, expected: []jmespath.jpType{"string", ...}`,
// naming neither the function nor the argument, and panics on some others
// (merge of a non-object). On that cold path the expression is evaluated
// again by a small interpreter that mirrors go-jmespath's and checks every
// function call, so the error can say which function, which argument as
// written, and what it evaluated to.

// argKind is one accepted argument type of a built-in function.
type argKind int

const (
	kAny argKind = iota
	kArray
	kArrayNumber
	kArrayString
	kString
	kNumber
	kObject
	kExpref
)

var kindWords = map[argKind]string{
	kArray: "array", kArrayNumber: "array of numbers", kArrayString: "array of strings",
	kString: "string", kNumber: "number", kObject: "object", kExpref: "expression like &field",
}

type fnSig struct {
	args     [][]argKind
	variadic bool // the last argument repeats
}

// jmesSigs are go-jmespath v0.4.0's signatures (functions.go).
var jmesSigs = map[string]fnSig{
	"abs":         {args: [][]argKind{{kNumber}}},
	"avg":         {args: [][]argKind{{kArrayNumber}}},
	"ceil":        {args: [][]argKind{{kNumber}}},
	"contains":    {args: [][]argKind{{kArray, kString}, {kAny}}},
	"ends_with":   {args: [][]argKind{{kString}, {kString}}},
	"floor":       {args: [][]argKind{{kNumber}}},
	"join":        {args: [][]argKind{{kString}, {kArrayString}}},
	"keys":        {args: [][]argKind{{kObject}}},
	"length":      {args: [][]argKind{{kArray, kString, kObject}}},
	"map":         {args: [][]argKind{{kExpref}, {kArray}}},
	"max":         {args: [][]argKind{{kArrayNumber, kArrayString}}},
	"max_by":      {args: [][]argKind{{kArray}, {kExpref}}},
	"merge":       {args: [][]argKind{{kObject}}, variadic: true},
	"min":         {args: [][]argKind{{kArrayNumber, kArrayString}}},
	"min_by":      {args: [][]argKind{{kArray}, {kExpref}}},
	"not_null":    {args: [][]argKind{{kAny}}, variadic: true},
	"reverse":     {args: [][]argKind{{kArray, kString}}},
	"sort":        {args: [][]argKind{{kArrayNumber, kArrayString}}},
	"sort_by":     {args: [][]argKind{{kArray}, {kExpref}}},
	"starts_with": {args: [][]argKind{{kString}, {kString}}},
	"sum":         {args: [][]argKind{{kArrayNumber}}},
	"to_array":    {args: [][]argKind{{kAny}}},
	"to_number":   {args: [][]argKind{{kAny}}},
	"to_string":   {args: [][]argKind{{kAny}}},
	"type":        {args: [][]argKind{{kAny}}},
	"values":      {args: [][]argKind{{kObject}}},
}

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

func kindOK(k argKind, v any) bool {
	switch k {
	case kAny:
		return true
	case kNumber:
		_, ok := v.(float64)
		return ok
	case kString:
		_, ok := v.(string)
		return ok
	case kArray:
		_, ok := v.([]any)
		return ok
	case kObject:
		_, ok := v.(map[string]any)
		return ok
	case kArrayNumber, kArrayString:
		a, ok := v.([]any)
		if !ok {
			return false
		}
		for _, x := range a {
			if _, isNum := x.(float64); k == kArrayNumber && !isNum {
				return false
			}
			if _, isStr := x.(string); k == kArrayString && !isStr {
				return false
			}
		}
		return true
	case kExpref:
		_, ok := v.(expref)
		return ok
	}
	return false
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

var ordinals = []string{"first", "second", "third", "fourth", "fifth"}

// dnode is a go-jmespath AST node with the values the interpreter needs.
type dnode struct {
	typ   int
	str   string
	num   int
	lit   any
	slice [3]*int
	kids  []*dnode
	call  int // for a function: its index among the calls in source order
}

type expref struct{ n *dnode }

// comparator token values, learnt from the parser itself (its token type
// is unexported).
var cmpOps = sync.OnceValue(func() map[int]string {
	ops := map[int]string{}
	for _, op := range []string{"==", "!=", "<", "<=", ">", ">="} {
		ast, err := jmespath.NewParser().Parse("a " + op + " b")
		if err != nil {
			continue
		}
		v := reflect.ValueOf(ast)
		if v.FieldByName("nodeType").Int() == int64(int(jmespath.ASTComparator)) {
			if val := v.FieldByName("value"); !val.IsNil() && val.Elem().CanInt() {
				ops[int(val.Elem().Int())] = op
			}
		}
	}
	return ops
})

func toDNode(v reflect.Value) *dnode {
	n := &dnode{typ: int(v.FieldByName("nodeType").Int()), call: -1}
	if val := v.FieldByName("value"); !val.IsNil() {
		e := val.Elem()
		switch {
		case n.typ == int(jmespath.ASTLiteral):
			n.lit = reflectToAny(e)
		case n.typ == int(jmespath.ASTSlice) && e.Kind() == reflect.Slice:
			for i := 0; i < e.Len() && i < 3; i++ {
				if p := e.Index(i); !p.IsNil() {
					x := int(p.Elem().Int())
					n.slice[i] = &x
				}
			}
		case e.Kind() == reflect.String:
			n.str = e.String()
		case e.CanInt():
			n.num = int(e.Int())
		}
	}
	ch := v.FieldByName("children")
	for i := 0; i < ch.Len(); i++ {
		n.kids = append(n.kids, toDNode(ch.Index(i)))
	}
	return n
}

// reflectToAny copies a JSON literal out of an unexported field.
func reflectToAny(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return reflectToAny(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return float64(v.Int())
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = reflectToAny(v.Index(i))
		}
		return out
	case reflect.Map:
		out := make(map[string]any, v.Len())
		it := v.MapRange()
		for it.Next() {
			out[it.Key().String()] = reflectToAny(it.Value())
		}
		return out
	}
	return nil
}

// numberCalls numbers the function calls in the order their names appear in
// the source: a filter's condition comes before what it projects.
func numberCalls(n *dnode, next *int, out *[]*dnode) {
	if n.typ == int(jmespath.ASTFunctionExpression) {
		n.call = *next
		*next++
		*out = append(*out, n)
	}
	kids := n.kids
	if n.typ == int(jmespath.ASTFilterProjection) && len(kids) == 3 {
		kids = []*dnode{kids[0], kids[2], kids[1]}
	}
	for _, k := range kids {
		numberCalls(k, next, out)
	}
}

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
	skipQuoted := func(i int) int { // i at the opening quote; returns the index after the closing one
		q := src[i]
		for i++; i < len(src) && src[i] != q; i++ {
			if src[i] == '\\' {
				i++
			}
		}
		return i + 1
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipQuoted(i)
		case isIdent(c, true) && (i == 0 || !isIdent(src[i-1], false)):
			j := i
			for j < len(src) && isIdent(src[j], false) {
				j++
			}
			name := src[i:j]
			k := j
			for k < len(src) && isSpace(src[k]) {
				k++
			}
			if k < len(src) && src[k] == '(' {
				calls = append(calls, srcCall{name: name, args: splitArgs(src, k+1, skipQuoted)})
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

// splitArgs splits the arguments of a call whose "(" ends at start.
func splitArgs(src string, start int, skipQuoted func(int) int) []string {
	var args []string
	depth, from := 0, start
	for i := start; i < len(src); {
		switch src[i] {
		case '"', '\'', '`':
			i = skipQuoted(i)
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

// diag evaluates an expression like go-jmespath, checking function calls.
type diag struct {
	calls []srcCall // nil when the source could not be matched to the AST
	steps int
	m     *meter // set when evaluating for a result: charges sizes, watches the context
	root  any    // what "$" reads (dollar.go)
}

// take charges x, about to be put into a value being built.
func (d *diag) take(x any) error {
	if d.m == nil {
		return nil
	}
	return d.m.charge(x)
}

// built charges the container just built around values already taken.
func (d *diag) built() error {
	if d.m == nil {
		return nil
	}
	return d.m.add(1, 2)
}

func (d *diag) equal(a, b any) bool {
	if d.m == nil {
		return reflect.DeepEqual(a, b)
	}
	return d.m.equal(a, b)
}

var errDiagBudget = errors.New("diagnosis budget exhausted")

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

func isFalsy(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// eval returns the value, whether it is a missing field, and the first
// error.
func (d *diag) eval(n *dnode, v any) (any, bool, error) {
	if d.m != nil {
		if err := d.m.step(); err != nil {
			return nil, false, err
		}
	} else if d.steps++; d.steps > 1_000_000 {
		return nil, false, errDiagBudget
	}
	switch n.typ {
	case int(jmespath.ASTComparator):
		l, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, err
		}
		r, _, err := d.eval(n.kids[1], v)
		if err != nil {
			return nil, false, err
		}
		op := cmpOps()[n.num]
		switch op {
		case "==":
			return d.equal(l, r), false, nil
		case "!=":
			return !d.equal(l, r), false, nil
		}
		ln, ok1 := l.(float64)
		rn, ok2 := r.(float64)
		if !ok1 || !ok2 {
			return nil, false, nil
		}
		switch op {
		case "<":
			return ln < rn, false, nil
		case "<=":
			return ln <= rn, false, nil
		case ">":
			return ln > rn, false, nil
		case ">=":
			return ln >= rn, false, nil
		}
		return nil, false, nil
	case int(jmespath.ASTExpRef):
		return expref{n.kids[0]}, false, nil
	case int(jmespath.ASTFunctionExpression):
		return d.call(n, v)
	case int(jmespath.ASTField):
		if n.str == rootField {
			return d.root, false, nil
		}
		m, ok := v.(map[string]any)
		if ms, isScope := v.(MapScope); isScope {
			m, ok = ms, true
		}
		if !ok {
			return nil, true, nil
		}
		x, ok := m[n.str]
		return x, !ok, nil
	case int(jmespath.ASTFilterProjection):
		left, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, nil // go-jmespath ignores errors on the left
		}
		arr, ok := left.([]any)
		if !ok {
			return nil, false, nil
		}
		out := []any{}
		for _, el := range arr {
			c, _, err := d.eval(n.kids[2], el)
			if err != nil {
				return nil, false, err
			}
			if !isFalsy(c) {
				x, _, err := d.eval(n.kids[1], el)
				if err != nil {
					return nil, false, err
				}
				if x != nil {
					if err := d.take(x); err != nil {
						return nil, false, err
					}
					out = append(out, x)
				}
			}
		}
		return out, false, d.built()
	case int(jmespath.ASTFlatten):
		left, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, nil
		}
		arr, ok := left.([]any)
		if !ok {
			return nil, false, nil
		}
		out := []any{}
		for _, el := range arr {
			if a, ok := el.([]any); ok {
				for _, x := range a {
					if err := d.take(x); err != nil {
						return nil, false, err
					}
				}
				out = append(out, a...)
			} else {
				if err := d.take(el); err != nil {
					return nil, false, err
				}
				out = append(out, el)
			}
		}
		return out, false, d.built()
	case int(jmespath.ASTIdentity), int(jmespath.ASTCurrentNode):
		return v, false, nil
	case int(jmespath.ASTIndex):
		arr, ok := v.([]any)
		if !ok {
			return nil, false, nil
		}
		i := n.num
		if i < 0 {
			i += len(arr)
		}
		if i < 0 || i >= len(arr) {
			return nil, true, nil
		}
		return arr[i], false, nil
	case int(jmespath.ASTKeyValPair):
		return d.eval(n.kids[0], v)
	case int(jmespath.ASTLiteral):
		return n.lit, false, nil
	case int(jmespath.ASTMultiSelectHash):
		if v == nil {
			return nil, false, nil
		}
		out := map[string]any{}
		for _, k := range n.kids {
			x, _, err := d.eval(k, v)
			if err != nil {
				return nil, false, err
			}
			if err := d.take(x); err != nil {
				return nil, false, err
			}
			out[k.str] = x
		}
		return out, false, d.built()
	case int(jmespath.ASTMultiSelectList):
		if v == nil {
			return nil, false, nil
		}
		out := []any{}
		for _, k := range n.kids {
			x, _, err := d.eval(k, v)
			if err != nil {
				return nil, false, err
			}
			if err := d.take(x); err != nil {
				return nil, false, err
			}
			out = append(out, x)
		}
		return out, false, d.built()
	case int(jmespath.ASTOrExpression):
		l, abs, err := d.eval(n.kids[0], v)
		if err != nil || !isFalsy(l) {
			return l, abs, err
		}
		return d.eval(n.kids[1], v)
	case int(jmespath.ASTAndExpression):
		l, abs, err := d.eval(n.kids[0], v)
		if err != nil || isFalsy(l) {
			return l, abs, err
		}
		return d.eval(n.kids[1], v)
	case int(jmespath.ASTNotExpression):
		x, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, err
		}
		return isFalsy(x), false, nil
	case int(jmespath.ASTPipe):
		var abs bool
		var err error
		for _, k := range n.kids {
			if v, abs, err = d.eval(k, v); err != nil {
				return nil, false, err
			}
		}
		return v, abs, nil
	case int(jmespath.ASTProjection):
		left, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, err
		}
		arr, ok := left.([]any)
		if !ok {
			return nil, false, nil
		}
		out := []any{}
		for _, el := range arr {
			x, _, err := d.eval(n.kids[1], el)
			if err != nil {
				return nil, false, err
			}
			if x != nil {
				if err := d.take(x); err != nil {
					return nil, false, err
				}
				out = append(out, x)
			}
		}
		return out, false, d.built()
	case int(jmespath.ASTSubexpression), int(jmespath.ASTIndexExpression):
		l, abs, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, err
		}
		// a.b with a missing is missing; a function on the right still
		// runs over null, as go-jmespath runs it (a.length(@) fails).
		if l == nil && abs && n.kids[1].typ != int(jmespath.ASTFunctionExpression) {
			return nil, true, nil
		}
		return d.eval(n.kids[1], l)
	case int(jmespath.ASTSlice):
		arr, ok := v.([]any)
		if !ok {
			return nil, false, nil
		}
		out, err := sliceOf(arr, n.slice)
		if err != nil {
			return nil, false, err
		}
		for _, x := range out {
			if err := d.take(x); err != nil {
				return nil, false, err
			}
		}
		return out, false, d.built()
	case int(jmespath.ASTValueProjection):
		left, _, err := d.eval(n.kids[0], v)
		if err != nil {
			return nil, false, nil
		}
		m, ok := left.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		out := []any{}
		for _, el := range m {
			x, _, err := d.eval(n.kids[1], el)
			if err != nil {
				return nil, false, err
			}
			if x != nil {
				if err := d.take(x); err != nil {
					return nil, false, err
				}
				out = append(out, x)
			}
		}
		return out, false, d.built()
	}
	return nil, false, fmt.Errorf("unknown expression node %d", n.typ)
}

// sliceOf is arr[start:stop:step]; a step of 0 is an error, as in
// go-jmespath (over an array only: slicing anything else is null).
func sliceOf(arr []any, parts [3]*int) ([]any, error) {
	step := 1
	if parts[2] != nil {
		step = *parts[2]
	}
	if step == 0 {
		return nil, errors.New("a slice's step cannot be 0")
	}
	n := len(arr)
	bound := func(p *int, def int) int {
		if p == nil {
			return def
		}
		x := *p
		if x < 0 {
			x += n
			if x < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if x >= n {
			if step < 0 {
				return n - 1
			}
			return n
		}
		return x
	}
	var start, stop int
	if step > 0 {
		start, stop = bound(parts[0], 0), bound(parts[1], n)
	} else {
		start, stop = bound(parts[0], n-1), bound(parts[1], -1)
	}
	out := []any{}
	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		out = append(out, arr[i])
	}
	return out, nil
}

func (d *diag) call(n *dnode, v any) (any, bool, error) {
	sig, ok := jmesSigs[n.str]
	if !ok {
		return nil, false, fmt.Errorf("unknown function %s()", n.str)
	}
	if msg := arityError(n.str, len(n.kids)); msg != "" {
		return nil, false, errors.New(msg)
	}
	args := make([]any, len(n.kids))
	for i, k := range n.kids {
		x, abs, err := d.eval(k, v)
		if err != nil {
			return nil, false, err
		}
		want := sig.args[min(i, len(sig.args)-1)]
		ok := false
		for _, kd := range want {
			ok = ok || kindOK(kd, x)
		}
		if !ok {
			return nil, false, d.typeError(n, i, want, x, abs)
		}
		args[i] = x
	}
	switch n.str {
	case "map":
		e := args[0].(expref)
		out := []any{}
		for _, el := range args[1].([]any) {
			x, _, err := d.eval(e.n, el)
			if err != nil {
				return nil, false, err
			}
			if err := d.take(x); err != nil {
				return nil, false, err
			}
			out = append(out, x)
		}
		return out, false, d.built()
	case "sort_by", "max_by", "min_by":
		return d.byKey(n, args[0].([]any), args[1].(expref))
	}
	// The rest have no expression arguments: go-jmespath computes them.
	x, err := callFn(n.str, len(args), args)
	if err != nil {
		return nil, false, fmt.Errorf("%s(): %v", n.str, err)
	}
	if d.m != nil {
		switch n.str {
		case "keys", "values", "sort", "reverse", "merge", "to_array", "join", "to_string":
			if err := d.take(x); err != nil {
				return nil, false, err
			}
		}
	}
	return x, false, nil
}

// byKey computes sort_by, max_by and min_by, which need the key expression
// to give only numbers or only strings.
func (d *diag) byKey(n *dnode, arr []any, e expref) (any, bool, error) {
	// go-jmespath answers an empty or one-item array without evaluating
	// the key expression, so a key that would fail is no error there.
	switch {
	case len(arr) == 0 && n.str == "sort_by":
		return []any{}, false, nil
	case len(arr) == 0:
		return nil, false, nil
	case len(arr) == 1 && n.str == "sort_by":
		if err := d.take(arr[0]); err != nil {
			return nil, false, err
		}
		return []any{arr[0]}, false, d.built()
	case len(arr) == 1:
		return arr[0], false, nil
	}
	keyText := d.argText(n, 1)
	if keyText == "" {
		keyText = "the key expression"
	}
	keys := make([]any, len(arr))
	for i, el := range arr {
		k, abs, err := d.eval(e.n, el)
		if err != nil {
			return nil, false, err
		}
		_, num := k.(float64)
		_, str := k.(string)
		_, firstNum := keys[0].(float64)
		switch {
		case !num && !str:
			return nil, false, fmt.Errorf("%s() needs %s to give only numbers or only strings; for item %d it is %s",
				n.str, keyText, i, describe(k, abs))
		case i > 0 && num != firstNum:
			return nil, false, fmt.Errorf("%s() needs %s to give only numbers or only strings; for item 0 it is %s but for item %d %s",
				n.str, keyText, describe(keys[0], false), i, describe(k, abs))
		}
		keys[i] = k
	}
	less := func(i, j int) bool {
		if a, ok := keys[i].(float64); ok {
			return a < keys[j].(float64)
		}
		return keys[i].(string) < keys[j].(string)
	}
	switch n.str {
	case "sort_by":
		idx := make([]int, len(arr))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return less(idx[a], idx[b]) })
		out := make([]any, len(arr))
		for i, k := range idx {
			if err := d.take(arr[k]); err != nil {
				return nil, false, err
			}
			out[i] = arr[k]
		}
		return out, false, d.built()
	case "max_by":
		best := 0
		for i := range arr {
			if less(best, i) {
				best = i
			}
		}
		return arr[best], false, nil
	}
	best := 0
	for i := range arr {
		if less(i, best) {
			best = i
		}
	}
	return arr[best], false, nil
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
	if !jast.ok {
		return ""
	}
	jsrc, _ := rewriteDollar(src)
	ast, err := jmespath.NewParser().Parse(jsrc)
	if err != nil {
		return ""
	}
	root := toDNode(reflect.ValueOf(ast))
	var fns []*dnode
	next := 0
	numberCalls(root, &next, &fns)
	d := &diag{calls: scanCalls(src), root: data}
	if len(d.calls) != len(fns) {
		d.calls = nil
	}
	_, _, err = d.eval(root, data)
	if err == nil || errors.Is(err, errDiagBudget) {
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

// CloneJSON copies the maps and slices of a JSON-like value, for callers of
// go-jmespath's sort_by, which sorts its argument in place.
func CloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = CloneJSON(e)
		}
		return out
	case MapScope:
		return CloneJSON(map[string]any(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CloneJSON(e)
		}
		return out
	}
	return v
}

// fnCalls caches go-jmespath compiled as name(@[0], @[1], ...), one per
// function and argument count: compiling builds a function table.
var fnCalls sync.Map // "name/n" → *jmespath.JMESPath

// callFn runs go-jmespath's built-in name over already evaluated args.
func callFn(name string, n int, args []any) (any, error) {
	key := name + "/" + strconv.Itoa(n)
	c, ok := fnCalls.Load(key)
	if !ok {
		src := make([]string, n)
		for i := range src {
			src[i] = "@[" + strconv.Itoa(i) + "]"
		}
		jp, err := jmespath.Compile(name + "(" + strings.Join(src, ", ") + ")")
		if err != nil {
			return nil, err
		}
		c, _ = fnCalls.LoadOrStore(key, jp)
	}
	return c.(*jmespath.JMESPath).Search(args)
}
