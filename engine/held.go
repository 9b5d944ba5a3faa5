package engine

import "slices"

// Under routing "all" with parallel dispatch, a default edge that fires
// (no guarded edge matched) is held until the targets of the edges that fired
// with it have finished: the default runs as its own step after the fan-out
// (docs/chain-format.md, "Routing"). The node's record names the held edge (Deferred); an "edges"
// entry records its firing, so a resume knows whether it still waits.

// heldDefault is one default edge waiting for the fan-out of its source.
type heldDefault struct {
	src, edge  int
	targets    []int        // the fan-out: targets of the edges that fired with it
	waiting    map[int]bool // those not finished yet
	unfinished []string     // fired without waiting for these (a ring of holds)
}

// holdDefault holds default edge ei of node src until the fan-out finishes:
// the targets of the edges that fired with it, except those that themselves
// wait for the default's target (it, or a node downstream of it by edge or
// data dependency). Waiting for those would never end.
func (r *run) holdDefault(src, ei int, rt routing) {
	hd := &heldDefault{src: src, edge: ei}
	dt := r.graph.Idx[r.chain.Edges[ei].Target]
	add := func(e int) {
		t := r.graph.Idx[r.chain.Edges[e].Target]
		if t == dt || ancestors(r.graph, t)[dt] {
			return
		}
		hd.targets = append(hd.targets, t)
	}
	for _, e := range rt.fired {
		add(e)
	}
	for e := range rt.failed {
		add(e)
	}
	if r.replay.on {
		r.replay.held = append(r.replay.held, hd)
		return
	}
	r.wait(hd, hd.targets)
}

// wait registers hd as waiting for targets (firing it at once when none).
func (r *run) wait(hd *heldDefault, targets []int) {
	hd.waiting = map[int]bool{}
	for _, t := range targets {
		hd.waiting[t] = true
	}
	if len(hd.waiting) == 0 {
		r.fireHeld(hd)
		return
	}
	r.sched.hold(hd)
}

// releaseHeld: node t finished; a held default whose fan-out has all
// finished fires. (Holds are few and short-lived: a scan costs nothing when
// there are none, which is every run without a parallel default.)
func (r *run) releaseHeld(t int) {
	var ready []*heldDefault
	for _, hd := range r.sched.holds {
		if hd.waiting[t] {
			delete(hd.waiting, t)
			if len(hd.waiting) == 0 {
				ready = append(ready, hd)
			}
		}
	}
	for _, hd := range ready {
		r.fireHeld(hd)
	}
}

// fireHeld fires a held default edge now, unless the run is stopping (a
// resume decides it again from the log).
func (r *run) fireHeld(hd *heldDefault) {
	if r.outcome.stopping {
		return
	}
	r.sched.unhold(hd)
	src := r.chain.Nodes[hd.src].ID
	id := r.chain.Edges[hd.edge].ID
	r.addCheckpoint(Checkpoint{Kind: CheckpointEdges, Edges: &EdgesRecord{Source: src, Fired: []string{id}}})
	// The source's done event could not name this edge: say so now.
	progress := map[string]any{"dispatched": r.stepKey(hd.edge)}
	if len(hd.unfinished) > 0 {
		progress["unfinished"] = hd.unfinished // it could not wait for these
	}
	r.emit(Event{NodeID: src, Phase: PhaseProgress, Edges: []string{id}, Progress: progress})
	r.deliverFired(hd.edge)
}

// releaseStuckHold: nothing runs and nothing is ready, yet defaults are
// held. Holds wait on joins, and joins may wait on other holds' targets, so
// holds can wait on each other in a ring; the order they ask for is a
// preference, never a reason to stop. The oldest hold whose fan-out is not
// waiting for a human (a paused node, or one downstream of it) fires now.
func (r *run) releaseStuckHold() bool {
	for _, hd := range r.sched.holds {
		blocked := false
		for t := range hd.waiting {
			blocked = r.nodes.status[t] == nsPaused
			for a, up := range ancestors(r.graph, t) {
				blocked = blocked || (up && r.nodes.status[a] == nsPaused)
			}
			if blocked {
				break
			}
		}
		if blocked {
			continue
		}
		for t := range hd.waiting {
			hd.unfinished = append(hd.unfinished, r.chain.Nodes[t].ID)
		}
		slices.Sort(hd.unfinished)
		hd.waiting = nil
		r.fireHeld(hd)
		return true
	}
	return false
}

// replayedHeldFired: an "edges" entry fired edge ei of src; it no longer waits.
func (r *run) replayedHeldFired(src, ei int) {
	for k, hd := range r.replay.held {
		if hd.src == src && hd.edge == ei {
			r.replay.held = append(r.replay.held[:k], r.replay.held[k+1:]...)
			return
		}
	}
}

// resumeHeld: after a replay (and the restart of failed nodes), each held
// default not yet fired waits for the part of its fan-out that has not
// finished, or fires now when all of it has.
func (r *run) resumeHeld() {
	held := r.replay.held
	r.replay.held = nil
	for _, hd := range held {
		var open []int
		for _, t := range hd.targets {
			switch r.nodes.status[t] {
			case nsDone, nsSkip, nsError:
			default:
				open = append(open, t)
			}
		}
		r.wait(hd, open)
	}
}
