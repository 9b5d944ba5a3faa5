package expr

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Lexer for the language inside {{ ... }}.

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tNum
	tStr
	tLParen
	tRParen
	tLBrack
	tRBrack
	tComma
	tDot
	tPipe
	tMinus
	tEQ
	tNE
	tLT
	tLE
	tGT
	tGE
	tClose  // }}
	tDollar // $, the root of the context
)

type token struct {
	kind tokKind
	pos  int // byte offset of the first byte
	end  int // byte offset after the last byte
	str  string
	num  float64
}

type lexer struct {
	src string
	pos int
}

// closeAt returns the offset of the first "}}" at or after from that is not
// inside a quoted string, or -1.
func closeAt(src string, from int) int {
	for i := from; i < len(src); i++ {
		switch c := src[i]; c {
		case '\'', '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return -1
			}
			i = j
		case '}':
			if i+1 < len(src) && src[i+1] == '}' {
				return i
			}
		}
	}
	return -1
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (l *lexer) errAt(pos int, msg string) *SyntaxError {
	return &SyntaxError{Src: l.src, Pos: pos, Msg: msg}
}

func (l *lexer) next() (token, *SyntaxError) {
	src := l.src
	for l.pos < len(src) && isSpace(src[l.pos]) {
		l.pos++
	}
	start := l.pos
	if start >= len(src) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	c := src[start]
	one := func(k tokKind) (token, *SyntaxError) {
		l.pos++
		return token{kind: k, pos: start, end: l.pos}, nil
	}
	two := func(k tokKind) (token, *SyntaxError) {
		l.pos += 2
		return token{kind: k, pos: start, end: l.pos}, nil
	}
	peek := byte(0)
	if start+1 < len(src) {
		peek = src[start+1]
	}
	switch c {
	case '(':
		return one(tLParen)
	case ')':
		return one(tRParen)
	case '[':
		return one(tLBrack)
	case ']':
		return one(tRBrack)
	case ',':
		return one(tComma)
	case '.':
		return one(tDot)
	case '|':
		return one(tPipe)
	case '$':
		return one(tDollar)
	case '-':
		return one(tMinus)
	case '}':
		if peek == '}' {
			return two(tClose)
		}
		return token{}, l.errAt(start, `unexpected "}"`)
	case '=':
		if peek == '=' {
			return two(tEQ)
		}
		return token{}, l.errAt(start, `unexpected "=" (use "==" to compare)`)
	case '!':
		if peek == '=' {
			return two(tNE)
		}
		return token{}, l.errAt(start, `unexpected "!" (use "not" or "!=")`)
	case '<':
		if peek == '=' {
			return two(tLE)
		}
		return one(tLT)
	case '>':
		if peek == '=' {
			return two(tGE)
		}
		return one(tGT)
	case '\'', '"':
		s, end, err := unquote(src, start)
		if err != nil {
			return token{}, err
		}
		l.pos = end
		return token{kind: tStr, pos: start, end: end, str: s}, nil
	}
	if isDigit(c) {
		i := start
		for i < len(src) && isDigit(src[i]) {
			i++
		}
		if i+1 < len(src) && src[i] == '.' && isDigit(src[i+1]) {
			i++
			for i < len(src) && isDigit(src[i]) {
				i++
			}
		}
		if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
			j := i + 1
			if j < len(src) && (src[j] == '+' || src[j] == '-') {
				j++
			}
			if j < len(src) && isDigit(src[j]) {
				for j < len(src) && isDigit(src[j]) {
					j++
				}
				i = j
			}
		}
		f, err := strconv.ParseFloat(src[start:i], 64)
		if err != nil {
			return token{}, l.errAt(start, "invalid number "+strconv.Quote(src[start:i]))
		}
		l.pos = i
		return token{kind: tNum, pos: start, end: i, num: f}, nil
	}
	if isIdentStart(c) {
		i := start + 1
		for i < len(src) && isIdentChar(src[i]) {
			i++
		}
		l.pos = i
		return token{kind: tIdent, pos: start, end: i, str: src[start:i]}, nil
	}
	r, _ := utf8.DecodeRuneInString(src[start:])
	return token{}, l.errAt(start, "unexpected character "+strconv.QuoteRune(r))
}

// unquote reads the quoted string starting at src[start] (a ' or ")
// and returns its value and the offset after the closing quote.
func unquote(src string, start int) (string, int, *SyntaxError) {
	q := src[start]
	i := start + 1
	// Fast path: no escapes.
	for i < len(src) && src[i] != q && src[i] != '\\' {
		i++
	}
	if i < len(src) && src[i] == q {
		return src[start+1 : i], i + 1, nil
	}
	var b strings.Builder
	b.WriteString(src[start+1 : i])
	for i < len(src) {
		c := src[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(src) {
			break
		}
		e := src[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '0':
			b.WriteByte(0)
		case 'u':
			if i+4 <= len(src) {
				if n, err := strconv.ParseUint(src[i:i+4], 16, 32); err == nil {
					b.WriteRune(rune(n))
					i += 4
					continue
				}
			}
			return "", 0, &SyntaxError{Src: src, Pos: i - 2, Msg: `invalid \u escape`}
		default:
			// \\, \', \" and any other escaped character stand for themselves.
			b.WriteByte(e)
		}
	}
	return "", 0, &SyntaxError{Src: src, Pos: start, Msg: "unterminated string"}
}
