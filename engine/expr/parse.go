package expr

import (
	"strconv"
)

// Parser for the Jinja-like language inside {{ ... }}:
//
//	expr    := and ('or' and)*
//	and     := not ('and' not)*
//	not     := 'not'* cmp
//	cmp     := unary [ cmpop unary ]
//	cmpop   := == != < <= > >= in | not in
//	unary   := '-'* postfix
//	postfix := primary ('|' filter)*
//	primary := literal | path | '(' expr ')' | '[' [expr (',' expr)*] ']'
//	path    := ident ('.' ident | '[' (string | ['-'] integer) ']')*

type parser struct {
	lx    lexer
	tok   token
	lim   Limits
	depth int
	open  int // offset of the "{{" that started this expression
}

func newParser(src string, pos, open int, lim Limits) *parser {
	return &parser{lx: lexer{src: src, pos: pos}, lim: lim, open: open}
}

func (p *parser) advance() *SyntaxError {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

// peek returns the token after the current one without consuming it.
func (p *parser) peek() token {
	save := p.lx
	t, err := p.lx.next()
	p.lx = save
	if err != nil {
		return token{kind: tEOF}
	}
	return t
}

func (p *parser) errAt(pos int, msg string) *SyntaxError {
	return &SyntaxError{Src: p.lx.src, Pos: pos, Msg: msg}
}

func (p *parser) unterminated() *SyntaxError {
	return p.errAt(p.open, `unterminated "{{" (missing "}}")`)
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tClose:
		return `"}}"`
	}
	return strconv.Quote(p.lx.src[t.pos:t.end])
}

// unexpected reports the current token; at end of input the "{{" is
// reported as unterminated.
func (p *parser) unexpected(what string) *SyntaxError {
	if p.tok.kind == tEOF {
		return p.unterminated()
	}
	return p.errAt(p.tok.pos, what+", found "+p.describe(p.tok))
}

// parseTemplateExpr parses an expression followed by "}}" and returns the
// node and the offset after the "}}".
func (p *parser) parseTemplateExpr() (node, int, error) {
	if err := p.advance(); err != nil {
		return nil, 0, err
	}
	if p.tok.kind == tClose {
		return nil, 0, p.errAt(p.tok.pos, `empty "{{ }}"`)
	}
	if !p.startsOperand() && !p.isKeyword("not") {
		return nil, 0, p.unexpected("expected an expression")
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, 0, err
	}
	if p.tok.kind != tClose {
		if p.tok.kind == tEOF {
			return nil, 0, p.unterminated()
		}
		return nil, 0, p.errAt(p.tok.pos, `expected "}}", found `+p.describe(p.tok))
	}
	return n, p.tok.end, nil
}

func (p *parser) isKeyword(s string) bool {
	return p.tok.kind == tIdent && p.tok.str == s
}

func (p *parser) parseOr() (node, *SyntaxError) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("or") {
		op := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		r, err := p.parseAndAfter(op)
		if err != nil {
			return nil, err
		}
		l = &orNode{l: l, r: r}
	}
	return l, nil
}

func (p *parser) parseAndAfter(op token) (node, *SyntaxError) {
	if !p.startsOperand() {
		return nil, p.expectedOperand(op)
	}
	return p.parseAnd()
}

func (p *parser) parseAnd() (node, *SyntaxError) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.isKeyword("and") {
		op := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.startsOperand() {
			return nil, p.expectedOperand(op)
		}
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &andNode{l: l, r: r}
	}
	return l, nil
}

func (p *parser) parseNot() (node, *SyntaxError) {
	nots := 0
	for p.isKeyword("not") {
		op := p.tok
		nots++
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.startsOperand() {
			return nil, p.expectedOperand(op)
		}
	}
	n, err := p.parseCmp()
	if err != nil {
		return nil, err
	}
	for ; nots > 0; nots-- {
		n = &notNode{x: n}
	}
	return n, nil
}

func (p *parser) startsOperand() bool {
	switch p.tok.kind {
	case tIdent:
		switch p.tok.str {
		case "and", "or", "in":
			return false
		}
		return true
	case tNum, tStr, tLParen, tLBrack, tMinus, tDollar:
		return true
	}
	return false
}

