package expr

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/jmespath/go-jmespath"
)

// go-jmespath has no budget, no cancellation and no "$", so every run walks
// go-jmespath's syntax tree with this interpreter instead. go-jmespath stays
// the parser, computes the functions that take no expression argument, and
// is the reference the compliance test and FuzzJMESPathMirror hold this walk
// to. The walk checks every call against the function's signature, which is
// what lets its errors name the function and the argument (jmeserr.go).

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
		for i := 0; ok && i < len(a); i++ {
			if k == kArrayNumber {
				_, ok = a[i].(float64)
			} else {
				_, ok = a[i].(string)
			}
		}
		return ok
	case kExpref:
		_, ok := v.(expref)
		return ok
	}
	return false
}

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
		if v.Field(jast.typ).Int() == int64(jComparator) {
			if val := v.Field(jast.value); !val.IsNil() && val.Elem().CanInt() {
				ops[int(val.Elem().Int())] = op
			}
		}
	}
	return ops
})

// toDNode copies go-jmespath's tree (read with the field indices jmes.go
// found; the caller checks jast.ok).
func toDNode(v reflect.Value) *dnode {
	n := &dnode{typ: int(v.Field(jast.typ).Int()), call: -1}
	if val := v.Field(jast.value); !val.IsNil() {
		e := val.Elem()
		switch {
		case n.typ == jLiteral:
			n.lit = reflectToAny(e)
		case n.typ == jSlice && e.Kind() == reflect.Slice:
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
	ch := v.Field(jast.children)
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
		for it := v.MapRange(); it.Next(); {
			out[it.Key().String()] = reflectToAny(it.Value())
		}
		return out
	}
	return nil
}

// numberCalls numbers the function calls in the order their names appear in
// the source: a filter's condition comes before what it projects.
func numberCalls(n *dnode, next *int, out *[]*dnode) {
	if n.typ == jFunction {
		n.call = *next
		*next++
		*out = append(*out, n)
	}
	kids := n.kids
	if n.typ == jFilterProj && len(kids) == 3 {
		kids = []*dnode{kids[0], kids[2], kids[1]}
	}
	for _, k := range kids {
		numberCalls(k, next, out)
	}
}

// diag is one evaluation: it charges m for what it builds and reads "$"
// as root (dollar.go).
type diag struct {
	calls []srcCall // the calls as written; nil when they could not be matched to the tree
	m     *meter
	root  any
}

// take charges x, about to be put into a value being built.
func (d *diag) take(x any) error { return d.m.charge(x) }

// built charges the container just built around values already taken.
func (d *diag) built() error { return d.m.add(1, 2) }

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
	if err := d.m.step(); err != nil {
		return nil, false, err
	}
	switch n.typ {
	case jField:
		return d.field(n, v)
	case jSubexpr, jIndexExpr:
		return d.subexpr(n, v)
	case jProjection, jFilterProj, jValueProj:
		return d.project(n, v)
	case jFlatten:
		return d.flatten(n, v)
	case jFunction:
		return d.call(n, v)
	case jComparator:
		return d.compare(n, v)
	case jMultiList, jMultiHash:
		return d.multiSelect(n, v)
	case jOr, jAnd, jNot:
		return d.logic(n, v)
	case jPipe:
		var abs bool
		var err error
		for _, k := range n.kids {
			if v, abs, err = d.eval(k, v); err != nil {
				return nil, false, err
			}
		}
		return v, abs, nil
	case jIndex:
		return atIndex(n.num, v)
	case jSlice:
		return d.sliceOf(n, v)
	case jKeyVal:
		return d.eval(n.kids[0], v)
	case jExpRef:
		return expref{n.kids[0]}, false, nil
	case jLiteral:
		return n.lit, false, nil
	case jIdentity, jCurrent:
		return v, false, nil
	}
	return nil, false, fmt.Errorf("unknown expression node %d", n.typ)
}

func (d *diag) field(n *dnode, v any) (any, bool, error) {
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
}

func (d *diag) subexpr(n *dnode, v any) (any, bool, error) {
	l, abs, err := d.eval(n.kids[0], v)
	if err != nil {
		return nil, false, err
	}
	// a.b with a missing is missing; a function on the right still runs
	// over null, as go-jmespath runs it (a.length(@) fails).
	if l == nil && abs && n.kids[1].typ != jFunction {
		return nil, true, nil
	}
	return d.eval(n.kids[1], l)
}

