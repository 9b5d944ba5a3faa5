package expr

import (
	"strconv"
	"strings"
)

// Template is text with zero or more {{ expr }} placeholders whose insides
// use the guard language. It is immutable and safe for concurrent use.
type Template struct {
	src    string
	parts  []tplPart
	single node // set when the template is one {{ x }} and nothing else
	refs   []Ref
}

type tplPart struct {
	text string
	n    node // nil for a text part
}

// ParseTemplate parses and validates a template using DefaultLimits.
func ParseTemplate(src string) (*Template, error) { return ParseTemplateWith(src, DefaultLimits) }

// ParseTemplateWith parses and validates a template under the given limits.
func ParseTemplateWith(src string, lim Limits) (*Template, error) {
	lim = lim.norm()
	if len(src) > lim.MaxLength {
		return nil, &SyntaxError{Src: src, Pos: lim.MaxLength,
			Msg: "template is longer than the limit of " + strconv.Itoa(lim.MaxLength) + " bytes (MaxLength)"}
	}
	t := &Template{src: src}
	var refs []Ref
	exprs := 0
	textOnlySpace := true
	pos := 0
	for {
		i := strings.Index(src[pos:], "{{")
		if i < 0 {
			break
		}
		open := pos + i
		if open > pos {
			t.parts = append(t.parts, tplPart{text: src[pos:open]})
			if strings.TrimSpace(src[pos:open]) != "" {
				textOnlySpace = false
			}
		}
		p := newParser(src, open+2, open, lim)
		n, next, err := p.parseTemplateExpr()
		if err != nil {
			return nil, err
		}
		walkNode(n, func(p *pathNode) { refs = append(refs, p.ref()) })
		t.parts = append(t.parts, tplPart{n: n})
		exprs++
		pos = next
	}
	if pos < len(src) {
		t.parts = append(t.parts, tplPart{text: src[pos:]})
		if strings.TrimSpace(src[pos:]) != "" {
			textOnlySpace = false
		}
	}
	if exprs == 1 && textOnlySpace {
		for _, p := range t.parts {
			if p.n != nil {
				t.single = p.n
			}
		}
	}
	t.refs = sortRefs(refs)
	return t, nil
}

// Source returns the template text.
func (t *Template) Source() string { return t.src }

// Refs returns the static references the template reads, sorted and unique.
func (t *Template) Refs() []Ref { return t.refs }

// Render evaluates the template. A template that is exactly one {{ x }}
// (surrounding whitespace aside) yields the value itself, of any type;
// otherwise the result is a string with each value formatted: strings raw,
// nil as "", everything else as compact JSON.
func (t *Template) Render(s Scope, strict bool) (any, error) {
	if s == nil {
		s = MapScope(nil)
	}
	if t.single != nil {
		v, err := t.single.eval(s, strict)
		if err != nil {
			return nil, withSrc(err, t.src)
		}
		return v, nil
	}
	if len(t.parts) == 1 && t.parts[0].n == nil {
		return t.parts[0].text, nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.n == nil {
			b.WriteString(p.text)
			continue
		}
		v, err := p.n.eval(s, strict)
		if err != nil {
			return nil, withSrc(err, t.src)
		}
		b.WriteString(formatValue(v))
	}
	return b.String(), nil
}
