package chain

import (
	"container/heap"

	"github.com/chainstudio/studio/engine/internal/intheap"
)

// Order is what a valid chain's runs share that follows from the document
// alone: computed once by Compile.
type Order struct {
	Roots      []int
	Terminals  []int      // no outgoing edges, no dependants, not attached (or a run-level error handler)
	TermRank   []int      // per terminal, its place in topological order (final_output: the highest completed)
	topoPos    []int      // position in topological order (declaration order breaks ties)
	Dependants [][]int    // reverse of graph.dataDeps
	EdgeID1    [][]string // per edge, []string{id}: shared by events and records, never modified
}

func newOrder(g *Graph) *Order {
	n := len(g.C.Nodes)
	p := &Order{
		Roots:      g.roots(),
		topoPos:    make([]int, n),
		Dependants: make([][]int, n),
	}
	for i, deps := range g.DataDeps {
		for _, d := range deps {
			p.Dependants[d] = append(p.Dependants[d], i)
		}
	}
	p.topo(g)
	for i := 0; i < n; i++ {
		if len(g.Out[i]) == 0 && len(p.Dependants[i]) == 0 && (!g.Attached(i) || runLevelHandler(g, i)) {
			p.Terminals = append(p.Terminals, i)
			// A handler has no edge from the node it stands in for, but it
			// runs after it: it ranks just after the latest of its owners.
			rank := 2 * p.topoPos[i]
			for _, a := range g.Owners[i] {
				rank = max(rank, 2*p.topoPos[a.Owner]+1)
			}
			p.TermRank = append(p.TermRank, rank)
		}
	}
	p.EdgeID1 = make([][]string, len(g.C.Edges))
	for k := range g.C.Edges {
		p.EdgeID1[k] = []string{g.C.Edges[k].ID}
	}
	return p
}

// runLevelHandler: node i is only ever an error handler, of nodes that run
// in the run itself (not inside a map or parallel node). It runs as a node
// of the run, so when nothing depends on it, it ends a path: a terminal
// node (A2E: "no other node lists it as a dependency").
func runLevelHandler(g *Graph, i int) bool {
	for _, a := range g.Owners[i] {
		if a.Rel != RelHandler || g.Attached(a.Owner) {
			return false
		}
	}
	return len(g.Owners[i]) > 0
}

// topo orders nodes by non-loop edges and data dependencies (Kahn's
// algorithm with a min-heap on declaration index).
func (p *Order) topo(g *Graph) {
	n := len(g.C.Nodes)
	indeg := make([]int, n)
	succ := make([][]int, n)
	for i := 0; i < n; i++ {
		for _, ei := range g.Out[i] {
			if g.C.Edges[ei].IsLoop() {
				continue
			}
			t := g.Idx[g.C.Edges[ei].Target]
			succ[i] = append(succ[i], t)
			indeg[t]++
		}
		for _, d := range g.DataDeps[i] {
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