// project is a[*].b, a[?c].b and a.*.b: the right side over each item of
// the left (an array; an object's values), dropping nulls.
func (d *diag) project(n *dnode, v any) (any, bool, error) {
	left, _, err := d.eval(n.kids[0], v)
	if err != nil {
		if n.typ == jProjection {
			return nil, false, err
		}
		return nil, false, nil // go-jmespath ignores errors left of a filter or ".*"
	}
	items, ok := left.([]any)
	if n.typ == jValueProj {
		m, isMap := left.(map[string]any)
		ok, items = isMap, make([]any, 0, len(m))
		for _, x := range m {
			items = append(items, x)
		}
	}
	if !ok {
		return nil, false, nil
	}
	out := []any{}
	for _, el := range items {
		if n.typ == jFilterProj {
			c, _, err := d.eval(n.kids[2], el)
			if err != nil {
				return nil, false, err
			}
			if isFalsy(c) {
				continue
			}
		}
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

func (d *diag) flatten(n *dnode, v any) (any, bool, error) {
	left, _, err := d.eval(n.kids[0], v)
	arr, ok := left.([]any)
	if err != nil || !ok {
		return nil, false, nil // go-jmespath ignores errors on the left
	}
	out := []any{}
	for i, el := range arr {
		inner, ok := el.([]any)
		if !ok {
			inner = arr[i : i+1]
		}
		for _, x := range inner {
			if err := d.take(x); err != nil {
				return nil, false, err
			}
		}
		out = append(out, inner...)
	}
	return out, false, d.built()
}

func (d *diag) compare(n *dnode, v any) (any, bool, error) {
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
		return d.m.equal(l, r), false, nil
	case "!=":
		return !d.m.equal(l, r), false, nil
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
}

// multiSelect is [a, b] and {x: a, y: b}; over null it is null.
func (d *diag) multiSelect(n *dnode, v any) (any, bool, error) {
	if v == nil {
		return nil, false, nil
	}
	vals := make([]any, len(n.kids))
	for i, k := range n.kids {
		x, _, err := d.eval(k, v)
		if err != nil {
			return nil, false, err
		}
		if err := d.take(x); err != nil {
			return nil, false, err
		}
		vals[i] = x
	}
	if n.typ == jMultiList {
		return vals, false, d.built()
	}
	out := make(map[string]any, len(vals))
	for i, k := range n.kids {
		out[k.str] = vals[i]
	}
	return out, false, d.built()
}

// logic is ||, && and !; || and && give an operand, not a boolean.
func (d *diag) logic(n *dnode, v any) (any, bool, error) {
	l, abs, err := d.eval(n.kids[0], v)
	switch {
	case err != nil:
		return nil, false, err
	case n.typ == jNot:
		return isFalsy(l), false, nil
	case n.typ == jOr && !isFalsy(l), n.typ == jAnd && isFalsy(l):
		return l, abs, nil
	}
	return d.eval(n.kids[1], v)
}

func atIndex(i int, v any) (any, bool, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false, nil
	}
	if i < 0 {
		i += len(arr)
	}
	if i < 0 || i >= len(arr) {
		return nil, true, nil
	}
	return arr[i], false, nil
}

// sliceOf is arr[start:stop:step]; a step of 0 is an error, as in
// go-jmespath (over an array only: slicing anything else is null).
func (d *diag) sliceOf(n *dnode, v any) (any, bool, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false, nil
	}
	step := 1
	if n.slice[2] != nil {
		step = *n.slice[2]
	}
	if step == 0 {
		return nil, false, errors.New("a slice's step cannot be 0")
	}
	l := len(arr)
	bound := func(p *int, def int) int {
		switch {
		case p == nil:
			return def
		case *p < 0 && *p+l < 0 && step < 0:
			return -1
		case *p < 0:
			return max(*p+l, 0)
		case *p >= l && step < 0:
			return l - 1
		}
		return min(*p, l)
	}
	var start, stop int
	if step > 0 {
		start, stop = bound(n.slice[0], 0), bound(n.slice[1], l)
	} else {
		start, stop = bound(n.slice[0], l-1), bound(n.slice[1], -1)
	}
	out := []any{}
	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		if err := d.take(arr[i]); err != nil {
			return nil, false, err
		}
		out = append(out, arr[i])
	}
	return out, false, d.built()
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
		out := []any{}
		for _, el := range args[1].([]any) {
			x, _, err := d.eval(args[0].(expref).n, el)
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
	switch n.str {
	case "keys", "values", "sort", "reverse", "merge", "to_array", "join", "to_string":
		if err := d.take(x); err != nil {
			return nil, false, err
		}
	}
	return x, false, nil
}

// byKey computes sort_by, max_by and min_by.
func (d *diag) byKey(n *dnode, arr []any, e expref) (any, bool, error) {
	// go-jmespath answers an empty or one-item array without evaluating
	// the key expression, so a key that would fail is no error there.
	if len(arr) < 2 {
		switch {
		case len(arr) == 0 && n.str == "sort_by":
			return []any{}, false, nil
		case len(arr) == 0:
			return nil, false, nil
		case n.str != "sort_by":
			return arr[0], false, nil
		}
		if err := d.take(arr[0]); err != nil {
			return nil, false, err
		}
		return []any{arr[0]}, false, d.built()
	}
	keys, err := d.sortKeys(n, arr, e)
	if err != nil {
		return nil, false, err
	}
	less := func(i, j int) bool {
		if a, ok := keys[i].(float64); ok {
			return a < keys[j].(float64)
		}
		return keys[i].(string) < keys[j].(string)
	}
	best := 0
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
		for i := range arr {
			if less(best, i) {
				best = i
			}
		}
	default:
		for i := range arr {
			if less(i, best) {
				best = i
			}
		}
	}
	return arr[best], false, nil
}

// sortKeys evaluates the key expression over each item: only numbers or
// only strings can be ordered.
func (d *diag) sortKeys(n *dnode, arr []any, e expref) ([]any, error) {
	keys := make([]any, len(arr))
	for i, el := range arr {
		k, abs, err := d.eval(e.n, el)
		if err != nil {
			return nil, err
		}
		_, num := k.(float64)
		_, str := k.(string)
		_, firstNum := keys[0].(float64)
		switch {
		case !num && !str:
			return nil, d.keyTypeError(n, i, k, abs, nil)
		case i > 0 && num != firstNum:
			return nil, d.keyTypeError(n, i, k, abs, keys[0])
		}
		keys[i] = k
	}
	return keys, nil
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
