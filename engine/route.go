package engine

import (
	"fmt"
	"slices"
)

// routing is the decision taken on a node's outgoing edges.
type routing struct {
	fired      []int
	pruned     []int
	failed     map[int]error // routing "all": edges whose guard failed; their targets fail without running
	held       bool          // a loop edge fired: the other edges wait for the next pass
	sequential bool          // dispatch sequential: edges are decided one by one later
	deferred   int           // a default edge held until the fired targets finish (routing all, parallel); noEdge: none
	err        error         // strict routing, a capped loop, a failing guard (routing first)
}

// noEdge and noNode mark "none" where an edge or node index is expected.
const (
	noEdge = -1
	noNode = -1
)

// noRouting is a decision that fires and prunes nothing; err, when set,
// fails the run.
func noRouting(err error) routing { return routing{deferred: noEdge, err: err} }

// route decides which outgoing edges of node i fire, reading the state the
// node just wrote. matched is the handle a branch/condition node chose.
func (r *run) route(i int, out any, matched string) routing {
	outs := r.graph.out[i]
	if len(outs) == 0 {
		return noRouting(nil)
	}
	nd := &r.chain.Nodes[i]
	var rt routing
	switch {
	case nd.Kind == KindBranch || nd.Kind == KindCondition:
		rt = r.routeMatched(i, outs, matched)
	case nd.RoutingOrDefault() == RoutingAll:
		if nd.DispatchOrDefault() == DispatchSequential { // apply starts the dispatch
			rt := noRouting(nil)
			rt.sequential = true
			return rt
		}
		rt = r.routeAll(i, outs, out)
	default:
		rt = r.routeFirst(i, outs, out)
	}
	if rt.err == nil && len(rt.fired) == 0 && len(rt.failed) == 0 && r.chain.StrictRouting {
		rt.err = &ChainRoutingError{NodeID: nd.ID, Matched: matched, Labels: r.labels(outs)}
	}
	for _, ei := range rt.fired {
		if r.chain.Edges[ei].IsLoop() {
			rt.held = true
		}
	}
	if rt.held && rt.deferred != noEdge { // a loop goes round: no fan-out to wait for
		rt.fired = append(rt.fired, rt.deferred)
		rt.deferred = noEdge
	}
	if rt.held { // pruned non-loop edges are not final while the loop goes round
		rt.pruned = slices.DeleteFunc(rt.pruned, func(ei int) bool { return !r.chain.Edges[ei].IsLoop() })
	}
	return rt
}

// newRouting returns a routing whose lists reuse the run's scratch buffers
// (a decision is consumed before the next one is taken).
func (r *run) newRouting() routing {
	return routing{fired: r.routeBufs.fired[:0], pruned: r.routeBufs.pruned[:0], deferred: noEdge}
}

// recycle keeps a consumed routing's buffers for the next decision (only
// for a routing from route: others may share the graph's lists).
func (r *run) recycle(rt routing) {
	if rt.err == nil {
		r.routeBufs.fired, r.routeBufs.pruned = rt.fired[:0], rt.pruned[:0]
	}
}

// canFire checks a loop edge's cap: at the cap, on_max_reached "error" fails
// the run and "continue" prunes the edge (routing then falls back).
func (r *run) canFire(ei int) (bool, error) {
	e := &r.chain.Edges[ei]
	if !e.IsLoop() || r.loopCount[ei] < e.MaxIterations {
		return true, nil
	}
	if e.OnMaxReached == OnMaxContinue {
		return false, nil
	}
	return false, &ChainCycleError{EdgeID: e.ID, MaxIterations: e.MaxIterations}
}

// routeMatched routes a condition or branch node (a branch's handles are
// "true" and "false"): the edge labelled with the handle, else "default",
// else an unlabelled edge (docs/chain-format.md, "Routing").
func (r *run) routeMatched(i int, outs []int, matched string) routing {
	pick := -1
	var err error
	try := func(pred func(e *Edge) bool) {
		for _, ei := range outs {
			if pick >= 0 || err != nil {
				return
			}
			if e := &r.chain.Edges[ei]; pred(e) {
				var ok bool
				if ok, err = r.canFire(ei); ok {
					pick = ei
				}
			}
		}
	}
	if matched != "" {
		try(func(e *Edge) bool { return e.Label == matched })
	}
	try(func(e *Edge) bool { return e.Label == "default" || e.Default })
	try(func(e *Edge) bool { return e.Label == "" })
	if err != nil {
		return noRouting(err)
	}
	rt := r.newRouting()
	for _, ei := range outs {
		if ei == pick {
			rt.fired = append(rt.fired, ei)
		} else {
			rt.pruned = append(rt.pruned, ei)
		}
	}
	return rt
}

