package expr

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/jmespath/go-jmespath"
)

// BareWord is a comparison operand that is a lone name the context does not
// know. In JMESPath (category == billing) and inside {{ }} a bare word is a
// path, not text: it reads null, so the comparison quietly tests the other
// side against null (and two such names are always equal).
type BareWord struct {
	Word  string // the bare name, e.g. billing
	Other string // the other operand as a path, e.g. category ("" when it is not a plain path)
	Op    string // the comparison operator
	Both  bool   // the other operand is a bare unknown name too: the comparison is constant
}

// Fix suggests the spelling that compares with the text instead.
func (b BareWord) Fix() string {
	if b.Other == "" {
		return fmt.Sprintf("'%s' (quoted, so it is text)", b.Word)
	}
	return fmt.Sprintf("{{%s}} %s %s or %s %s '%s'", b.Other, b.Op, b.Word, b.Other, b.Op, b.Word)
}

// BareWords lists the comparisons of e (JMESPath or a {{ }} guard) with an
// operand that is a single name for which known returns false. The
// template-comparison spelling ({{x}} == billing) is never reported: there a
// bare word is text.
func BareWords(e *Expr, known func(name string) bool) []BareWord {
	var out []BareWord
	switch e.spelling {
	case JMESPath:
		if !jast.ok {
			return nil
		}
		ast, err := jmespath.NewParser().Parse(e.jsrc)
		if err != nil {
			return nil
		}
		lintJMES(reflect.ValueOf(ast), known, &out)
	default:
		lintGuard(e.root, known, &out)
	}
	return out
}

// lintJMESOps maps go-jmespath's (unexported) comparator token values to
// their text, learnt by parsing one comparison per operator (once, after the
// package's init has inspected the AST type).
var lintJMESOps = sync.OnceValue(func() map[int64]string {
	m := map[int64]string{}
	if !jast.ok {
		return m
	}
	for _, op := range []string{"==", "!=", "<", "<=", ">", ">="} {
		ast, err := jmespath.NewParser().Parse("a " + op + " b")
		if err != nil {
			continue
		}
		if val := reflect.ValueOf(ast).Field(jast.value); !val.IsNil() && val.Elem().CanInt() {
			m[val.Elem().Int()] = op
		}
	}
	return m
})

func lintJMES(v reflect.Value, known func(string) bool, out *[]BareWord) {
	typ := int(v.Field(jast.typ).Int())
	ch := v.Field(jast.children)
	if typ == jComparator && ch.Len() == 2 {
		op := "=="
		if val := v.Field(jast.value); !val.IsNil() {
			if e := val.Elem(); e.CanInt() && lintJMESOps()[e.Int()] != "" {
				op = lintJMESOps()[e.Int()]
			}
		}
		l, r := lintJMESPath(ch.Index(0)), lintJMESPath(ch.Index(1))
		lintAddBare(l, r, op, known, out)
	}
	for i := 0; i < ch.Len(); i++ {
		lintJMES(ch.Index(i), known, out)
	}
}

// lintJMESPath is a field or a chain of fields as dotted text; "" otherwise.
func lintJMESPath(v reflect.Value) string {
	typ := int(v.Field(jast.typ).Int())
	switch typ {
	case jField:
		if val := v.Field(jast.value); !val.IsNil() && val.Elem().Kind() == reflect.String {
			return val.Elem().String()
		}
	case jSubexpr:
		ch := v.Field(jast.children)
		if ch.Len() == 2 {
			a, b := lintJMESPath(ch.Index(0)), lintJMESPath(ch.Index(1))
			if a != "" && b != "" {
				return a + "." + b
			}
		}
	}
	return ""
}

var lintGuardOps = map[cmpOp]string{opEQ: "==", opNE: "!=", opLT: "<", opLE: "<=", opGT: ">", opGE: ">=", opIn: "in", opContains: "contains", opStartsWith: "startswith"}

func lintGuard(n node, known func(string) bool, out *[]BareWord) {
	switch n := n.(type) {
	case *cmpNode:
		lintAddBare(lintGuardPath(n.l), lintGuardPath(n.r), lintGuardOps[n.op], known, out)
		lintGuard(n.l, known, out)
		lintGuard(n.r, known, out)
	case *andNode:
		lintGuard(n.l, known, out)
		lintGuard(n.r, known, out)
	case *orNode:
		lintGuard(n.l, known, out)
		lintGuard(n.r, known, out)
	case *notNode:
		lintGuard(n.x, known, out)
	case *truthNode:
		lintGuard(n.x, known, out)
	}
}

func lintGuardPath(n node) string {
	if p, ok := n.(*pathNode); ok {
		if p.text != "" {
			return p.text
		}
		return p.root
	}
	return ""
}

// lintAddBare records the bare unknown names among a comparison's operands
// (given as path text, "" for anything else).
func lintAddBare(l, r, op string, known func(string) bool, out *[]BareWord) {
	bare := func(s string) bool { return s != "" && !strings.ContainsAny(s, ".[") && !known(s) }
	lb, rb := bare(l), bare(r)
	switch {
	case lb && rb:
		*out = append(*out, BareWord{Word: r, Other: l, Op: op, Both: true})
	case rb:
		*out = append(*out, BareWord{Word: r, Other: l, Op: op})
	case lb:
		*out = append(*out, BareWord{Word: l, Other: r, Op: op})
	}
}
