package expr

// The syntax tree of the guard and comparison spellings: the parsers in
// parse.go and parse_comparison.go build it, eval.go evaluates it.

type node interface {
	eval(s Scope, strict bool) (any, error)
}

type litNode struct {
	v      any
	quoted bool // a quoted string literal: always text, never a number
}

type seg struct {
	key   string
	idx   int
	isIdx bool
}

type pathNode struct {
	root string
	segs []seg
	text string // as written
}

type cmpOp uint8

const (
	opNone cmpOp = iota
	opEQ
	opNE
	opLT
	opLE
	opGT
	opGE
	opIn         // l in r
	opContains   // l contains r
	opStartsWith // l startswith r
)

type cmpNode struct {
	op           cmpOp
	l, r         node
	lText, rText bool
}

func newCmp(op cmpOp, l, r node) *cmpNode {
	c := &cmpNode{op: op, l: l, r: r}
	if lit, ok := l.(*litNode); ok {
		c.lText = lit.quoted
	}
	if lit, ok := r.(*litNode); ok {
		c.rText = lit.quoted
	}
	return c
}

type andNode struct{ l, r node }
type orNode struct{ l, r node }
type notNode struct{ x node }
type truthNode struct{ x node }
type negNode struct{ x node }
type listNode struct{ items []node }
type filterNode struct {
	name string
	fn   func(any) (any, error)
	x    node
}

func walkNode(n node, fn func(*pathNode)) {
	switch x := n.(type) {
	case *pathNode:
		fn(x)
	case *cmpNode:
		walkNode(x.l, fn)
		walkNode(x.r, fn)
	case *andNode:
		walkNode(x.l, fn)
		walkNode(x.r, fn)
	case *orNode:
		walkNode(x.l, fn)
		walkNode(x.r, fn)
	case *notNode:
		walkNode(x.x, fn)
	case *truthNode:
		walkNode(x.x, fn)
	case *negNode:
		walkNode(x.x, fn)
	case *filterNode:
		walkNode(x.x, fn)
	case *listNode:
		for _, it := range x.items {
			walkNode(it, fn)
		}
	}
}

func (n *pathNode) ref() Ref {
	r := Ref{Root: n.root}
	if len(n.segs) > 0 && !n.segs[0].isIdx {
		r.Field = n.segs[0].key
	}
	return r
}