// routeFirst routes any other node under routing "first": every edge when
// none is conditional (fan-out), else the first true conditional edge, else
// the default, else the first unconditional edge (docs/chain-format.md,
// "Routing").
func (r *run) routeFirst(i int, outs []int, out any) routing {
	sc := &scope{base: r, output: out, hasOut: true}
	anyCond := false
	for _, ei := range outs {
		if r.chain.Edges[ei].Condition != "" {
			anyCond = true
			break
		}
	}
	rt := r.newRouting()
	if !anyCond { // fan-out: every edge fires
		for _, ei := range outs {
			ok, err := r.canFire(ei)
			if err != nil {
				return noRouting(err)
			}
			if ok {
				rt.fired = append(rt.fired, ei)
			} else {
				rt.pruned = append(rt.pruned, ei)
			}
		}
		return rt
	}
	pick := -1
	for _, ei := range outs {
		e := &r.chain.Edges[ei]
		if e.Condition == "" {
			continue
		}
		ok, err := r.graph.edgeCond[ei].Test(sc, r.strict)
		if err != nil {
			return noRouting(fmt.Errorf("edge %q condition: %w", e.ID, err))
		}
		if ok {
			if ok, err = r.canFire(ei); err != nil {
				return noRouting(err)
			}
			if ok {
				pick = ei
				break
			}
		}
	}
	if pick < 0 { // fallback: the default edge, else the first unconditional one
		for pass := 0; pass < 2 && pick < 0; pass++ {
			for _, ei := range outs {
				e := &r.chain.Edges[ei]
				if e.Condition != "" || (pass == 0 && !e.Default) {
					continue
				}
				ok, err := r.canFire(ei)
				if err != nil {
					return noRouting(err)
				}
				if ok {
					pick = ei
					break
				}
			}
		}
	}
	for _, ei := range outs {
		if ei == pick {
			rt.fired = append(rt.fired, ei)
		} else {
			rt.pruned = append(rt.pruned, ei)
		}
	}
	return rt
}

// routeAll routes a routing "all" node with parallel dispatch, every guard
// evaluated up front: guarded edges fire when true, unguarded ones always,
// the default only when no guard matched (docs/chain-format.md, "Routing").
func (r *run) routeAll(i int, outs []int, out any) routing {
	sc := &scope{base: r, output: out, hasOut: true}
	rt := r.newRouting()
	matched := false
	def := -1
	for _, ei := range outs {
		e := &r.chain.Edges[ei]
		if e.Default && e.Condition == "" {
			def = ei
			continue
		}
		fire := true
		if e.Condition != "" {
			ok, err := r.graph.edgeCond[ei].Test(sc, r.strict)
			if err != nil {
				if rt.failed == nil {
					rt.failed = map[int]error{}
				}
				rt.failed[ei] = fmt.Errorf("guard of edge %q: %w", e.ID, err)
				continue
			}
			fire = ok
			matched = matched || ok
		}
		if fire {
			ok, err := r.canFire(ei)
			if err != nil {
				return noRouting(err)
			}
			fire = ok
		}
		if fire {
			rt.fired = append(rt.fired, ei)
		} else {
			rt.pruned = append(rt.pruned, ei)
		}
	}
	if def >= 0 {
		if ok, err := r.canFire(def); err != nil {
			return noRouting(err)
		} else if !matched && ok {
			if len(rt.fired) > 0 || len(rt.failed) > 0 {
				// The default runs as its own step after the
				// fan-out (the links that fired), not alongside it.
				rt.deferred = def
			} else {
				rt.fired = append(rt.fired, def)
			}
		} else {
			rt.pruned = append(rt.pruned, def)
		}
	}
	return rt
}

// deliver passes a routing decision to the targets; reason is why the
// targets of pruned edges may be skipped.
func (r *run) deliver(rt *routing, reason string) {
	for _, ei := range rt.fired {
		r.deliverFired(ei)
	}
	for ei, err := range rt.failed {
		r.nodes.presetErr[r.graph.idx[r.chain.Edges[ei].Target]] = err
		r.deliverFired(ei)
	}
	for _, ei := range rt.pruned {
		r.deliverPruned(ei, reason)
	}
}

func (r *run) failedIDs(m map[int]error) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for ei, err := range m {
		out[r.chain.Edges[ei].ID] = err.Error()
	}
	return out
}

