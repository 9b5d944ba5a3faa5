package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/chainstudio/studio/engine/expr"
)

type nodeStatus uint8

const (
	nsIdle     nodeStatus = iota // waiting for its incoming edges
	nsWaitDeps                   // activated, waiting for input_map dependencies
	nsReady                      // queued to start
	nsRunning
	nsPaused
	nsDone
	nsError // failed, handled (continue / handler) or fatal
	nsSkip
)

// completion is a worker's report to the coordinator.
type completion struct {
	i        int
	out      any
	err      error
	attempts int
	input    any
	started  time.Time
	ended    time.Time
	matched  string
	partial  bool // a map or parallel node succeeded with handled item/branch failures
	guard    bool // the node never ran: the guard of the edge into it failed
	reused   bool // a re-run kept the output from the earlier run

	decided []Decision // a router's own tests (branch condition, cases)
}

// run is one execution of a prepared chain. Every field but the emit group
// and the attached nodes' atomics (nodes.attRan, nodes.attBusy) is owned by
// the coordinator goroutine (loop); workers only send completions and emit
// events.
type run struct {
	engine   *Engine
	prepared *Prepared
	graph    *graph
	chain    *Chain
	id       string
	depth    int // sub-chain nesting

	ctx      context.Context
	cancel   context.CancelCauseFunc
	started  time.Time
	maxConc  int
	strict   bool          // strict_conditions: a condition on a missing value is an error
	timeout  time.Duration // the chain's wall-clock limit
	launches int           // nodes started: every 32nd checks the timeout
	deadline <-chan time.Time

	events emitter // numbers the events and hands them to the sinks

	// What expressions read.
	input       map[string]any
	state       map[string]any // replaced on write, never mutated: workers may hold the old one
	statePatch  map[string]any // a re-run's modified_state: reused nodes do not overwrite it
	nodeResults map[string]any

	nodes       nodeState // per node
	loopCount   []int     // per edge: times a loop edge fired
	queue       readyQueue
	running     int
	done        chan completion
	quit        chan struct{} // closed when the coordinator stops reading done
	dispatch    dispatchState
	holds       []*heldDefault // the held defaults not yet fired, oldest first
	replay      replayState
	reuse       map[string]*NodeRecord // a re-run: the kept records of the nodes upstream of its start
	only        int                    // a node run alone (RunNode): its index + 1; 0 for a whole run
	mocks       map[string]any         // RunOptions.Mocks: read-only, shared with workers
	mockErrs    map[string]string      // RunOptions.MockErrors: read-only
	scratch     scratch                // reused by routing and traced conditions
	checkpoints checkpointBatcher

	outcome  runOutcome
	pending  []Pending // interrupts waiting for a resume value
	box      *mailbox  // answers that came while the run executes
	nodesRun int
	budget   runBudget
}

