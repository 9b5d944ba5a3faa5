package engine

import (
	"iter"
	"sort"

	"github.com/chainstudio/studio/engine/expr"
)

// Attachment relations: a node attached to an owner runs only when the owner
// invokes it, never through edges or as a root.
const (
	RelMapBody = "map_node"
	RelBranch  = "branches"
	RelHandler = "on_error"
)

type attachment struct {
	owner int
	rel   string
}

// namedExpr is a parsed expression under a key (input_map / set_state).
type namedExpr struct {
	key string
	e   *expr.Expr
}

// exprErr records an expression that failed to parse, for validation.
type exprErr struct {
	node, edge int // -1 when not applicable
	field      string
	err        error
}

// graph is a chain indexed for validation and execution. It tolerates broken
// chains (dangling references are left out of the indexes and reported by
// Validate), so building it never fails.
type graph struct {
	c        *Chain
	idx      map[string]int
	out      [][]int // edge indexes by source node, in declaration order
	in       [][]int // non-loop incoming edge indexes by target node
	loopIn   [][]int // loop incoming edge indexes by target node
	edgeOK   []bool  // both ends exist
	owners   [][]attachment
	dataDeps [][]int // nodes whose output the node's input_map reads

	// parsed expressions (nil where empty or unparseable)
	inputMap  [][]namedExpr
	setState  [][]namedExpr
	condition []*expr.Expr
	items     []*expr.Expr
	cases     [][]*expr.Expr
	edgeCond  []*expr.Expr
	exprErrs  []exprErr
}

// Precedence yields, for every pair of nodes of c that one must come before
// the other, the ids of both: a non-loop edge's source before its target, a
// node whose output an input_map reads before the reader, an owner before
// what is attached to it. Pairs may repeat; a broken reference is left out.
func Precedence(c *Chain) iter.Seq2[string, string] {
	return func(yield func(before, after string) bool) {
		for _, e := range c.Edges {
			if !e.IsLoop() && !yield(e.Source, e.Target) {
				return
			}
		}
		g := newGraph(c)
		for i, deps := range g.dataDeps {
			for _, d := range deps {
				if !yield(c.Nodes[d].ID, c.Nodes[i].ID) {
					return
				}
			}
		}
		for i, owners := range g.owners {
			for _, o := range owners {
				if !yield(c.Nodes[o.owner].ID, c.Nodes[i].ID) {
					return
				}
			}
		}
	}
}

// nodeIndex maps each node id to its index (the first of duplicate ids).
func nodeIndex(c *Chain) map[string]int {
	idx := make(map[string]int, len(c.Nodes))
	for i := range c.Nodes {
		if _, dup := idx[c.Nodes[i].ID]; !dup {
			idx[c.Nodes[i].ID] = i
		}
	}
	return idx
}

// attachments lists, per node, the nodes it is attached to: the map whose
// body it is, the parallel whose branch it is, the node whose error
// handler it is.
func attachments(c *Chain, idx map[string]int) [][]attachment {
	owners := make([][]attachment, len(c.Nodes))
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		attach := func(id, rel string) {
			if j, ok := idx[id]; ok && id != "" {
				owners[j] = append(owners[j], attachment{owner: i, rel: rel})
			}
		}
		if nd.Kind == KindMap {
			attach(nd.MapNode, RelMapBody)
		}
		if nd.Kind == KindParallel {
			for _, b := range nd.Branches {
				attach(b, RelBranch)
			}
		}
		attach(nd.ErrorHandler(), RelHandler)
	}
	return owners
}

func newGraph(c *Chain) *graph {
	n := len(c.Nodes)
	g := &graph{
		c:         c,
		out:       make([][]int, n),
		in:        make([][]int, n),
		loopIn:    make([][]int, n),
		edgeOK:    make([]bool, len(c.Edges)),
		dataDeps:  make([][]int, n),
		inputMap:  make([][]namedExpr, n),
		setState:  make([][]namedExpr, n),
		condition: make([]*expr.Expr, n),
		items:     make([]*expr.Expr, n),
		cases:     make([][]*expr.Expr, n),
		edgeCond:  make([]*expr.Expr, len(c.Edges)),
	}
	g.idx = nodeIndex(c)
	g.owners = attachments(c, g.idx)
	for i := range c.Edges {
		e := &c.Edges[i]
		s, okS := g.idx[e.Source]
		t, okT := g.idx[e.Target]
		if !okS || !okT {
			continue
		}
		g.edgeOK[i] = true
		g.out[s] = append(g.out[s], i)
		if e.IsLoop() {
			g.loopIn[t] = append(g.loopIn[t], i)
		} else {
			g.in[t] = append(g.in[t], i)
		}
		if e.Condition != "" {
			g.edgeCond[i] = g.parse(-1, i, "condition", e.Condition)
		}
	}
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		g.inputMap[i] = g.parseMap(i, "input_map", nd.InputMap)
		g.setState[i] = g.parseMap(i, "set_state", nd.SetState)
		if nd.Condition != "" {
			g.condition[i] = g.parse(i, -1, "condition", nd.Condition)
		}
		if nd.ItemsPath != "" {
			g.items[i] = g.parse(i, -1, "items_path", nd.ItemsPath)
		}
		if len(nd.Cases) > 0 {
			g.cases[i] = make([]*expr.Expr, len(nd.Cases))
			for k, cs := range nd.Cases {
				g.cases[i][k] = g.parse(i, -1, "cases["+itoa(k)+"].when", cs.When)
			}
		}
		seen := map[int]bool{}
		for _, ne := range g.inputMap[i] {
			if ne.e == nil {
				continue
			}
			for _, j := range g.nodeRefs(ne.e) {
				if j != i && !seen[j] {
					seen[j] = true
					g.dataDeps[i] = append(g.dataDeps[i], j)
				}
			}
		}
		sort.Ints(g.dataDeps[i])
	}
	return g
}

// nodeRefs returns the nodes an expression reads: `<id>.output` and
// `node_results.<id>`.
func (g *graph) nodeRefs(e *expr.Expr) []int {
	var out []int
	for _, r := range e.Refs() {
		id := r.Root
		if r.Root == "node_results" {
			id = r.Field
		}
		if j, ok := g.idx[id]; ok {
			out = append(out, j)
		}
	}
	return out
}

func (g *graph) parse(node, edge int, field, src string) *expr.Expr {
	e, err := parseExpr(src)
	if err != nil {
		g.exprErrs = append(g.exprErrs, exprErr{node: node, edge: edge, field: field, err: err})
		return nil
	}
	return e
}

func (g *graph) parseMap(node int, field string, m map[string]string) []namedExpr {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]namedExpr, 0, len(keys))
	for _, k := range keys {
		out = append(out, namedExpr{key: k, e: g.parse(node, -1, field+"."+k, m[k])})
	}
	return out
}

// attached reports whether the node runs only when an owner invokes it.
func (g *graph) attached(i int) bool { return len(g.owners[i]) > 0 }

// isRoot: not attached, no incoming edge other than loop edges, and not an
// opted-out diagnostic node.
func (g *graph) isRoot(i int) bool {
	return !g.attached(i) && len(g.in[i]) == 0 && g.c.Nodes[i].IsReachableRequired()
}

// roots returns the root nodes in declaration order.
func (g *graph) roots() []int {
	var r []int
	for i := range g.c.Nodes {
		if g.isRoot(i) {
			r = append(r, i)
		}
	}
	return r
}

func itoa(i int) string {
	if i >= 0 && i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	p := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}