func (p *parser) expectedOperand(op token) *SyntaxError {
	if p.tok.kind == tEOF {
		return p.unterminated()
	}
	return p.errAt(p.tok.pos, "expected an operand after "+strconv.Quote(p.lx.src[op.pos:op.end]))
}

func cmpOpOf(k tokKind) cmpOp {
	switch k {
	case tEQ:
		return opEQ
	case tNE:
		return opNE
	case tLT:
		return opLT
	case tLE:
		return opLE
	case tGT:
		return opGT
	case tGE:
		return opGE
	}
	return opNone
}

func (p *parser) parseCmp() (node, *SyntaxError) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	op := cmpOpOf(p.tok.kind)
	opTok := p.tok
	negIn := false
	switch {
	case op != opNone:
	case p.isKeyword("in"):
		op = opIn
	case p.isKeyword("not") && p.peek().kind == tIdent && p.peek().str == "in":
		if err := p.advance(); err != nil {
			return nil, err
		}
		opTok.end = p.tok.end
		op, negIn = opIn, true
	default:
		return l, nil
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.startsOperand() {
		return nil, p.expectedOperand(opTok)
	}
	r, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if cmpOpOf(p.tok.kind) != opNone || p.isKeyword("in") {
		return nil, p.errAt(p.tok.pos, "comparisons cannot be chained; use \"and\"")
	}
	var n node = newCmp(op, l, r)
	if negIn {
		n = &notNode{x: n}
	}
	return n, nil
}

func (p *parser) parseUnary() (node, *SyntaxError) {
	negs := 0
	for p.tok.kind == tMinus {
		op := p.tok
		negs++
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.startsOperand() {
			return nil, p.expectedOperand(op)
		}
	}
	n, err := p.parsePostfix()
	if err != nil {
		return nil, err
	}
	if negs%2 == 1 {
		if lit, ok := n.(*litNode); ok {
			if f, ok := lit.v.(float64); ok {
				return &litNode{v: -f}, nil
			}
		}
		n = &negNode{x: n}
	}
	return n, nil
}

func (p *parser) parsePostfix() (node, *SyntaxError) {
	n, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tPipe {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tIdent {
			return nil, p.unexpected(`expected a filter name after "|"`)
		}
		f, ok := filters[p.tok.str]
		if !ok {
			return nil, p.errAt(p.tok.pos, "unknown filter "+strconv.Quote(p.tok.str)+" (known: length, lower, upper, int, float, string)")
		}
		n = &filterNode{name: p.tok.str, fn: f, x: n}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (p *parser) enter(pos int) *SyntaxError {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return p.errAt(pos, "nesting deeper than the limit of "+strconv.Itoa(p.lim.MaxDepth)+" (MaxDepth)")
	}
	return nil
}

func (p *parser) parsePrimary() (node, *SyntaxError) {
	t := p.tok
	switch t.kind {
	case tNum:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &litNode{v: t.num}, nil
	case tStr:
		if err := p.advance(); err != nil {
			return nil, err
		}
		return &litNode{v: t.str, quoted: true}, nil
	case tLParen:
		if err := p.enter(t.pos); err != nil {
			return nil, err
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.startsOperand() && !p.isKeyword("not") {
			return nil, p.unexpected(`expected an expression after "("`)
		}
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			return nil, p.unexpected(`expected ")"`)
		}
		p.depth--
		if err := p.advance(); err != nil {
			return nil, err
		}
		return n, nil
	case tLBrack:
		return p.parseList()
	case tIdent:
		switch t.str {
		case "true", "True":
			return p.lit(true)
		case "false", "False":
			return p.lit(false)
		case "none", "None", "null":
			return p.lit(nil)
		}
		return p.parsePath()
	case tDollar:
		return p.parseDollar()
	}
	return nil, p.unexpected("expected an operand")
}

func (p *parser) lit(v any) (node, *SyntaxError) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	return &litNode{v: v}, nil
}

