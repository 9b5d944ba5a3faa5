package engine

import (
	"fmt"
	"slices"

	"github.com/chainstudio/studio/engine/chain"
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
	decisions  []Decision    // what was evaluated and which rule decided (decision.go); nil when nothing was
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
	outs := r.graph.Out[i]
	if len(outs) == 0 {
		return noRouting(nil)
	}
	nd := &r.chain.Nodes[i]
	var rt routing
	switch {
	case nd.Kind == chain.KindBranch || nd.Kind == chain.KindCondition:
		rt = r.routeMatched(i, outs, matched)
	case nd.Kind == chain.KindInterrupt && r.outcomeRouted(i):
		if matched == "" { // a mock's value (chain tests) answers as approve
			matched = chain.LabelApproved
		}
		rt = r.routeMatched(i, outs, matched) // approved / rejected / timeout (approval.go)
	case nd.RoutingOrDefault() == chain.RoutingAll:
		if nd.DispatchOrDefault() == chain.DispatchSequential { // apply starts the dispatch
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
		rt.setOutcome(r.chain.Edges[rt.deferred].ID, OutcomeFired)
		rt.deferred = noEdge
	}
	if rt.held { // pruned non-loop edges are not final while the loop goes round
		rt.pruned = slices.DeleteFunc(rt.pruned, func(ei int) bool { return !r.chain.Edges[ei].IsLoop() })
		for k := range rt.decisions {
			if d := &rt.decisions[k]; d.Outcome == OutcomePruned {
				if ei, ok := r.edgeIndex(d.Edge); ok && !r.chain.Edges[ei].IsLoop() {
					d.Outcome = OutcomeHeld
				}
			}
		}
	}
	return rt
}

// canFire checks a loop edge's cap: at the cap, on_max_reached "error" fails
// the run and "continue" prunes the edge (routing then falls back).
func (r *run) canFire(ei int) (bool, error) {
	e := &r.chain.Edges[ei]
	if !e.IsLoop() || r.loopCount[ei] < e.MaxIterations {
		return true, nil
	}
	if e.OnMaxReached == chain.OnMaxContinue {
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
	var capped []Decision // loop edges at their cap, passed over
	rule := RuleFirstMatch
	try := func(pred func(e *chain.Edge) bool) {
		for _, ei := range outs {
			if pick >= 0 || err != nil {
				return
			}
			if e := &r.chain.Edges[ei]; pred(e) {
				var ok bool
				if ok, err = r.canFire(ei); ok {
					pick = ei
				} else {
					capped = append(capped, capDecision(e, DecideEdge, err))
				}
			}
		}
	}
	if matched != "" {
		try(func(e *chain.Edge) bool { return e.Label == matched })
	}
	if pick < 0 {
		rule = RuleDefaultNoMatch
	}
	try(func(e *chain.Edge) bool { return e.Label == "default" || e.Default })
	try(func(e *chain.Edge) bool { return e.Label == "" })
	if err != nil {
		rt := noRouting(err)
		rt.decisions = capped
		return rt
	}
	rt := r.scratch.routing()
	rt.decisions = make([]Decision, 0, len(outs))
	for _, ei := range outs {
		e := &r.chain.Edges[ei]
		if k := slices.IndexFunc(capped, func(d Decision) bool { return d.Edge == e.ID }); k >= 0 {
			rt.pruned = append(rt.pruned, ei)
			rt.decisions = append(rt.decisions, capped[k])
			continue
		}
		d := Decision{Edge: e.ID, Kind: DecideEdge, Handle: e.Label, Rule: rule, Outcome: OutcomePruned}
		if ei == pick {
			rt.fired = append(rt.fired, ei)
			d.Outcome = OutcomeFired
		} else {
			rt.pruned = append(rt.pruned, ei)
			d.Rule = RuleFirstMatch // the router chose another edge
		}
		rt.decisions = append(rt.decisions, d)
	}
	return rt
}

// routeFirst routes any other node under routing "first": every edge when
// none is conditional (fan-out), else the first true conditional edge, else
// the default, else the first unconditional edge (docs/chain-format.md,
// "Routing").
func (r *run) routeFirst(i int, outs []int, out any) routing {
	sc := &scope{base: &r.scope, output: out, hasOut: true}
	anyCond := false
	for _, ei := range outs {
		if r.chain.Edges[ei].Condition != "" {
			anyCond = true
			break
		}
	}
	rt := r.scratch.routing()
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
		d := Decision{Edge: e.ID, Kind: DecideEdgeCondition, Expr: e.Condition, Rule: RuleFirstMatch, Outcome: OutcomePruned}
		if pick >= 0 { // an earlier edge matched: this one is never evaluated
			d.Result = ResultNotEvaluated
			rt.decisions = append(rt.decisions, d)
			continue
		}
		ok, reads, err := r.scratch.test(r.graph.EdgeCond[ei], sc, r.strict)
		d.Reads, d.Result = reads, resultOf(ok)
		if err != nil {
			d.Result, d.Error = ResultError, err.Error()
			return failedRouting(fmt.Errorf("edge %q condition: %w", e.ID, err), rt.decisions, d)
		}
		if ok {
			if ok, err = r.canFire(ei); err != nil {
				return failedRouting(err, rt.decisions, capDecision(e, DecideEdgeCondition, err))
			}
			if ok {
				pick = ei
				d.Outcome = OutcomeFired
			} else {
				d.Rule = RuleLoopCapReached
			}
		}
		rt.decisions = append(rt.decisions, d)
	}
	var capped []int // fallback loop edges at their cap
	if pick < 0 {    // fallback: the default edge, else the first unconditional one
		for pass := 0; pass < 2 && pick < 0; pass++ {
			for _, ei := range outs {
				e := &r.chain.Edges[ei]
				if e.Condition != "" || (pass == 0 && !e.Default) || slices.Contains(capped, ei) {
					continue
				}
				ok, err := r.canFire(ei)
				if err != nil {
					return failedRouting(err, rt.decisions, capDecision(e, DecideEdge, err))
				}
				if ok {
					pick = ei
					rt.decisions = append(rt.decisions, Decision{Edge: e.ID, Kind: DecideEdge, Rule: RuleDefaultNoMatch, Outcome: OutcomeFired})
					break
				}
				capped = append(capped, ei)
				rt.decisions = append(rt.decisions, capDecision(e, DecideEdge, nil))
			}
		}
	}
	matched := pick >= 0 && r.chain.Edges[pick].Condition != ""
	for _, ei := range outs {
		if ei == pick {
			rt.fired = append(rt.fired, ei)
			continue
		}
		rt.pruned = append(rt.pruned, ei)
		if e := &r.chain.Edges[ei]; e.Condition == "" && !slices.Contains(capped, ei) {
			rule := RuleDefaultNoMatch // another fallback was taken, or none could be
			if matched {
				rule = RuleFirstMatch
			}
			rt.decisions = append(rt.decisions, Decision{Edge: e.ID, Kind: DecideEdge, Rule: rule, Outcome: OutcomePruned})
		}
	}
	return rt
}

// routeAll routes a routing "all" node with parallel dispatch, every guard
// evaluated up front: guarded edges fire when true, unguarded ones always,
// the default only when no guard matched (docs/chain-format.md, "Routing").
func (r *run) routeAll(i int, outs []int, out any) routing {
	sc := &scope{base: &r.scope, output: out, hasOut: true}
	rt := r.scratch.routing()
	matched := false
	def := -1
	for _, ei := range outs {
		e := &r.chain.Edges[ei]
		if e.Default && e.Condition == "" {
			def = ei
			continue
		}
		fire := true
		var d *Decision // guarded edges and capped loops are recorded; unconditional edges need no record
		if e.Condition != "" {
			ok, reads, err := r.scratch.test(r.graph.EdgeCond[ei], sc, r.strict)
			rt.decisions = append(rt.decisions, Decision{Edge: e.ID, Kind: DecideGuard, Expr: e.Condition, Reads: reads, Result: resultOf(ok), Rule: RuleAllMatches})
			d = &rt.decisions[len(rt.decisions)-1]
			if err != nil {
				if rt.failed == nil {
					rt.failed = map[int]error{}
				}
				rt.failed[ei] = fmt.Errorf("guard of edge %q: %w", e.ID, err)
				d.Result, d.Error, d.Outcome = ResultError, err.Error(), OutcomeFailed
				continue
			}
			fire = ok
			matched = matched || ok
		}
		if fire {
			ok, err := r.canFire(ei)
			if err != nil {
				return failedRouting(err, rt.decisions, capDecision(e, DecideEdge, err))
			}
			if !ok {
				if d == nil {
					rt.decisions = append(rt.decisions, capDecision(e, DecideEdge, nil))
					d = &rt.decisions[len(rt.decisions)-1]
				}
				d.Rule = RuleLoopCapReached
			}
			fire = ok
		}
		if fire {
			rt.fired = append(rt.fired, ei)
		} else {
			rt.pruned = append(rt.pruned, ei)
		}
		if d != nil {
			d.Outcome = outcomeOf(fire)
		}
	}
	if def >= 0 {
		e := &r.chain.Edges[def]
		d := Decision{Edge: e.ID, Kind: DecideEdge, Rule: RuleDefaultNoMatch, Outcome: OutcomeFired}
		if ok, err := r.canFire(def); err != nil {
			return failedRouting(err, rt.decisions, capDecision(e, DecideEdge, err))
		} else if !matched && ok {
			if len(rt.fired) > 0 || len(rt.failed) > 0 {
				// The default runs as its own step after the
				// fan-out (the links that fired), not alongside it.
				rt.deferred = def
				d.Outcome = OutcomeDeferred
			} else {
				rt.fired = append(rt.fired, def)
			}
		} else {
			rt.pruned = append(rt.pruned, def)
			d.Rule, d.Outcome = RuleAllMatches, OutcomePruned // a guard matched: no default
			if !ok {
				d = capDecision(e, DecideEdge, nil)
			}
		}
		rt.decisions = append(rt.decisions, d)
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
		r.nodes.presetErr[r.graph.Idx[r.chain.Edges[ei].Target]] = err
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
	r.sched.dispatch.pending = append(r.sched.dispatch.pending, d)
}

func (r *run) runPendingDispatch() {
	for len(r.sched.dispatch.pending) > 0 {
		d := r.sched.dispatch.pending[0]
		r.sched.dispatch.pending = r.sched.dispatch.pending[1:]
		r.stepDispatch(d)
	}
}

// stepDispatch decides edges until one fires (then waits for its target).
func (r *run) stepDispatch(d *dispatcher) {
	if r.outcome.stopping {
		return
	}
	outs := r.graph.Out[d.src]
	sc := &scope{base: &r.scope, output: d.out, hasOut: true, steps: d.steps, whens: d.whens}
	rec := &EdgesRecord{Source: r.chain.Nodes[d.src].ID}
	emitted := 0 // decisions already carried by an event
	defer func() {
		if len(rec.Fired)+len(rec.Pruned)+len(rec.Failed) > 0 {
			r.addCheckpoint(Checkpoint{Kind: CheckpointEdges, Edges: rec})
		}
		if len(rec.Decisions) > emitted { // links passed over with none fired after them: an event with only the decisions
			r.emit(Event{NodeID: rec.Source, Phase: PhaseProgress, Decisions: rec.Decisions[emitted:]})
		}
	}()
	note := func(dc Decision) *Decision {
		rec.Decisions = append(rec.Decisions, dc)
		return &rec.Decisions[len(rec.Decisions)-1]
	}
	// fire fires link ei; dc is its recorded decision (nil: an unconditional
	// link, which needs none).
	fire := func(ei int, guardErr error, dc *Decision) bool {
		e := &r.chain.Edges[ei]
		ok, err := r.canFire(ei)
		if err != nil {
			note(capDecision(e, DecideEdge, err))
			r.failRouting(d.src, err)
			return true
		}
		if !ok {
			if dc == nil {
				dc = note(capDecision(e, DecideEdge, nil))
			}
			dc.Rule, dc.Outcome = RuleLoopCapReached, OutcomePruned
			rec.Pruned = append(rec.Pruned, e.ID)
			r.deliverPruned(ei, ReasonConditionFalse)
			return false
		}
		t := r.graph.Idx[e.Target]
		if guardErr != nil {
			if rec.Failed == nil {
				rec.Failed = map[string]string{}
			}
			rec.Failed[e.ID] = guardErr.Error()
			r.nodes.presetErr[t] = guardErr
		} else {
			rec.Fired = append(rec.Fired, e.ID)
		}
		if r.sched.dispatch.byTarget == nil {
			r.sched.dispatch.byTarget = map[int]*dispatcher{}
		}
		r.sched.dispatch.byTarget[t] = d
		d.waiting = t
		d.link(t, r.stepKey(ei))
		// The source's done event could not name this edge (it was decided
		// later): say so now, so watchers can draw it as fired.
		ev := Event{NodeID: r.chain.Nodes[d.src].ID, Phase: PhaseProgress, Edges: r.edgeIDs([]int{ei}),
			Progress: map[string]any{"dispatched": r.stepKey(ei)}}
		if len(rec.Decisions) > emitted {
			ev.Decisions = rec.Decisions[emitted:]
			emitted = len(rec.Decisions)
		}
		r.emit(ev)
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
			if fire(ei, nil, nil) {
				return
			}
			continue
		}
		ok, reads, err := r.scratch.test(r.graph.EdgeCond[ei], sc, r.strict)
		dc := note(Decision{Edge: e.ID, Kind: DecideGuard, Expr: e.Condition, Reads: reads, Result: resultOf(ok), Rule: RuleAllMatches, Outcome: OutcomePruned})
		if err != nil {
			dc.Result, dc.Error, dc.Outcome = ResultError, err.Error(), OutcomeFailed
			if fire(ei, fmt.Errorf("guard of edge %q: %w", e.ID, err), dc) {
				return
			}
			continue
		}
		d.whens[r.stepKey(ei)] = ok
		if ok {
			d.matched = true
			dc.Outcome = OutcomeFired
			if fire(ei, nil, dc) {
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
		e := &r.chain.Edges[ei]
		if !d.matched {
			if fire(ei, nil, note(Decision{Edge: e.ID, Kind: DecideEdge, Rule: RuleDefaultNoMatch, Outcome: OutcomeFired})) {
				return
			}
		} else {
			note(Decision{Edge: e.ID, Kind: DecideEdge, Rule: RuleAllMatches, Outcome: OutcomePruned})
			rec.Pruned = append(rec.Pruned, e.ID)
			r.deliverPruned(ei, ReasonConditionFalse)
		}
	}
}