func (r *run) labels(outs []int) []string {
	var ls []string
	for _, ei := range outs {
		if l := r.chain.Edges[ei].Label; l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

// dispatcher runs the links of a routing "all" + dispatch "sequential" node
// one after another: each guard is evaluated just before its target starts,
// so it can read `steps` (the links already run).
type dispatcher struct {
	src     int
	out     any
	pos     int
	def     int // the default edge, decided last; noEdge when none or decided
	waiting int // the target whose link runs now, noNode when none
	matched bool
	steps   map[string]any // link outputs by step key (edge label, else target id)
	whens   map[string]any // guard results by step key (what `when` reads)
	keys    map[int]string // target → its step key
}

// stepKey names a link in `steps` and `when`: the edge's label (an agent
// chain labels each link with the agent's name), else the target's id.
func (r *run) stepKey(ei int) string {
	if l := r.chain.Edges[ei].Label; l != "" {
		return l
	}
	return r.chain.Edges[ei].Target
}

func (d *dispatcher) link(t int, key string) {
	if d.keys == nil {
		d.keys = map[int]string{}
	}
	d.keys[t] = key
}

// key returns the step key of target t (its id when unknown).
func (d *dispatcher) key(t int, r *run) string {
	if k, ok := d.keys[t]; ok {
		return k
	}
	return r.chain.Nodes[t].ID
}

// startDispatch begins the sequential dispatch of node i's edges: live it
// steps once the node is applied; replaying, it waits for the log's "edges"
// entries (and resumeDispatchers) to say how far it got.
func (r *run) startDispatch(i int, out any) {
	d := &dispatcher{src: i, out: out, def: noEdge, waiting: noNode, steps: map[string]any{}, whens: map[string]any{}}
	if r.replay.on {
		if r.replay.dispatch == nil {
			r.replay.dispatch = map[int]*dispatcher{}
		}
		r.replay.dispatch[i] = d
		return
	}
	r.dispatch.pending = append(r.dispatch.pending, d)
}

func (r *run) runPendingDispatch() {
	for len(r.dispatch.pending) > 0 {
		d := r.dispatch.pending[0]
		r.dispatch.pending = r.dispatch.pending[1:]
		r.stepDispatch(d)
	}
}

// stepDispatch decides edges until one fires (then waits for its target).
func (r *run) stepDispatch(d *dispatcher) {
	if r.outcome.stopping {
		return
	}
	outs := r.graph.out[d.src]
	sc := &scope{base: r, output: d.out, hasOut: true, steps: d.steps, whens: d.whens}
	rec := &EdgesRecord{Source: r.chain.Nodes[d.src].ID}
	defer func() {
		if len(rec.Fired)+len(rec.Pruned)+len(rec.Failed) > 0 {
			r.addCheckpoint(Checkpoint{Kind: CheckpointEdges, Edges: rec})
		}
	}()
	fire := func(ei int, guardErr error) bool {
		e := &r.chain.Edges[ei]
		ok, err := r.canFire(ei)
		if err != nil {
			r.failRouting(d.src, err)
			return true
		}
		if !ok {
			rec.Pruned = append(rec.Pruned, e.ID)
			r.deliverPruned(ei, ReasonConditionFalse)
			return false
		}
		t := r.graph.idx[e.Target]
		if guardErr != nil {
			if rec.Failed == nil {
				rec.Failed = map[string]string{}
			}
			rec.Failed[e.ID] = guardErr.Error()
			r.nodes.presetErr[t] = guardErr
		} else {
			rec.Fired = append(rec.Fired, e.ID)
		}
		if r.dispatch.byTarget == nil {
			r.dispatch.byTarget = map[int]*dispatcher{}
		}
		r.dispatch.byTarget[t] = d
		d.waiting = t
		d.link(t, r.stepKey(ei))
		// The source's done event could not name this edge (it was decided
		// later): say so now, so watchers can draw it as fired.
		r.emit(Event{NodeID: r.chain.Nodes[d.src].ID, Phase: PhaseProgress, Edges: r.edgeIDs([]int{ei}),
			Progress: map[string]any{"dispatched": r.stepKey(ei)}})
		r.deliverFired(ei)
		return true
	}
	for d.pos < len(outs) {
		ei := outs[d.pos]
		d.pos++
		e := &r.chain.Edges[ei]
		if e.Default && e.Condition == "" {
			d.def = ei
			continue
		}
		if e.Condition == "" {
			if fire(ei, nil) {
				return
			}
			continue
		}
		ok, err := r.graph.edgeCond[ei].Test(sc, r.strict)
		if err != nil {
			if fire(ei, fmt.Errorf("guard of edge %q: %w", e.ID, err)) {
				return
			}
			continue
		}
		d.whens[r.stepKey(ei)] = ok
		if ok {
			d.matched = true
			if fire(ei, nil) {
				return
			}
			continue
		}
		rec.Pruned = append(rec.Pruned, e.ID)
		r.deliverPruned(ei, ReasonConditionFalse)
	}
	if d.def != noEdge {
		ei := d.def
		d.def = noEdge
		if !d.matched {
			if fire(ei, nil) {
				return
			}
		} else {
			rec.Pruned = append(rec.Pruned, r.chain.Edges[ei].ID)
			r.deliverPruned(ei, ReasonConditionFalse)
		}
	}
}
