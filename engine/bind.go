package engine

import (
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
)

// binding is what a plan's runs on one engine share that follows from the
// engine's registry: which tools read the scope or run inline, and what the
// workers of map, parallel and handler subtrees read. Built once per plan
// and registry (Plan's memo), never by a run.
type binding struct {
	// frozen lists, per owner (map/parallel node, or a node with an error
	// handler), the run-level names its attached subtree's expressions read;
	// workers evaluate against a snapshot of just those.
	frozen    [][]string
	frozenAll []bool
	scoped    []bool      // tool nodes whose tool reads the scope (Registry.SetScoped)
	inline    []bool      // tool nodes the coordinator may run itself (see Registry.SetInline)
	inlineFn  []tool.Func // their tools, resolved once per plan
	// dataFlow names, per node, the field of its tool's input the run's
	// input flows into by default ("" for none; chain.Graph.DataFlowField).
	dataFlow []string
}

// bind returns p's binding to e's registry, built on first use.
func (e *Engine) bind(p *chain.Plan) *binding {
	return p.Memo(e.opts.Registry, func() any { return newBinding(p.Graph(), e.opts.Registry) }).(*binding)
}

func newBinding(g *chain.Graph, reg *Registry) *binding {
	n := len(g.C.Nodes)
	b := &binding{
		frozen:    make([][]string, n),
		frozenAll: make([]bool, n),
		inline:    make([]bool, n),
		scoped:    make([]bool, n),
		dataFlow:  make([]string, n),
	}
	for i := range g.C.Nodes {
		nd := &g.C.Nodes[i]
		b.scoped[i] = nd.Kind == chain.KindTool && reg.IsScoped(nd.Name)
		b.inline[i] = !b.scoped[i] && nd.Kind == chain.KindTool && nd.Timeout == 0 && reg.IsInline(nd.Name) &&
			(nd.Retry == nil || nd.Retry.InitialDelaySeconds == 0)
		if nd.Kind == chain.KindTool && len(nd.Input) > 0 { // DataFlowField decides the rest
			schema, _ := reg.InputSchema(nd.Name)
			b.dataFlow[i] = g.DataFlowField(i, schema)
		}
		if b.inline[i] {
			if b.inlineFn == nil {
				b.inlineFn = make([]tool.Func, n)
			}
			b.inlineFn[i], b.inline[i] = reg.Get(nd.Name)
		}
	}
	for i := 0; i < n; i++ {
		nd := &g.C.Nodes[i]
		if nd.Kind == chain.KindMap || nd.Kind == chain.KindParallel || nd.ErrorHandler() != "" {
			b.frozen[i], b.frozenAll[i] = subtreeNames(g, i, b.scoped)
		}
	}
	return b
}

// scopeNames are the run-level names a scoped tool's snapshot holds.
var scopeNames = []string{"input", "state", "node_results"}

// subtreeNames collects the run-level names read by the nodes attached to
// owner, transitively (a map body that is itself a map, a handler's handler).
// A scoped tool among them reads every run-level name it can (scopeNames).
func subtreeNames(g *chain.Graph, owner int, scoped []bool) ([]string, bool) {
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
		nd := &g.C.Nodes[i]
		var kids []string
		if nd.Kind == chain.KindMap {
			kids = append(kids, nd.MapNode)
		}
		if nd.Kind == chain.KindParallel {
			kids = append(kids, nd.Branches...)
		}
		if h := nd.ErrorHandler(); h != "" {
			kids = append(kids, h)
		}
		for _, k := range kids {
			j, ok := g.Idx[k]
			if !ok || seen[j] {
				continue
			}
			seen[j] = true
			if scoped[j] {
				for _, n := range scopeNames {
					names[n] = true
				}
			}
			for _, ne := range g.InputMap[j] {
				add(ne.Expr)
			}
			add(g.Items[j])
			for _, ne := range g.SetState[j] {
				add(ne.Expr)
			}
			visit(j)
		}
	}
	add(g.Items[owner])
	visit(owner)
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	return out, all
}
