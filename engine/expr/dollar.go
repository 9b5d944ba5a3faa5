package expr

import "strings"

// `$` is the root of the chain context in every spelling: `$.input.n` is
// `input.n` read from the top, wherever it is written (inside a filter too,
// where a bare name is relative to the current element), and `$` alone is
// the whole context. A2E's documentation and its SDK write paths this way.
//
// go-jmespath has no `$`, so before parsing each bare `$` (outside quoted
// identifiers, raw strings and literals) becomes the quoted identifier
// dollarQuoted; the budgeted evaluator reads that field as the root it was
// given, and the analysis strips it from the front of a path.

// rootField is the field name a rewritten `$` parses to. A NUL cannot be
// typed into a field name by accident, so no data key collides with it.
const rootField = "\x00$"

// dollarQuoted is rootField spelled as a JMESPath quoted identifier.
const dollarQuoted = `"\u0000$"`

// rewriteDollar returns src with every bare `$` replaced by dollarQuoted,
// and the byte offsets (in src) of the replaced `$`s, in order.
func rewriteDollar(src string) (string, []int) {
	if strings.IndexByte(src, '$') < 0 {
		return src, nil
	}
	var b strings.Builder
	var at []int
	from := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"', '\'', '`':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '$':
			b.WriteString(src[from:i])
			b.WriteString(dollarQuoted)
			from = i + 1
			at = append(at, i)
		}
	}
	if at == nil {
		return src, nil
	}
	b.WriteString(src[from:])
	return b.String(), at
}

// srcPos maps a byte offset in the rewritten source back to the source as
// written.
func srcPos(pos int, at []int) int {
	grow := len(dollarQuoted) - 1
	shift := 0
	for _, p := range at {
		// p+shift is where the placeholder for p starts in the rewritten text.
		start := p + shift
		if pos <= start {
			break
		}
		if pos < start+len(dollarQuoted) {
			return p
		}
		shift += grow
	}
	return pos - shift
}

// checkDollar rejects a `$` anywhere but at the start of a path: `a.$` or
// `{$: 1}` name no root.
func (e *Expr) checkDollar(n jnode) *SyntaxError {
	bad := func(msg string) *SyntaxError {
		pos := 0
		if len(e.dollars) > 0 {
			pos = e.dollars[0]
		}
		return &SyntaxError{Src: e.src, Pos: pos, Msg: msg}
	}
	switch n.typ {
	case jSubexpr:
		if len(n.children) == 2 && startsWithRoot(n.children[1]) {
			return bad(`"$" (the chain context root) can only start a path, not follow "."`)
		}
	case jKeyVal:
		if n.isStr && n.str == rootField {
			return bad(`"$" (the chain context root) is not a key name; quote it as "$"`)
		}
	}
	for _, c := range n.children {
		if err := e.checkDollar(c); err != nil {
			return err
		}
	}
	return nil
}

// startsWithRoot reports whether n's leftmost step is the `$` field.
func startsWithRoot(n jnode) bool {
	for {
		if n.typ == jField {
			return n.isStr && n.str == rootField
		}
		if n.typ != jSubexpr && n.typ != jIndexExpr || len(n.children) == 0 {
			return false
		}
		n = n.children[0]
	}
}

// countRoot counts the `$` fields in n.
func countRoot(n jnode) int {
	c := 0
	if n.typ == jField && n.isStr && n.str == rootField {
		c++
	}
	for _, k := range n.children {
		c += countRoot(k)
	}
	return c
}
