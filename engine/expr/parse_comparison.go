package expr

import (
	"strconv"
	"strings"
)

// Parser for the comparison spelling:
//
//	expr    := and ('or' and)*
//	and     := cmp ('and' cmp)*
//	cmp     := operand [ op operand ]
//	op      := == != < <= > >= contains startswith
//	operand := '{{' guard-expr '}}' | 'quoted' | "quoted" | bare-word

type comparisonParser struct {
	src      string
	pos, end int
	lim      Limits
}

func parseComparison(src string, start, end int, lim Limits) (node, error) {
	c := &comparisonParser{src: src, pos: start, end: end, lim: lim}
	n, err := c.parseOr()
	if err != nil {
		return nil, err
	}
	c.skipWS()
	if c.pos < c.end {
		return nil, c.errAt(c.pos, `expected "and", "or" or the end of the expression, found `+c.describe())
	}
	return n, nil
}

func (c *comparisonParser) errAt(pos int, msg string) *SyntaxError {
	return &SyntaxError{Src: c.src, Pos: pos, Msg: msg}
}

func (c *comparisonParser) skipWS() {
	for c.pos < c.end && isSpace(c.src[c.pos]) {
		c.pos++
	}
}

// describe quotes the text at the current position, up to the next space.
func (c *comparisonParser) describe() string {
	if c.pos >= c.end {
		return "end of input"
	}
	i := c.pos
	for i < c.end && !isSpace(c.src[i]) && i-c.pos < 24 {
		i++
	}
	return strconv.Quote(c.src[c.pos:i])
}

// word returns the keyword at the current position if it is followed by a
// boundary (space, end, '{', quote).
func (c *comparisonParser) word() string {
	i := c.pos
	for i < c.end && (c.src[i] >= 'a' && c.src[i] <= 'z' || c.src[i] >= 'A' && c.src[i] <= 'Z' || c.src[i] == '_') {
		i++
	}
	if i == c.pos {
		return ""
	}
	if i < c.end {
		switch c.src[i] {
		case ' ', '\t', '\n', '\r', '\v', '\f', '{', '\'', '"':
		default:
			return ""
		}
	}
	return c.src[c.pos:i]
}

func (c *comparisonParser) parseOr() (node, error) {
	l, err := c.parseAnd()
	if err != nil {
		return nil, err
	}
	for {
		c.skipWS()
		if w := c.word(); w != "or" && w != "OR" {
			return l, nil
		}
		opPos := c.pos
		c.pos += 2
		r, err := c.parseAndAfter(opPos, 2)
		if err != nil {
			return nil, err
		}
		l = &orNode{l: l, r: r}
	}
}

func (c *comparisonParser) parseAndAfter(opPos, opLen int) (node, error) {
	c.skipWS()
	if c.pos >= c.end {
		return nil, c.errAt(c.pos, "expected an operand after "+strconv.Quote(c.src[opPos:opPos+opLen]))
	}
	return c.parseAnd()
}

func (c *comparisonParser) parseAnd() (node, error) {
	l, err := c.parseCmp()
	if err != nil {
		return nil, err
	}
	for {
		c.skipWS()
		if w := c.word(); w != "and" && w != "AND" {
			return l, nil
		}
		opPos := c.pos
		c.pos += 3
		c.skipWS()
		if c.pos >= c.end {
			return nil, c.errAt(c.pos, "expected an operand after "+strconv.Quote(c.src[opPos:opPos+3]))
		}
		r, err := c.parseCmp()
		if err != nil {
			return nil, err
		}
		l = &andNode{l: l, r: r}
	}
}

func (c *comparisonParser) parseCmp() (node, error) {
	l, err := c.parseOperand("", 0)
	if err != nil {
		return nil, err
	}
	c.skipWS()
	if c.pos >= c.end {
		return &truthNode{x: l}, nil
	}
	opPos := c.pos
	op, n := c.op()
	if op == opNone {
		switch c.word() {
		case "and", "AND", "or", "OR":
			return &truthNode{x: l}, nil
		}
		return nil, c.errAt(c.pos, "expected a comparison operator (==, !=, <, <=, >, >=, contains, startswith), found "+c.describe())
	}
	c.pos += n
	r, err := c.parseOperand(c.src[opPos:opPos+n], opPos)
	if err != nil {
		return nil, err
	}
	return newCmp(op, l, r), nil
}

// op recognises the operator at the current position and its length.
func (c *comparisonParser) op() (cmpOp, int) {
	s := c.src[c.pos:c.end]
	switch {
	case strings.HasPrefix(s, "=="):
		return opEQ, 2
	case strings.HasPrefix(s, "!="):
		return opNE, 2
	case strings.HasPrefix(s, "<="):
		return opLE, 2
	case strings.HasPrefix(s, ">="):
		return opGE, 2
	case strings.HasPrefix(s, "<"):
		return opLT, 1
	case strings.HasPrefix(s, ">"):
		return opGT, 1
	}
	switch c.word() {
	case "contains":
		return opContains, len("contains")
	case "startswith":
		return opStartsWith, len("startswith")
	}
	return opNone, 0
}

// atOpStart reports whether a bare word must stop at i.
func (c *comparisonParser) atOpStart(i int) bool {
	switch c.src[i] {
	case '<', '>':
		return true
	case '=', '!':
		return i+1 < c.end && c.src[i+1] == '='
	case '{':
		return i+1 < c.end && c.src[i+1] == '{'
	}
	return isSpace(c.src[i])
}

func (c *comparisonParser) parseOperand(after string, afterPos int) (node, error) {
	c.skipWS()
	expected := func() error {
		if after == "" {
			return c.errAt(c.pos, "expected an operand, found "+c.describe())
		}
		return c.errAt(c.pos, "expected an operand after "+strconv.Quote(after))
	}
	if c.pos >= c.end {
		return nil, expected()
	}
	switch ch := c.src[c.pos]; {
	case strings.HasPrefix(c.src[c.pos:c.end], "{{"):
		p := newParser(c.src, c.pos+2, c.pos, c.lim)
		n, next, err := p.parseTemplateExpr()
		if err != nil {
			return nil, err
		}
		c.pos = next
		return n, nil
	case ch == '\'' || ch == '"':
		s, next, err := unquote(c.src, c.pos)
		if err != nil {
			return nil, err
		}
		c.pos = next
		return &litNode{v: s, quoted: true}, nil
	}
	start := c.pos
	for c.pos < c.end && !c.atOpStart(c.pos) {
		c.pos++
	}
	if c.pos == start {
		return nil, expected()
	}
	return &litNode{v: bareValue(c.src[start:c.pos])}, nil
}

// bareValue classifies an unquoted literal.
func bareValue(s string) any {
	switch s {
	case "true", "True":
		return true
	case "false", "False":
		return false
	case "null", "none", "None":
		return nil
	}
	if f, ok := parseNumber(s); ok {
		return f
	}
	return s
}