func (p *parser) parseList() (node, *SyntaxError) {
	if err := p.enter(p.tok.pos); err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var items []node
	for p.tok.kind != tRBrack {
		if len(items) > 0 {
			if p.tok.kind != tComma {
				return nil, p.unexpected(`expected "," or "]"`)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind == tRBrack { // trailing comma
				break
			}
		}
		if !p.startsOperand() && !p.isKeyword("not") {
			return nil, p.unexpected("expected a list item")
		}
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		items = append(items, n)
	}
	p.depth--
	if err := p.advance(); err != nil {
		return nil, err
	}
	// Fold constant lists.
	vals := make([]any, len(items))
	for i, it := range items {
		lit, ok := it.(*litNode)
		if !ok {
			return &listNode{items: items}, nil
		}
		vals[i] = lit.v
	}
	return &litNode{v: vals}, nil
}

func (p *parser) parsePath() (node, *SyntaxError) {
	start := p.tok.pos
	n := &pathNode{root: p.tok.str}
	end := p.tok.end
	if err := p.advance(); err != nil {
		return nil, err
	}
	return p.pathRest(n, start, end)
}

// parseDollar parses a path written from the root: $.a.b is a.b, $['x-y']
// is the name x-y, and $ alone is the whole context (root "@").
func (p *parser) parseDollar() (node, *SyntaxError) {
	start, end := p.tok.pos, p.tok.end
	if err := p.advance(); err != nil {
		return nil, err
	}
	n := &pathNode{root: "@"}
	switch p.tok.kind {
	case tDot:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tIdent {
			return nil, p.unexpected(`expected a name after "$."`)
		}
		n.root = p.tok.str
	case tLBrack:
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tStr {
			return nil, p.unexpected(`expected a quoted name after "$["`)
		}
		n.root = p.tok.str
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tRBrack {
			return nil, p.unexpected(`expected "]"`)
		}
	default:
		n.text = "$"
		return n, nil
	}
	end = p.tok.end
	if err := p.advance(); err != nil {
		return nil, err
	}
	return p.pathRest(n, start, end)
}

// pathRest parses the steps after a path's first name.
func (p *parser) pathRest(n *pathNode, start, end int) (node, *SyntaxError) {
	for {
		switch p.tok.kind {
		case tDot:
			if err := p.advance(); err != nil {
				return nil, err
			}
			switch p.tok.kind {
			case tIdent:
				n.segs = append(n.segs, seg{key: p.tok.str})
			case tNum:
				// a.0 reads index 0, as in Jinja.
				idx := int(p.tok.num)
				if float64(idx) != p.tok.num || p.lx.src[p.tok.pos:p.tok.end] != strconv.Itoa(idx) {
					return nil, p.errAt(p.tok.pos, "expected a field name or index after \".\"")
				}
				n.segs = append(n.segs, seg{idx: idx, isIdx: true})
			default:
				return nil, p.unexpected(`expected a field name after "."`)
			}
			end = p.tok.end
			if err := p.advance(); err != nil {
				return nil, err
			}
		case tLBrack:
			open := p.tok.pos
			if err := p.enter(open); err != nil {
				return nil, err
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			neg := false
			if p.tok.kind == tMinus {
				neg = true
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			switch {
			case p.tok.kind == tStr && !neg:
				n.segs = append(n.segs, seg{key: p.tok.str})
			case p.tok.kind == tNum:
				f := p.tok.num
				if f != float64(int(f)) || f > 1<<31 {
					return nil, p.errAt(p.tok.pos, "index must be an integer")
				}
				idx := int(f)
				if neg {
					idx = -idx
				}
				n.segs = append(n.segs, seg{idx: idx, isIdx: true})
			default:
				return nil, p.unexpected(`expected a quoted key or an integer index after "["`)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != tRBrack {
				return nil, p.unexpected(`expected "]"`)
			}
			p.depth--
			end = p.tok.end
			if err := p.advance(); err != nil {
				return nil, err
			}
		default:
			n.text = p.lx.src[start:end]
			return n, nil
		}
	}
}
