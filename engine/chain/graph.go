package chain

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

// Attachment ties a node to an owner that invokes it: the map whose body
// it is, the parallel whose branch, the node whose error handler.
type Attachment struct {
	Owner int
	Rel   string
}

// NamedExpr is a parsed expression under a key (input_map / set_state).
type NamedExpr struct {
	Key  string
	Expr *expr.Expr
}

// exprErr records an expression that failed to parse, for validation.
type exprErr struct {
	node, edge int // -1 when not applicable
	field      string
	err        error
}

// Graph is a chain indexed for validation and execution. It tolerates broken
// chains (dangling references are left out of the indexes and reported by
// Validate), so building it never fails.
type Graph struct {
	C        *Chain
	Idx      map[string]int
	Out      [][]int // edge indexes by source node, in declaration order
	In       [][]int // non-loop incoming edge indexes by target node
	LoopIn   [][]int // loop incoming edge indexes by target node
	edgeOK   []bool  // both ends exist
	Owners   [][]Attachment
	DataDeps [][]int // nodes whose output the node's input_map reads

	// parsed expressions (nil where empty or unparseable)
	InputMap  [][]NamedExpr
	SetState  [][]NamedExpr
	Condition []*expr.Expr
	Items     []*expr.Expr
	Cases     [][]*expr.Expr
	EdgeCond  []*expr.Expr
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
		g := NewGraph(c)
		for i, deps := range g.DataDeps {
			for _, d := range deps {
				if !yield(c.Nodes[d].ID, c.Nodes[i].ID) {
					return
				}
			}
		}
		for i, owners := range g.Owners {
			for _, o := range owners {
				if !yield(c.Nodes[o.Owner].ID, c.Nodes[i].ID) {
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
func attachments(c *Chain, idx map[string]int) [][]Attachment {
	owners := make([][]Attachment, len(c.Nodes))
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		attach := func(id, rel string) {
			if j, ok := idx[id]; ok && id != "" {
				owners[j] = append(owners[j], Attachment{Owner: i, Rel: rel})
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

// NewGraph indexes c; it never fails (see Graph).
func NewGraph(c *Chain) *Graph {
	n := len(c.Nodes)
	g := &Graph{
		C:         c,
		Out:       make([][]int, n),
		In:        make([][]int, n),
		LoopIn:    make([][]int, n),
		edgeOK:    make([]bool, len(c.Edges)),
		DataDeps:  make([][]int, n),
		InputMap:  make([][]NamedExpr, n),
		SetState:  make([][]NamedExpr, n),
		Condition: make([]*expr.Expr, n),
		Items:     make([]*expr.Expr, n),
		Cases:     make([][]*expr.Expr, n),
		EdgeCond:  make([]*expr.Expr, len(c.Edges)),
	}
	g.Idx = nodeIndex(c)
	g.Owners = attachments(c, g.Idx)
	for i := range c.Edges {
		e := &c.Edges[i]
		s, okS := g.Idx[e.Source]
		t, okT := g.Idx[e.Target]
		if !okS || !okT {
			continue
		}
		g.edgeOK[i] = true
		g.Out[s] = append(g.Out[s], i)
		if e.IsLoop() {
			g.LoopIn[t] = append(g.LoopIn[t], i)
		} else {
			g.In[t] = append(g.In[t], i)
		}
		if e.Condition != "" {
			g.EdgeCond[i] = g.parse(-1, i, "condition", e.Condition)
		}
	}
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		g.InputMap[i] = g.parseMap(i, "input_map", nd.InputMap)
		g.SetState[i] = g.parseMap(i, "set_state", nd.SetState)
		if nd.Condition != "" {
			g.Condition[i] = g.parse(i, -1, "condition", nd.Condition)
		}
		if nd.ItemsPath != "" {
			g.Items[i] = g.parse(i, -1, "items_path", nd.ItemsPath)
		}
		if len(nd.Cases) > 0 {
			g.Cases[i] = make([]*expr.Expr, len(nd.Cases))
			for k, cs := range nd.Cases {
				g.Cases[i][k] = g.parse(i, -1, "cases["+itoa(k)+"].when", cs.When)
			}
		}
		seen := map[int]bool{}
		for _, ne := range g.InputMap[i] {
			if ne.Expr == nil {
				continue
			}
			for _, j := range g.NodeRefs(ne.Expr) {
				if j != i && !seen[j] {
					seen[j] = true
					g.DataDeps[i] = append(g.DataDeps[i], j)
				}
			}
		}
		sort.Ints(g.DataDeps[i])
	}
	return g
}

// NodeRefs returns the nodes an expression reads: `<id>.output` and
// `node_results.<id>`.
func (g *Graph) NodeRefs(e *expr.Expr) []int {
	var out []int
	for _, r := range e.Refs() {
		id := r.Root
		if r.Root == "node_results" {
			id = r.Field
		}
		if j, ok := g.Idx[id]; ok {
			out = append(out, j)
		}
	}
	return out
}

func (g *Graph) parse(node, edge int, field, src string) *expr.Expr {
	e, err := parseExpr(src)
	if err != nil {
		g.exprErrs = append(g.exprErrs, exprErr{node: node, edge: edge, field: field, err: err})
		return nil
	}
	return e
}

func (g *Graph) parseMap(node int, field string, m map[string]string) []NamedExpr {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]NamedExpr, 0, len(keys))
	for _, k := range keys {
		out = append(out, NamedExpr{Key: k, Expr: g.parse(node, -1, field+"."+k, m[k])})
	}
	return out
}

// Attached reports whether the node runs only when an owner invokes it.
func (g *Graph) Attached(i int) bool { return len(g.Owners[i]) > 0 }

// isRoot: not attached, no incoming edge other than loop edges, and not an
// opted-out diagnostic node.
func (g *Graph) isRoot(i int) bool {
	return !g.Attached(i) && len(g.In[i]) == 0 && g.C.Nodes[i].IsReachableRequired()
}

// roots returns the root nodes in declaration order.
func (g *Graph) roots() []int {
	var r []int
	for i := range g.C.Nodes {
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
