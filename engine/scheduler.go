package engine

import (
	"slices"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// scheduler decides what starts when: the ready queue, the concurrency
// limit, the chain timeout's checks, the sequential dispatches of routing
// "all" and the held defaults. Only the coordinator goroutine changes it.
// Workers read maxConc (a fan-out's width) and use done and quit (report):
// each is set before the first worker that reads it starts and never
// changes after.
type scheduler struct {
	maxConc  int
	timeout  time.Duration    // the chain's wall-clock limit
	endBy    time.Time        // the run's start + timeout
	launches int              // nodes started: every 32nd checks the timeout
	deadline <-chan time.Time // the timeout's timer, armed when the coordinator first waits
	queue    readyQueue
	running  int
	done     chan completion // workers' reports; made on first use (chains of inline tools never need it)
	quit     chan struct{}   // closed when the coordinator stops reading done
	dispatch dispatchState
	holds    []*heldDefault // the held defaults not yet fired, oldest first
}

func newScheduler(maxConc int, started time.Time, timeout time.Duration) scheduler {
	return scheduler{maxConc: maxConc, timeout: timeout, endBy: started.Add(timeout), quit: make(chan struct{})}
}

// canLaunch: a node is due and the concurrency limit leaves room for it.
func (s *scheduler) canLaunch() bool { return s.queue.hasReady() && s.running < s.maxConc }

// overdue counts a launch; every 32nd reports whether the chain timeout has
// passed (a stretch of inline nodes never lets the coordinator wait on the
// deadline's timer).
func (s *scheduler) overdue() bool {
	s.launches++
	return s.launches%32 == 0 && time.Until(s.endBy) < 0
}

// armDeadline starts the chain timeout's timer; the caller stops it.
func (s *scheduler) armDeadline() *time.Timer {
	t := time.NewTimer(time.Until(s.endBy))
	s.deadline = t.C
	return t
}

// openReports makes the channel workers report on, once.
func (s *scheduler) openReports(nodes int) {
	if s.done == nil {
		s.done = make(chan completion, min(nodes, 32)+1)
	}
}

// stopGrace is how long a stopping run waits for its running nodes to
// return before abandoning them (a tool that ignores cancellation must not
// hold the run): min(1s, the chain timeout), at least 20ms.
func (s *scheduler) stopGrace() time.Duration {
	return max(20*time.Millisecond, min(time.Second, s.timeout))
}

// report hands a worker's completion to the coordinator, unless the
// coordinator has stopped listening.
func (s *scheduler) report(c completion) {
	select {
	case s.done <- c:
	case <-s.quit:
	}
}

// hold keeps hd until its fan-out finishes.
func (s *scheduler) hold(hd *heldDefault) { s.holds = append(s.holds, hd) }

// unhold forgets hd (it fired).
func (s *scheduler) unhold(hd *heldDefault) {
	if k := slices.Index(s.holds, hd); k >= 0 {
		s.holds = slices.Delete(s.holds, k, k+1)
	}
}

// readyQueue holds the nodes due to start, in order, and the skips decided
// but not yet finished.
type readyQueue struct {
	ready []int
	head  int // ready[head:] are waiting to start
	skips []int
}

func (q *readyQueue) push(i int)     { q.ready = append(q.ready, i) }
func (q *readyQueue) hasReady() bool { return q.head < len(q.ready) }

// pop returns the next node due to start; the array is reused once empty.
func (q *readyQueue) pop() int {
	i := q.ready[q.head]
	q.head++
	if q.head == len(q.ready) {
		q.ready, q.head = q.ready[:0], 0
	}
	return i
}

// dispatchState: the sequential dispatches of routing "all" nodes.
type dispatchState struct {
	byTarget map[int]*dispatcher // the target whose link runs now → its dispatcher
	pending  []*dispatcher       // started by apply, stepped once the node is applied
}

// The coordinator's steps that feed the ready queue read and change the
// nodes' state too, so they are the run's methods; they live here, beside
// the scheduler they drive.

// launchReady starts ready nodes up to the concurrency limit.
func (r *run) launchReady() {
	for r.sched.canLaunch() && !r.outcome.stopping {
		r.drainSkips()         // skips decided by the last node come before the next start: events follow cause
		if r.sched.overdue() { // a long stretch of inline nodes
			r.timedOut()
			return
		}
		if r.ctx.Err() != nil { // a budget ran out (inline nodes never let the loop wait and see it)
			r.stopFromContext()
			return
		}
		if i := r.sched.queue.pop(); r.nodes.status[i] == nsReady {
			r.start(i)
		}
	}
}

// activate marks a node as due to run once its data dependencies finished.
func (r *run) activate(i int) {
	if r.nodes.depsLeft[i] > 0 {
		r.nodes.status[i] = nsWaitDeps
		return
	}
	r.nodes.status[i] = nsReady
	r.sched.queue.push(i)
}

// deliverFired / deliverPruned pass one edge decision to its target.
func (r *run) deliverFired(ei int) {
	if r.rerun.single() { // a node run alone: nothing downstream runs, its own loop included
		return
	}
	e := &r.chain.Edges[ei]
	t := r.graph.Idx[e.Target]
	s := r.graph.Idx[e.Source]
	if e.IsLoop() {
		r.loopCount[ei]++
		switch r.nodes.status[t] {
		case nsReady, nsRunning, nsWaitDeps, nsPaused:
			r.nodes.loopFrom[t] = s // runs again when the current pass ends
		default:
			r.nodes.activators[t] = append(r.nodes.activators[t][:0], s)
			r.activate(t)
		}
		return
	}
	r.nodes.decided[t]++
	r.nodes.fired[t]++
	r.nodes.activators[t] = append(r.nodes.activators[t], s)
	r.checkJoin(t)
}

func (r *run) deliverPruned(ei int, reason string) {
	if r.rerun.single() {
		return
	}
	e := &r.chain.Edges[ei]
	if e.IsLoop() {
		return
	}
	t := r.graph.Idx[e.Target]
	r.nodes.decided[t]++
	if reason != "" {
		r.nodes.pruneReason[t] = reason
	}
	r.checkJoin(t)
}

// checkJoin runs or skips a node once every non-loop incoming edge is decided.
func (r *run) checkJoin(t int) {
	switch r.nodes.status[t] {
	case nsReady, nsRunning, nsWaitDeps, nsPaused:
		return
	}
	if int(r.nodes.decided[t]) < len(r.graph.In[t]) {
		return
	}
	if r.nodes.fired[t] > 0 {
		r.activate(t)
		return
	}
	r.nodes.decided[t] = 0
	r.nodes.status[t] = nsSkip // claimed; finished by drainSkips
	r.sched.queue.skips = append(r.sched.queue.skips, t)
}

// drainSkips finishes queued skips iteratively (a pruned branch can cascade
// through thousands of nodes).
func (r *run) drainSkips() {
	for len(r.sched.queue.skips) > 0 {
		t := r.sched.queue.skips[0]
		r.sched.queue.skips = r.sched.queue.skips[1:]
		reason := r.nodes.pruneReason[t]
		if reason == "" {
			reason = ReasonConditionFalse
		}
		r.skipNode(t, reason)
	}
}

// notifyDependants tells node i's data dependants it finished: one that was
// waiting only for it is ready now.
func (r *run) notifyDependants(i int) {
	if r.nodes.depsDone[i] {
		return
	}
	r.nodes.depsDone[i] = true
	for _, d := range r.order.Dependants[i] {
		r.nodes.depsLeft[d]--
		if r.nodes.depsLeft[d] == 0 && r.nodes.status[d] == nsWaitDeps {
			r.nodes.status[d] = nsReady
			r.sched.queue.push(d)
		}
	}
}

// resolveDead settles nodes that can no longer be activated once the run is
// quiet: error handlers nobody needed and opted-out nodes are skipped, so
// joins waiting on them can go on. It reports whether anything changed.
func (r *run) resolveDead() bool {
	if r.rerun.single() { // the other nodes are not part of this run
		return false
	}
	changed := false
	for i := range r.chain.Nodes {
		if r.nodes.status[i] != nsIdle || r.nodes.decided[i] != 0 || r.nodes.iterations[i] > 0 {
			continue
		}
		isHandler := false
		for _, a := range r.graph.Owners[i] {
			if a.Rel == chain.RelHandler {
				isHandler = true
			}
		}
		optedOut := !r.chain.Nodes[i].IsReachableRequired() && len(r.graph.In[i]) == 0 && !r.graph.Attached(i)
		if (isHandler && len(r.graph.Out[i]) > 0) || optedOut {
			r.skipNode(i, ReasonNotNeeded)
			changed = true
		}
	}
	r.drainSkips()
	return changed || r.sched.queue.hasReady()
}
