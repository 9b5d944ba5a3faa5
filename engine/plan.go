package engine

import (
	"container/heap"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/internal/intheap"
	"github.com/chainstudio/studio/engine/tool"
)

// plan is what a valid chain's runs share: computed once per Prepare.
type plan struct {
	roots      []int
	terminals  []int   // no outgoing edges, no dependants, not attached (or a run-level error handler)
	termRank   []int   // per terminal, its place in topological order (final_output: the highest completed)
	topoPos    []int   // position in topological order (declaration order breaks ties)
	dependants [][]int // reverse of graph.dataDeps
	// frozen lists, per owner (map/parallel node, or a node with an error
	// handler), the run-level names its attached subtree's expressions read;
	// workers evaluate against a snapshot of just those.
	frozen    [][]string
	frozenAll []bool
	scoped    []bool      // tool nodes whose tool reads the scope (Registry.SetScoped)
	inline    []bool      // tool nodes the coordinator may run itself (see Registry.SetInline)
	inlineFn  []tool.Func // their tools, resolved once at Prepare
	edgeID1   [][]string  // per edge, []string{id}: shared by events and records, never modified
}

func newPlan(g *graph, reg *Registry) *plan {
	n := len(g.c.Nodes)
	p := &plan{
		roots:      g.roots(),
		topoPos:    make([]int, n),
		dependants: make([][]int, n),
		frozen:     make([][]string, n),
		frozenAll:  make([]bool, n),
	}
	for i, deps := range g.dataDeps {
		for _, d := range deps {
			p.dependants[d] = append(p.dependants[d], i)
		}
	}
	p.topo(g)
	for i := 0; i < n; i++ {
		if len(g.out[i]) == 0 && len(p.dependants[i]) == 0 && (!g.attached(i) || runLevelHandler(g, i)) {
			p.terminals = append(p.terminals, i)
			// A handler has no edge from the node it stands in for, but it
			// runs after it: it ranks just after the latest of its owners.
			rank := 2 * p.topoPos[i]
			for _, a := range g.owners[i] {
				rank = max(rank, 2*p.topoPos[a.owner]+1)
			}
			p.termRank = append(p.termRank, rank)
		}
	}
	p.edgeID1 = make([][]string, len(g.c.Edges))
	for k := range g.c.Edges {
		p.edgeID1[k] = []string{g.c.Edges[k].ID}
	}
	p.inline = make([]bool, n)
	p.scoped = make([]bool, n)
	for i := range g.c.Nodes {
		nd := &g.c.Nodes[i]
		p.scoped[i] = nd.Kind == KindTool && reg.IsScoped(nd.Name)
		p.inline[i] = !p.scoped[i] && nd.Kind == KindTool && nd.Timeout == 0 && reg.IsInline(nd.Name) &&
			(nd.Retry == nil || nd.Retry.InitialDelaySeconds == 0)
		if p.inline[i] {
			if p.inlineFn == nil {
				p.inlineFn = make([]tool.Func, n)
			}
			p.inlineFn[i], p.inline[i] = reg.Get(nd.Name)
		}
	}
	for i := 0; i < n; i++ {
		nd := &g.c.Nodes[i]
		if nd.Kind == KindMap || nd.Kind == KindParallel || nd.ErrorHandler() != "" {
			p.frozen[i], p.frozenAll[i] = subtreeNames(g, i, p.scoped)
		}
	}
	return p
}

// scopeNames are the run-level names a scoped tool's snapshot holds.
var scopeNames = []string{"input", "state", "node_results"}

// runLevelHandler: node i is only ever an error handler, of nodes that run
// in the run itself (not inside a map or parallel node). It runs as a node
// of the run, so when nothing depends on it, it ends a path: a terminal
// node (A2E: "no other node lists it as a dependency").
func runLevelHandler(g *graph, i int) bool {
	for _, a := range g.owners[i] {
		if a.rel != RelHandler || g.attached(a.owner) {
			return false
		}
	}
	return len(g.owners[i]) > 0
}

// topo orders nodes by non-loop edges and data dependencies (Kahn's
// algorithm with a min-heap on declaration index).
func (p *plan) topo(g *graph) {
	n := len(g.c.Nodes)
	indeg := make([]int, n)
	succ := make([][]int, n)
	for i := 0; i < n; i++ {
		for _, ei := range g.out[i] {
			if g.c.Edges[ei].IsLoop() {
				continue
			}
			t := g.idx[g.c.Edges[ei].Target]
			succ[i] = append(succ[i], t)
			indeg[t]++
		}
		for _, d := range g.dataDeps[i] {
			succ[d] = append(succ[d], i)
			indeg[i]++
		}
	}
	h := &intheap.Min{}
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			*h = append(*h, i)
		}
	}
	heap.Init(h)
	pos := 0
	placed := make([]bool, n)
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		placed[i] = true
		p.topoPos[i] = pos
		pos++
		for _, t := range succ[i] {
			indeg[t]--
			if indeg[t] == 0 {
				heap.Push(h, t)
			}
		}
	}
	for i := 0; i < n; i++ { // only on invalid chains (cycles); keep declaration order
		if !placed[i] {
			p.topoPos[i] = pos
			pos++
		}
	}
}

// subtreeNames collects the run-level names read by the nodes attached to
// owner, transitively (a map body that is itself a map, a handler's handler).
// A scoped tool among them reads every run-level name it can (scopeNames).
func subtreeNames(g *graph, owner int, scoped []bool) ([]string, bool) {
	seen := map[int]bool{owner: true}
	names := map[string]bool{}
	all := false
	var visit func(i int)
	add := func(e *expr.Expr) {
		if e == nil {
			return
		}
		for _, ref := range e.Refs() {
			switch ref.Root {
			case "@":
				all = true
			case "output", "steps", "item", "index", "resume", "error":
			default:
				names[ref.Root] = true
			}
		}
	}
	visit = func(i int) {
		nd := &g.c.Nodes[i]
		var kids []string
		if nd.Kind == KindMap {
			kids = append(kids, nd.MapNode)
		}
		if nd.Kind == KindParallel {
			kids = append(kids, nd.Branches...)
		}
		if h := nd.ErrorHandler(); h != "" {
			kids = append(kids, h)
		}
		for _, k := range kids {
			j, ok := g.idx[k]
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			if scoped[j] {
				for _, n := range scopeNames {
					names[n] = true
				}
			}
			for _, ne := range g.inputMap[j] {
				add(ne.e)
			}
			add(g.items[j])
			for _, ne := range g.setState[j] {
				add(ne.e)
			}
			visit(j)
		}
	}
	add(g.items[owner])
	visit(owner)
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out, all
}
