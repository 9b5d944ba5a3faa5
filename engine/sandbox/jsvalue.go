package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/dop251/goja"
)

// maxJSONDepth bounds nesting as encoding/json does, so a hostile scope
// cannot exhaust the child's stack.
const maxJSONDepth = 10000

// jsonReader builds the JavaScript values of a JSON text in a runtime:
// plain objects and arrays made by the VM (never Go values wrapped as host
// objects), keys in document order, as JSON.parse would. goja's own
// JSON.parse goes through encoding/json's token reader and cost a trivial
// call a third of its time.
type jsonReader struct {
	vm    *goja.Runtime
	b     []byte
	i     int
	depth int
}

var errJSONSyntax = errors.New("the data is not valid JSON")

// scopeArgs reads a scope object and returns the values of names, in
// order; a name the scope lacks is undefined, and nodes falls back to
// node_results.
func scopeArgs(vm *goja.Runtime, scope []byte, names []string) ([]goja.Value, error) {
	p := &jsonReader{vm: vm, b: scope}
	p.space()
	if !p.eat('{') {
		return nil, errJSONSyntax
	}
	got := make(map[string]goja.Value, len(names))
	p.space()
	if !p.eat('}') {
		for {
			p.space()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if !p.eat(':') {
				return nil, errJSONSyntax
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			got[k] = v
			p.space()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return nil, errJSONSyntax
		}
	}
	p.space()
	if p.i != len(p.b) {
		return nil, errJSONSyntax
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

func (p *jsonReader) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonReader) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jsonReader) value() (goja.Value, error) {
	p.space()
	if p.i >= len(p.b) {
		return nil, errJSONSyntax
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.vm.ToValue(s), nil
	case c == 't':
		return p.word("true", goja.Value(p.vm.ToValue(true)))
	case c == 'f':
		return p.word("false", goja.Value(p.vm.ToValue(false)))
	case c == 'n':
		return p.word("null", goja.Null())
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, errJSONSyntax
}

func (p *jsonReader) word(w string, v goja.Value) (goja.Value, error) {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return nil, errJSONSyntax
	}
	p.i += len(w)
	return v, nil
}

func (p *jsonReader) number() (goja.Value, error) {
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c >= '0' && c <= '9' {
			p.i++
			continue
		}
		break
	}
	text := p.b[start:p.i]
	if !json.Valid(text) {
		return nil, fmt.Errorf("%w: bad number %q", errJSONSyntax, text)
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, errJSONSyntax
	}
	return p.vm.ToValue(f), nil
}

// str reads a string; one without escapes is taken as is.
func (p *jsonReader) str() (string, error) {
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

func (p *jsonReader) object() (goja.Value, error) {
	if p.depth++; p.depth > maxJSONDepth {
		return nil, fmt.Errorf("the data nests deeper than %d levels", maxJSONDepth)
	}
	defer func() { p.depth-- }()
	p.i++ // {
	o := p.vm.NewObject()
	p.space()
	if p.eat('}') {
		return o, nil
	}
	for {
		p.space()
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if !p.eat(':') {
			return nil, errJSONSyntax
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if k == "__proto__" {
			// an own property, as JSON.parse makes it, never the prototype
			if err := o.DefineDataProperty(k, v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE); err != nil {
				return nil, err
			}
		} else if err := o.Set(k, v); err != nil {
			return nil, err
		}
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			return o, nil
		}
		return nil, errJSONSyntax
	}
}

func (p *jsonReader) array() (goja.Value, error) {
	if p.depth++; p.depth > maxJSONDepth {
		return nil, fmt.Errorf("the data nests deeper than %d levels", maxJSONDepth)
	}
	defer func() { p.depth-- }()
	p.i++ // [
	var items []any
	p.space()
	if p.eat(']') {
		return p.vm.NewArray(), nil
	}
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.space()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			return p.vm.NewArray(items...), nil
		}
		return nil, errJSONSyntax
	}
}

// Decode returns the response's value as Go data, as json.Unmarshal into
// an any would (objects as map[string]any, numbers as float64), without
// its per-call set-up: a map's every item decodes one small value. The
// value is JSON.stringify's output, so an error here is the child's fault.
func (r *Response) Decode() (any, error) {
	d := &goReader{b: r.Value}
	d.space()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	if d.space(); d.i != len(d.b) {
		return nil, errJSONSyntax
	}
	return v, nil
}

// goReader is jsonReader's twin building Go values.
type goReader struct {
	b     []byte
	i     int
	depth int
}

func (d *goReader) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\t' || d.b[d.i] == '\n' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *goReader) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *goReader) value() (any, error) {
	d.space()
	if d.i >= len(d.b) {
		return nil, errJSONSyntax
	}
	switch c := d.b[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == 't':
		return d.word("true", true)
	case c == 'f':
		return d.word("false", false)
	case c == 'n':
		return d.word("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		for d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] == '+' || d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E' || d.b[d.i] >= '0' && d.b[d.i] <= '9') {
			d.i++
		}
		f, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
		if err != nil || !json.Valid(d.b[start:d.i]) {
			return nil, errJSONSyntax
		}
		return f, nil
	}
	return nil, errJSONSyntax
}

func (d *goReader) word(w string, v any) (any, error) {
	if len(d.b)-d.i < len(w) || string(d.b[d.i:d.i+len(w)]) != w {
		return nil, errJSONSyntax
	}
	d.i += len(w)
	return v, nil
}

// str reads a string with jsonReader's scanner.
func (d *goReader) str() (string, error) {
	p := jsonReader{b: d.b, i: d.i}
	s, err := p.str()
	d.i = p.i
	return s, err
}

func (d *goReader) object() (any, error) {
	if d.depth++; d.depth > maxJSONDepth {
		return nil, fmt.Errorf("the value nests deeper than %d levels", maxJSONDepth)
	}
	defer func() { d.depth-- }()
	d.i++ // {
	m := map[string]any{}
	if d.space(); d.eat('}') {
		return m, nil
	}
	for {
		d.space()
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if d.space(); !d.eat(':') {
			return nil, errJSONSyntax
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.eat(',') {
			continue
		}
		if d.eat('}') {
			return m, nil
		}
		return nil, errJSONSyntax
	}
}

func (d *goReader) array() (any, error) {
	if d.depth++; d.depth > maxJSONDepth {
		return nil, fmt.Errorf("the value nests deeper than %d levels", maxJSONDepth)
	}
	defer func() { d.depth-- }()
	d.i++ // [
	out := []any{}
	if d.space(); d.eat(']') {
		return out, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		d.space()
		if d.eat(',') {
			continue
		}
		if d.eat(']') {
			return out, nil
		}
		return nil, errJSONSyntax
	}
}