// nodeState is the run's per-node state, one array per field indexed by
// node (the coordinator's loops touch one field of many nodes; a few shared
// backing arrays keep a small run's allocations few).
type nodeState struct {
	status      []nodeStatus
	result      []NodeResult
	hasOutput   []bool  // the node has an output expressions can read as <id>.output
	decided     []int32 // incoming non-loop edges decided this pass
	fired       []int32 // of those, the ones that fired
	activators  [][]int // the sources whose edges activated the node this pass
	loopFrom    []int   // a loop edge's source waiting for the current pass to end; noNode if none
	pruneReason []string
	presetErr   []error // routing "all": a guard failed, the node fails without running
	depsLeft    []int32 // input_map dependencies not finished yet
	depsDone    []bool  // the node's dependants were told it finished
	iterations  []int
	stopped     []bool                     // ended with an error because the run stopped; resumable
	fatal       []bool                     // its failure stopped the run; a resume runs it again
	attRan      []atomic.Bool              // attached nodes (map bodies, branches) that ran at least once; set by workers
	attBusy     []atomic.Int32             // attached nodes' calls in flight; set by workers
	resumeValue map[int]any                // an interrupt's resume value, for its next start
	answers     map[int]*ResumeRecord      // the answer an interrupt node resumes with (its action)
	slotAnswers map[int]map[string]answer  // answers to pauses inside a node (items, branches, sub-chains), for its next start
	slots       map[int]map[int]SlotOutput // a paused node's finished items or branches
	deferred    []*ResumeRecord            // answers to a node that was running when they came
	handlerErr  map[int]map[string]any     // an on_error handler's `error`, for its next start
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

// replayState is what a rebuild from the checkpoint log needs on top of the
// live state.
type replayState struct {
	on       bool                // replaying: no events, no checkpoints
	held     []*heldDefault      // held defaults found replaying, not yet fired
	dispatch map[int]*dispatcher // sequential dispatches found replaying, by source
	edgeIdx  map[string]int      // edge id → index, built on first use
}

// runOutcome is how the run is ending.
type runOutcome struct {
	stopping bool
	status   RunStatus // set when stopping: failed, cancelled, timed_out
	err      *RunError
	typed    error // err as a typed error, for Result.Err
	infra    error // a checkpoint write failed: returned to the host
	handled  bool  // a failure was handled: the run ends partial
	invalid  bool  // refused by validation: no node ran, no events
}

func newRun(ctx context.Context, e *Engine, p *Prepared, id string, input map[string]any, extra EventSink) *run {
	c := p.chain
	n := len(c.Nodes)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	timeout = min(timeout, e.opts.Limits.MaxChainTimeout) // a lower ceiling bounds the default too
	// The chain timeout is a deadline the coordinator watches (a timer only
	// while it waits for workers), not a context timer per run: most small
	// runs never wait.
	if e.opts.ExprBudget != (expr.Budget{}) {
		ctx = expr.WithBudget(ctx, e.opts.ExprBudget)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	maxConc := c.MaxConcurrency
	if maxConc <= 0 {
		maxConc = e.opts.MaxConcurrency
	}
	sink := e.opts.Sink
	if extra != nil {
		sink = MultiSink{e.opts.Sink, extra}
	}
	r := &run{
		engine: e, prepared: p, graph: p.g, chain: c, id: id,
		ctx: rctx, cancel: cancel,
		started: stamp(), maxConc: maxConc, strict: c.StrictConditions, events: emitter{sink: sink},
		input: input, state: map[string]any{}, nodeResults: make(map[string]any, n),
		loopCount: make([]int, len(c.Edges)),
		quit:      make(chan struct{}),
		timeout:   time.Duration(timeout * float64(time.Second)),
	}
	r.budget.outSize = make([]int64, n)
	ns := &r.nodes
	ns.result, ns.status, ns.activators = make([]NodeResult, n), make([]nodeStatus, n), make([][]int, n)
	ns.pruneReason, ns.presetErr = make([]string, n), make([]error, n)
	ns.attRan, ns.attBusy = make([]atomic.Bool, n), make([]atomic.Int32, n)
	// Per-node counters share a few backing arrays: a small run pays a handful
	// of allocations, not one per field.
	i32 := make([]int32, 3*n)
	ns.decided, ns.fired, ns.depsLeft = i32[:n:n], i32[n:2*n:2*n], i32[2*n:]
	ints := make([]int, 2*n)
	ns.loopFrom, ns.iterations = ints[:n:n], ints[n:]
	acts := make([]int, n) // room for one activator each: the common case allocates nothing
	for i := range ns.activators {
		ns.activators[i] = acts[i : i : i+1]
	}
	r.checkpoints = newCheckpointBatcher(rctx, e.opts.Checkpointer, id, n)
	bools := make([]bool, 4*n)
	ns.hasOutput, ns.depsDone, ns.stopped, ns.fatal = bools[:n:n], bools[n:2*n:2*n], bools[2*n:3*n:3*n], bools[3*n:]
	for i := range c.Nodes {
		ns.result[i].NodeID = c.Nodes[i].ID
		ns.loopFrom[i] = noNode
		ns.depsLeft[i] = int32(len(r.graph.dataDeps[i]))
	}
	if e.opts.OnRun != nil {
		e.opts.OnRun(id, c)
	}
	return r
}

type errChainTimeout struct{ seconds float64 }

func (e errChainTimeout) Error() string {
	return fmt.Sprintf("chain timed out after %gs", e.seconds)
}

// lookupBase resolves run-level names for expressions evaluated on the
// coordinator.
func (r *run) lookupBase(name string) (any, bool) {
	switch name {
	case "input", "trigger": // agent chains call the run's original payload `trigger`
		return r.input, true
	case "state":
		return r.state, true
	case "node_results":
		return r.nodeResults, true
	}
	if i, ok := r.graph.idx[name]; ok {
		if r.nodes.hasOutput[i] { // built on demand: few expressions read <id>.output, every node has one
			return map[string]any{"output": r.nodeResults[name]}, true
		}
	}
	return nil, false
}

func (r *run) rootNames() []string {
	names := []string{"input", "state", "node_results"}
	for i, ok := range r.nodes.hasOutput {
		if ok {
			names = append(names, r.chain.Nodes[i].ID)
		}
	}
	return names
}

// emit stamps ev as the run's and emits it (a replay emits nothing).
func (r *run) emit(ev Event) {
	if r.replay.on {
		return
	}
	ev.RunID = r.id
	if ev.Time.IsZero() {
		ev.Time = stamp()
	}
	r.events.emit(ev)
}

// addCheckpoint collects a log entry for the batcher (replay writes none).
func (r *run) addCheckpoint(cp Checkpoint) {
	if r.replay.on {
		return
	}
	cp.RunID = r.id
	cp.Time = stamp()
	cp.EventSeq = r.events.last()
	r.checkpointFailed(r.checkpoints.add(cp))
}

// checkpointFailed fails the run on the first checkpoint write error: a run
// that cannot record its progress must not go on.
func (r *run) checkpointFailed(err error) {
	if err != nil && r.outcome.infra == nil {
		r.outcome.infra = fmt.Errorf("engine: checkpoint run %s: %w", r.id, err)
		r.fail(&RunError{Code: CodeCheckpoint, Message: "checkpoint failed: " + err.Error()}, &ChainCheckpointError{RunID: r.id, Msg: err.Error()})
	}
}

// fail stops the run with an error; the first failure wins.
func (r *run) fail(re *RunError, typed error) {
	if r.outcome.err != nil {
		return
	}
	r.outcome.err, r.outcome.typed = re, typed
	r.outcome.status = StatusFailed
	r.outcome.stopping = true
	r.cancel(errRunStopped)
}

var errRunStopped = errors.New("the run stopped")

// seedRoots activates every root (and replays reused outputs for re-runs).
func (r *run) seedRoots() {
	if r.single() {
		return // its one node is queued by RunNode, or by a resume
	}
	for _, i := range r.prepared.plan.roots {
		r.activate(i)
	}
}

// stopGrace is how long a stopping run waits for its running nodes to
// return before abandoning them (a tool that ignores cancellation must not
// hold the run): min(1s, the chain timeout), at least 20ms.
func (r *run) stopGrace() time.Duration {
	return max(20*time.Millisecond, min(time.Second, r.timeout))
}

// loop is the coordinator: it starts ready nodes, applies completions and
// stops when nothing runs and nothing can start. It never polls.
func (r *run) loop() {
	defer close(r.quit)
	ctxDone := r.ctx.Done()
	var grace <-chan time.Time
	r.openBox() // answers to its pauses may come while it runs
	mail := r.box.wake
	for {
		r.drainSkips()
		if !r.outcome.stopping {
			r.launchReady()
		}
		if r.running == 0 {
			r.drainSkips()
			if !r.outcome.stopping && r.queue.hasReady() {
				continue
			}
			if !r.outcome.stopping && r.releaseStuckHold() {
				continue
			}
			if !r.outcome.stopping && r.resolveDead() {
				continue
			}
			if r.takeMail(true) && !r.outcome.stopping {
				continue
			}
			break
		}
		r.checkpoints.coalesce(r.outcome.stopping)
		if r.deadline == nil {
			t := time.NewTimer(time.Until(r.started.Add(r.timeout)))
			defer t.Stop()
			r.deadline = t.C
		}
		if r.outcome.stopping && grace == nil {
			t := time.NewTimer(r.stopGrace())
			defer t.Stop()
			grace = t.C
		}
		select {
		case c := <-r.done:
			r.complete(c)
		case w := <-r.checkpoints.done:
			r.checkpointFailed(r.checkpoints.written(w))
		case <-r.checkpoints.delayC:
			r.checkpoints.delayed()
		case <-ctxDone:
			ctxDone = nil
			r.stopFromContext()
		case <-r.deadline:
			r.timedOut()
		case <-grace:
			r.abandonRunning()
		case <-mail:
			if !r.outcome.stopping {
				r.takeMail(false)
			}
		}
	}
	r.checkpointFailed(r.checkpoints.sync())
}

// abandonRunning gives up on nodes still running after the stop grace: they
// end with an error now (and run again on resume); whatever they report
// later is dropped.
func (r *run) abandonRunning() {
	for i := range r.chain.Nodes {
		if r.nodes.status[i] == nsRunning {
			r.stoppedNode(i, completion{i: i, attempts: r.nodes.result[i].Attempts})
		}
	}
	for i := range r.chain.Nodes { // map bodies and branches stuck inside them
		if r.nodes.attBusy[i].Load() > 0 {
			r.emit(Event{NodeID: r.chain.Nodes[i].ID, Phase: PhaseError, Error: "stopped: " + r.outcome.err.Message, Reason: ReasonUpstreamStopped})
		}
	}
	r.running = 0
}

// report hands a worker's completion to the coordinator, unless the
// coordinator has stopped listening.
func (r *run) report(c completion) {
	select {
	case r.done <- c:
	case <-r.quit:
	}
}

// timedOut ends the run at the chain timeout: running nodes are cancelled
// with the timeout as the cause.
func (r *run) timedOut() {
	if r.outcome.stopping {
		return
	}
	r.cancel(errChainTimeout{r.timeout.Seconds()})
	r.stopFromContext()
}

// stopFromContext handles the chain timeout and caller cancellation.
func (r *run) stopFromContext() {
	if r.outcome.stopping {
		return
	}
	cause := context.Cause(r.ctx)
	var to errChainTimeout
	var be *BudgetError
	switch {
	case errors.As(cause, &be):
		r.fail(&RunError{Code: CodeBudget, Message: be.Error(), Details: map[string]any{"budget": be.Budget, "limit": be.Limit}}, be)
	case errors.As(cause, &to):
		r.fail(&RunError{Code: CodeTimeout, Message: to.Error()}, cause)
		r.outcome.status = StatusTimedOut
	default:
		r.fail(&RunError{Code: CodeCancelled, Message: "run cancelled: " + cause.Error()}, cause)
		r.outcome.status = StatusCancelled
	}
}

func (r *run) launchReady() {
	for r.queue.hasReady() && r.running < r.maxConc && !r.outcome.stopping {
		r.drainSkips()                                                             // skips decided by the last node come before the next start: events follow cause
		if r.launches++; r.launches%32 == 0 && time.Since(r.started) > r.timeout { // a long stretch of inline nodes
			r.timedOut()
			return
		}
		if r.ctx.Err() != nil { // a budget ran out (inline nodes never let the loop wait and see it)
			r.stopFromContext()
			return
		}
		if i := r.queue.pop(); r.nodes.status[i] == nsReady {
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
	r.queue.push(i)
}

// deliverFired / deliverPruned pass one edge decision to its target.
func (r *run) deliverFired(ei int) {
	if r.single() { // a node run alone: nothing downstream runs, its own loop included
		return
	}
	e := &r.chain.Edges[ei]
	t := r.graph.idx[e.Target]
	s := r.graph.idx[e.Source]
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
	if r.single() {
		return
	}
	e := &r.chain.Edges[ei]
	if e.IsLoop() {
		return
	}
	t := r.graph.idx[e.Target]
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
	if int(r.nodes.decided[t]) < len(r.graph.in[t]) {
		return
	}
	if r.nodes.fired[t] > 0 {
		r.activate(t)
		return
	}
	r.nodes.decided[t] = 0
	r.nodes.status[t] = nsSkip // claimed; finished by drainSkips
	r.queue.skips = append(r.queue.skips, t)
}

// drainSkips finishes queued skips iteratively (a pruned branch can cascade
// through thousands of nodes).
func (r *run) drainSkips() {
	for len(r.queue.skips) > 0 {
		t := r.queue.skips[0]
		r.queue.skips = r.queue.skips[1:]
		reason := r.nodes.pruneReason[t]
		if reason == "" {
			reason = ReasonConditionFalse
		}
		r.skipNode(t, reason)
	}
}

func (r *run) notifyDependants(i int) {
	if r.nodes.depsDone[i] {
		return
	}
	r.nodes.depsDone[i] = true
	for _, d := range r.prepared.plan.dependants[i] {
		r.nodes.depsLeft[d]--
		if r.nodes.depsLeft[d] == 0 && r.nodes.status[d] == nsWaitDeps {
			r.nodes.status[d] = nsReady
			r.queue.push(d)
		}
	}
}

// resolveDead settles nodes that can no longer be activated once the run is
// quiet: error handlers nobody needed and opted-out nodes are skipped, so
// joins waiting on them can go on. It reports whether anything changed.
func (r *run) resolveDead() bool {
	if r.single() { // the other nodes are not part of this run
		return false
	}
	changed := false
	for i := range r.chain.Nodes {
		if r.nodes.status[i] != nsIdle || r.nodes.decided[i] != 0 || r.nodes.iterations[i] > 0 {
			continue
		}
		isHandler := false
		for _, a := range r.graph.owners[i] {
			if a.rel == RelHandler {
				isHandler = true
			}
		}
		optedOut := !r.chain.Nodes[i].IsReachableRequired() && len(r.graph.in[i]) == 0 && !r.graph.attached(i)
		if (isHandler && len(r.graph.out[i]) > 0) || optedOut {
			r.skipNode(i, ReasonNotNeeded)
			changed = true
		}
	}
	r.drainSkips()
	return changed || r.queue.hasReady()
}

// setOutput records a node's output where expressions can read it.
func (r *run) setOutput(i int, out any, ok bool) {
	id := r.chain.Nodes[i].ID
	if !ok {
		delete(r.nodeResults, id)
		r.nodes.hasOutput[i] = true
		r.chargeOutput(-r.budget.outSize[i], 0)
		r.budget.outSize[i] = 0
		return
	}
	r.nodeResults[id] = out
	r.nodes.hasOutput[i] = true
	// Held: this output replaces the node's last one. Stored: it goes into
	// a done event and a checkpoint (a replay wrote neither).
	lim := r.engine.opts.Limits.MaxOutputBytes
	size := valueSize(out, lim)
	stored := 2 * size
	if r.replay.on {
		stored = 0
	}
	r.chargeOutput(size-r.budget.outSize[i], stored)
	r.budget.outSize[i] = size
}

func (r *run) edgeIDs(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	if len(idx) == 1 { // shared, read-only
		return r.prepared.plan.edgeID1[idx[0]]
	}
	out := make([]string, len(idx))
	for k, ei := range idx {
		out[k] = r.chain.Edges[ei].ID
	}
	return out
}

// nodeInput is the data a node receives when it sets neither input nor
// input_map: the output of the node whose edge activated it (an object keyed
// by source id when several did), or the run's input for a root.
func (r *run) upstream(i int) any {
	acts := r.nodes.activators[i]
	switch len(acts) {
	case 0:
		return r.input
	case 1:
		return r.nodeResults[r.chain.Nodes[acts[0]].ID]
	}
	m := make(map[string]any, len(acts))
	for _, s := range acts {
		m[r.chain.Nodes[s].ID] = r.nodeResults[r.chain.Nodes[s].ID]
	}
	return m
}

// finishRun computes the result and writes the closing checkpoint.
func (r *run) finishRun() (res *Result, err error) {
	defer func() { r.closeBox(res, err) }()
	r.drainSkips()
	status := StatusCompleted
	switch {
	case r.outcome.err != nil:
		status = r.outcome.status
	case len(r.pending) > 0:
		status = StatusPaused
	case r.outcome.handled:
		status = StatusPartial
	}
	var unfinished []UnfinishedNode
	if status != StatusPaused && !r.outcome.invalid {
		// Whatever never ran now never will: say so, so every node ends done, error or skip.
		for i := range r.chain.Nodes {
			if r.single() && i != r.only-1 {
				continue
			}
			switch r.nodes.status[i] {
			case nsIdle, nsWaitDeps, nsReady:
				now := stamp()
				if r.nodes.stopped[i] {
					// ended with an error when the run stopped
					u := UnfinishedNode{NodeID: r.chain.Nodes[i].ID, Status: PhaseError, Reason: ReasonUpstreamStopped,
						Error: r.nodes.result[i].Error, Attempts: r.nodes.result[i].Attempts, Iteration: r.nodes.iterations[i]}
					u.applyTo(&r.nodes.result[i], now)
					unfinished = append(unfinished, u)
					continue
				}
				inner := r.graph.attached(i) && !isHandlerOnly(r.graph, i)
				if inner && r.nodes.attRan[i].Load() {
					continue // map bodies and branches report per call
				}
				r.nodes.status[i] = nsSkip
				u := UnfinishedNode{NodeID: r.chain.Nodes[i].ID, Status: PhaseSkip, Reason: ReasonUpstreamStopped}
				if r.graph.attached(i) && r.outcome.err == nil {
					u.Reason = ReasonNotNeeded
				}
				u.applyTo(&r.nodes.result[i], now)
				r.emit(Event{NodeID: r.chain.Nodes[i].ID, Phase: PhaseSkip, Reason: u.Reason, Time: now})
				unfinished = append(unfinished, u)
			}
		}
	}
	// The run's last event is out: whatever an abandoned worker emits from now
	// on is dropped, so the sinks flushed below hold the whole run.
	r.events.close()
	res = r.result(status)
	end := &EndRecord{Status: status, Error: r.outcome.err, Final: res.FinalOutput, NodesRun: r.nodesRun, Unfinished: unfinished}
	r.addCheckpoint(Checkpoint{Kind: CheckpointEnd, End: end})
	r.checkpointFailed(r.checkpoints.sync())
	r.events.flush(r.ctx)
	r.cancel(nil)
	if r.outcome.infra != nil && res.Error == nil {
		res.Error = &RunError{Code: CodeCheckpoint, Message: r.outcome.infra.Error()}
	}
	return res, r.outcome.infra
}

func isHandlerOnly(g *graph, i int) bool {
	for _, a := range g.owners[i] {
		if a.rel != RelHandler {
			return false
		}
	}
	return true
}

// completedAs returns the node whose output is node i's: i when it
// completed, else its error handler when that completed in its place (A2E:
// the handler is then the node that ended that path), else -1.
func (r *run) completedAs(i int) int {
	if r.nodes.status[i] == nsDone {
		return i
	}
	if h, ok := r.prepared.g.idx[r.chain.Nodes[i].ErrorHandler()]; ok && r.nodes.status[h] == nsDone {
		return h
	}
	return -1
}

func (r *run) result(status RunStatus) *Result {
	now := stamp()
	res := &Result{
		RunID: r.id, Status: status, Outputs: make(map[string]any, len(r.nodeResults)),
		Error: r.outcome.err, err: r.outcome.typed, NodesRun: r.nodesRun, State: r.state,
		Pending: r.pending, Started: r.started, Ended: now,
		DurationMS: now.Sub(r.started).Milliseconds(),
		Nodes:      make(map[string]*NodeResult, len(r.nodes.result)),
	}
	for i := range r.nodes.result {
		if r.nodes.status[i] == nsDone {
			res.Outputs[r.chain.Nodes[i].ID] = r.nodeResults[r.chain.Nodes[i].ID]
		}
		if r.nodes.result[i].Status != "" {
			res.Nodes[r.nodes.result[i].NodeID] = &r.nodes.result[i] // the run is over: r.nodes.result no longer changes
		}
	}
	// final_output: the last terminal node that completed, in topological
	// order (an error handler nothing depends on is one, after its owner).
	bestRank := -1
	var terminals []int
	if r.prepared.plan != nil {
		terminals = r.prepared.plan.terminals
	}
	bestOut := -1 // the node whose output stands for the best terminal: itself, or its error handler
	for k, i := range terminals {
		out := r.completedAs(i)
		if rank := r.prepared.plan.termRank[k]; out >= 0 && rank > bestRank {
			bestRank, bestOut = rank, out
		}
	}
	if r.single() { // a node run alone: its output, whatever comes after it
		bestOut = -1
		if i := r.only - 1; r.nodes.status[i] == nsDone {
			bestOut = i
		}
	}
	if bestOut >= 0 {
		res.FinalOutput = r.nodeResults[r.chain.Nodes[bestOut].ID]
	}
	return res
}
