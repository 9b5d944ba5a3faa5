package engine

// Under routing "all" with parallel dispatch, a default edge that fires
// (no guarded edge matched) is held until the targets of the edges that fired
// with it have finished: seed 004 runs the default "as its own step after the
// fan-out". The node's record names the held edge (Deferred); an "edges"
// entry records its firing, so a resume knows whether it still waits.

// heldDefault is one default edge waiting for the fan-out of its source.
type heldDefault struct {
	src, edge int
	targets   []int        // the fan-out: targets of the edges that fired with it
	waiting   map[int]bool // those not finished yet
}

// holdDefault holds default edge ei of node src until targets finish.
func (r *run) holdDefault(src, ei int, rt routing) {
	hd := &heldDefault{src: src, edge: ei}
	for _, e := range rt.fired {
		hd.targets = append(hd.targets, r.g.idx[r.c.Edges[e].Target])
	}
	for e := range rt.failed {
		hd.targets = append(hd.targets, r.g.idx[r.c.Edges[e].Target])
	}
	if r.replaying {
		r.replayHeld = append(r.replayHeld, hd)
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
	if r.heldBy == nil {
		r.heldBy = map[int][]*heldDefault{}
	}
	for t := range hd.waiting {
		r.heldBy[t] = append(r.heldBy[t], hd)
	}
}

// releaseHeld: node t finished; a held default whose fan-out has all
// finished fires.
func (r *run) releaseHeld(t int) {
	hds := r.heldBy[t]
	if len(hds) == 0 {
		return
	}
	delete(r.heldBy, t)
	for _, hd := range hds {
		delete(hd.waiting, t)
		if len(hd.waiting) == 0 {
			r.fireHeld(hd)
		}
	}
}

// fireHeld fires a held default edge now, unless the run is stopping (a
// resume decides it again from the log).
func (r *run) fireHeld(hd *heldDefault) {
	if r.stopping {
		return
	}
	src := r.c.Nodes[hd.src].ID
	id := r.c.Edges[hd.edge].ID
	r.addCheckpoint(Checkpoint{Kind: CheckpointEdges, Edges: &EdgesRecord{Source: src, Fired: []string{id}}})
	// The source's done event could not name this edge: say so now.
	r.emit(Event{NodeID: src, Phase: PhaseProgress, Edges: []string{id}, Progress: map[string]any{"dispatched": r.stepKey(hd.edge)}})
	r.deliverFired(hd.edge)
}

// replayedHeldFired: an "edges" entry fired edge ei of src; it no longer waits.
func (r *run) replayedHeldFired(src, ei int) {
	for k, hd := range r.replayHeld {
		if hd.src == src && hd.edge == ei {
			r.replayHeld = append(r.replayHeld[:k], r.replayHeld[k+1:]...)
			return
		}
	}
}

// resumeHeld: after a replay (and the restart of failed nodes), each held
// default not yet fired waits for the part of its fan-out that has not
// finished, or fires now when all of it has.
func (r *run) resumeHeld() {
	held := r.replayHeld
	r.replayHeld = nil
	for _, hd := range held {
		var open []int
		for _, t := range hd.targets {
			switch r.status[t] {
			case nsDone, nsSkip, nsError:
			default:
				open = append(open, t)
			}
		}
		r.wait(hd, open)
	}
}
