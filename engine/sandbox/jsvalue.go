package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// maxJSONDepth bounds nesting as encoding/json does, so a hostile value
// cannot exhaust a stack.
const maxJSONDepth = 10000

var errJSONSyntax = errors.New("the data is not valid JSON")

// maker builds the values one JSON reading produces: JavaScript values in
// a runtime (jsMaker: a call's scope) or Go data (goMaker: a call's
// answer).
type maker[V any] interface {
	scalar(v any) V                            // a string, float64, bool or nil
	object(keys []string, vals []V) (V, error) // keys in document order, duplicates included
	array(items []V) V
}

// jsonReader reads one JSON text with a maker. goja's own JSON.parse goes
// through encoding/json's token reader and cost a trivial call a third of
// its time; json.Unmarshal's set-up was most of decoding a small answer.
type jsonReader[V any] struct {
	m     maker[V]
	b     []byte
	i     int
	depth int
}

// read reads the whole text as one value.
func (p *jsonReader[V]) read() (V, error) {
	v, err := p.value()
	if err == nil {
		if p.space(); p.i != len(p.b) {
			err = errJSONSyntax
		}
	}
	return v, err
}

func (p *jsonReader[V]) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *jsonReader[V]) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonReader[V]) value() (v V, err error) {
	p.space()
	if p.i >= len(p.b) {
		return v, errJSONSyntax
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return v, err
		}
		return p.m.scalar(s), nil
	case c == 't':
		return p.word("true", true)
	case c == 'f':
		return p.word("false", false)
	case c == 'n':
		return p.word("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return v, errJSONSyntax
}

func (p *jsonReader[V]) word(w string, x any) (v V, err error) {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return v, errJSONSyntax
	}
	p.i += len(w)
	return p.m.scalar(x), nil
}

func (p *jsonReader[V]) number() (v V, err error) {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' && (c < '0' || c > '9') {
			break
		}
		p.i++
	}
	text := p.b[start:p.i]
	if !json.Valid(text) {
		return v, fmt.Errorf("%w: bad number %q", errJSONSyntax, text)
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return v, errJSONSyntax
	}
	return p.m.scalar(f), nil
}

// str reads a string; one without escapes is taken as is.
func (p *jsonReader[V]) str() (string, error) {
	if !p.eat('"') {
		return "", errJSONSyntax
	}
	start := p.i
	escaped := false
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			p.i++
			if !escaped {
				return string(p.b[start : p.i-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.b[start-1:p.i], &s); err != nil {
				return "", errJSONSyntax
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.i += 2
		case c < 0x20:
			return "", errJSONSyntax
		default:
			p.i++
		}
	}
	return "", errJSONSyntax
}

// nest counts one more level of nesting, refusing one too many.
func (p *jsonReader[V]) nest() error {
	if p.depth++; p.depth > maxJSONDepth {
		return fmt.Errorf("the data nests deeper than %d levels", maxJSONDepth)
	}
	return nil
}

// members reads an object's keys and values, in document order.
func (p *jsonReader[V]) members() (keys []string, vals []V, err error) {
	if err := p.nest(); err != nil {
		return nil, nil, err
	}
	defer func() { p.depth-- }()
	if p.space(); !p.eat('{') {
		return nil, nil, errJSONSyntax
	}
	if p.space(); p.eat('}') {
		return keys, vals, nil
	}
	for {
		p.space()
		k, err := p.str()
		if err != nil {
			return nil, nil, err
		}
		if p.space(); !p.eat(':') {
			return nil, nil, errJSONSyntax
		}
		v, err := p.value()
		if err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, v)
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return keys, vals, nil
		}
		return nil, nil, errJSONSyntax
	}
}

func (p *jsonReader[V]) object() (v V, err error) {
	keys, vals, err := p.members()
	if err != nil {
		return v, err
	}
	return p.m.object(keys, vals)
}

func (p *jsonReader[V]) array() (v V, err error) {
	if err := p.nest(); err != nil {
		return v, err
	}
	defer func() { p.depth-- }()
	p.i++ // [
	items := []V{}
	if p.space(); p.eat(']') {
		return p.m.array(items), nil
	}
	for {
		x, err := p.value()
		if err != nil {
			return v, err
		}
		items = append(items, x)
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			return p.m.array(items), nil
		}
		return v, errJSONSyntax
	}
}

// jsMaker builds plain objects and arrays made by the VM, never Go values
// wrapped as host objects, as JSON.parse would.
type jsMaker struct{ vm *goja.Runtime }

func (m jsMaker) scalar(v any) goja.Value {
	if v == nil {
		return goja.Null()
	}
	return m.vm.ToValue(v)
}

func (m jsMaker) object(keys []string, vals []goja.Value) (goja.Value, error) {
	o := m.vm.NewObject()
	for i, k := range keys {
		var err error
		if k == "__proto__" {
			// an own property, as JSON.parse makes it, never the prototype
			err = o.DefineDataProperty(k, vals[i], goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
		} else {
			err = o.Set(k, vals[i])
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

func (m jsMaker) array(items []goja.Value) goja.Value {
	xs := make([]any, len(items))
	for i, x := range items {
		xs[i] = x
	}
	return m.vm.NewArray(xs...)
}

// goMaker builds what json.Unmarshal into an any builds.
type goMaker struct{}

func (goMaker) scalar(v any) any { return v }

func (goMaker) object(keys []string, vals []any) (any, error) {
	o := make(map[string]any, len(keys))
	for i, k := range keys {
		o[k] = vals[i]
	}
	return o, nil
}

func (goMaker) array(items []any) any { return items }

// scopeArgs reads a scope object and returns the values of names, in
// order; a name the scope lacks is undefined, and nodes falls back to
// node_results.
func scopeArgs(vm *goja.Runtime, scope []byte, names []string) ([]goja.Value, error) {
	p := &jsonReader[goja.Value]{m: jsMaker{vm}, b: scope}
	keys, vals, err := p.members()
	if err != nil {
		return nil, err
	}
	if p.space(); p.i != len(p.b) {
		return nil, errJSONSyntax
	}
	got := make(map[string]goja.Value, len(keys))
	for i, k := range keys {
		got[k] = vals[i] // the last of a repeated key wins, as in JSON.parse
	}
	args := make([]goja.Value, len(names))
	for i, n := range names {
		v, ok := got[n]
		if !ok && n == "nodes" {
			v, ok = got["node_results"] // nodes is node_results' short name
		}
		if !ok {
			v = goja.Undefined()
		}
		args[i] = v
	}
	return args, nil
}

// Decode returns the response's value as Go data, as json.Unmarshal into
// an any would (objects as map[string]any, numbers as float64). The value
// is JSON.stringify's output, so an error here is the child's fault.
func (r *Response) Decode() (any, error) {
	return (&jsonReader[any]{m: goMaker{}, b: r.Value}).read()
}
