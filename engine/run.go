package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
}

// run is one execution of a prepared chain. Every field below the mutex is
// owned by the coordinator goroutine (loop); workers only send completions
// and emit events.
type run struct {
	e     *Engine
	p     *Prepared
	g     *graph
	c     *Chain
	id    string
	depth int

	ctx     context.Context
	cancel  context.CancelCauseFunc
	started time.Time
	maxConc int
	strict  bool

	emitMu sync.Mutex
	seq    int64
	sink   EventSink

	input           map[string]any
	state           map[string]any // replaced on write, never mutated: workers may hold the old one
	statePatch      map[string]any // a re-run's modified_state: reused nodes do not overwrite it
	nodeResults     map[string]any
	hasOut          []bool // the node has an output expressions can read as <id>.output
	res             []NodeResult
	status          []nodeStatus
	decided         []int32
	fired           []int32
	activators      [][]int
	loopAct         []int // pending loop re-activation source, -1 if none
	pruneReason     []string
	presetErr       []error // routing "all": a guard failed, the node fails without running
	depsLeft        []int32
	depsDone        []bool // the node's dependants were told it finished
	iterations      []int
	loopCount       []int // per edge
	resumeFor       map[int]any
	handlerErr      map[int]map[string]any
	dispatchers     map[int]*dispatcher // waiting target → sequential dispatcher
	holds           []*heldDefault      // the held defaults not yet fired, oldest first
	replayHeld      []*heldDefault      // held defaults found replaying, not yet fired
	pendingDispatch []*dispatcher       // started by route, stepped once the node is recorded
	replayDispatch  map[int]*dispatcher
	replaying       bool   // rebuilding from a checkpoint log: no events, no checkpoints
	fatal           []bool // replay: nodes whose failure stopped the run
	edgeIdx         map[string]int
	reuse           map[string]*NodeRecord

	firedBuf    []int // scratch lists for routing decisions (see newRouting)
	prunedBuf   []int
	checkpoints checkpointBatcher
	ready       []int
	readyHead   int // ready[readyHead:] are waiting to start
	skipQueue   []int
	running     int
	done        chan completion
	quit        chan struct{} // closed when the coordinator stops reading done
	stopped     []bool        // ended with an error because the run stopped; resumable
	invalid     bool          // refused by validation: no node ran, no events
	timeout     time.Duration // the chain's wall-clock limit
	timeoutSecs float64
	deadlineC   <-chan time.Time // armed when the coordinator first waits
	launches    int
	attRan      []atomic.Bool  // attached nodes (map bodies, branches) that ran at least once
	attBusy     []atomic.Int32 // attached nodes' calls in flight
	closed      bool           // under emitMu: the run returned; late events are dropped

	handled  bool
	stopping bool
	runErr   *RunError
	typedErr error
	status0  RunStatus // set when stopping: failed, cancelled, timed_out
	pending  []Pending
	nodesRun int
	infraErr error
}

func newRun(ctx context.Context, e *Engine, p *Prepared, id string, input map[string]any, extra EventSink) *run {
	c := p.chain
	n := len(c.Nodes)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	// The chain timeout is a deadline the coordinator watches (a timer only
	// while it waits for workers), not a context timer per run: most small
	// runs never wait.
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
		e: e, p: p, g: p.g, c: c, id: id,
		ctx: rctx, cancel: cancel,
		started: time.Now(), maxConc: maxConc, strict: c.StrictConditions, sink: sink,
		input: input, state: map[string]any{}, nodeResults: make(map[string]any, n),
		res: make([]NodeResult, n), status: make([]nodeStatus, n), activators: make([][]int, n),
		pruneReason: make([]string, n), presetErr: make([]error, n),
		loopCount: make([]int, len(c.Edges)),
		quit:      make(chan struct{}), attRan: make([]atomic.Bool, n), attBusy: make([]atomic.Int32, n),
		timeout: time.Duration(timeout * float64(time.Second)), timeoutSecs: timeout,
	}
	// Per-node counters share a few backing arrays: a small run pays a handful
	// of allocations, not one per field.
	i32 := make([]int32, 3*n)
	r.decided, r.fired, r.depsLeft = i32[:n:n], i32[n:2*n:2*n], i32[2*n:]
	ints := make([]int, 2*n)
	r.loopAct, r.iterations = ints[:n:n], ints[n:]
	acts := make([]int, n) // room for one activator each: the common case allocates nothing
	for i := range r.activators {
		r.activators[i] = acts[i : i : i+1]
	}
	r.checkpoints = newCheckpointBatcher(rctx, e.opts.Checkpointer, id, n)
	bools := make([]bool, 4*n)
	r.hasOut, r.depsDone, r.stopped, r.fatal = bools[:n:n], bools[n:2*n:2*n], bools[2*n:3*n:3*n], bools[3*n:]
	for i := range c.Nodes {
		r.res[i].NodeID = c.Nodes[i].ID
		r.loopAct[i] = -1
		r.depsLeft[i] = int32(len(r.g.dataDeps[i]))
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
	case "input", "trigger": // seed 004 calls the run's original payload `trigger`
		return r.input, true
	case "state":
		return r.state, true
	case "node_results":
		return r.nodeResults, true
	}
	if i, ok := r.g.idx[name]; ok {
		if r.hasOut[i] { // built on demand: few expressions read <id>.output, every node has one
			return map[string]any{"output": r.nodeResults[name]}, true
		}
	}
	return nil, false
}

func (r *run) rootNames() []string {
	names := []string{"input", "state", "node_results"}
	for i, ok := range r.hasOut {
		if ok {
			names = append(names, r.c.Nodes[i].ID)
		}
	}
	return names
}

// emit assigns the next seq and hands the event to the sinks, in order.
func (r *run) emit(ev Event) {
	if r.replaying {
		return
	}
	ev.RunID = r.id
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	if r.closed { // a worker abandoned after the run stopped: its events are dropped
		return
	}
	r.seq++
	ev.Seq = r.seq
	r.sink.Emit(ev)
}

func (r *run) lastSeq() int64 {
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	return r.seq
}

// addCheckpoint collects a log entry for the batcher (replay writes none).
func (r *run) addCheckpoint(cp Checkpoint) {
	if r.replaying {
		return
	}
	cp.RunID = r.id
	cp.Time = time.Now()
	cp.EventSeq = r.lastSeq()
	r.checkpointFailed(r.checkpoints.add(cp))
}

// checkpointFailed fails the run on the first checkpoint write error: a run
// that cannot record its progress must not go on.
func (r *run) checkpointFailed(err error) {
	if err != nil && r.infraErr == nil {
		r.infraErr = fmt.Errorf("engine: checkpoint run %s: %w", r.id, err)
		r.fail(&RunError{Code: CodeCheckpoint, Message: "checkpoint failed: " + err.Error()}, &ChainCheckpointError{RunID: r.id, Msg: err.Error()})
	}
}

// fail stops the run with an error; the first failure wins.
func (r *run) fail(re *RunError, typed error) {
	if r.runErr != nil {
		return
	}
	r.runErr, r.typedErr = re, typed
	r.status0 = StatusFailed
	r.stopping = true
	r.cancel(errRunStopped)
}

var errRunStopped = errors.New("the run stopped")

// seedRoots activates every root (and replays reused outputs for re-runs).
func (r *run) seedRoots() {
	for _, i := range r.p.plan.roots {
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
	for {
		r.drainSkips()
		if !r.stopping {
			r.launchReady()
		}
		if r.running == 0 {
			r.drainSkips()
			if !r.stopping && r.hasReady() {
				continue
			}
			if !r.stopping && r.releaseStuckHold() {
				continue
			}
			if !r.stopping && r.resolveDead() {
				continue
			}
			break
		}
		r.checkpoints.coalesce(r.stopping)
		if r.deadlineC == nil {
			t := time.NewTimer(time.Until(r.started.Add(r.timeout)))
			defer t.Stop()
			r.deadlineC = t.C
		}
		if r.stopping && grace == nil {
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
		case <-r.deadlineC:
			r.timedOut()
		case <-grace:
			r.abandonRunning()
		}
	}
	r.checkpointFailed(r.checkpoints.sync())
}

// abandonRunning gives up on nodes still running after the stop grace: they
// end with an error now (and run again on resume); whatever they report
// later is dropped.
func (r *run) abandonRunning() {
	for i := range r.c.Nodes {
		if r.status[i] == nsRunning {
			r.stoppedNode(i, completion{i: i, attempts: r.res[i].Attempts})
		}
	}
	for i := range r.c.Nodes { // map bodies and branches stuck inside them
		if r.attBusy[i].Load() > 0 {
			r.emit(Event{NodeID: r.c.Nodes[i].ID, Phase: PhaseError, Error: "stopped: " + r.runErr.Message, Reason: ReasonUpstreamStopped})
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
	if r.stopping {
		return
	}
	r.cancel(errChainTimeout{r.timeoutSecs})
	r.stopFromContext()
}

// stopFromContext handles the chain timeout and caller cancellation.
func (r *run) stopFromContext() {
	if r.stopping {
		return
	}
	cause := context.Cause(r.ctx)
	var to errChainTimeout
	switch {
	case errors.As(cause, &to):
		r.fail(&RunError{Code: CodeTimeout, Message: to.Error()}, cause)
		r.status0 = StatusTimedOut
	default:
		r.fail(&RunError{Code: CodeCancelled, Message: "run cancelled: " + cause.Error()}, cause)
		r.status0 = StatusCancelled
	}
}

func (r *run) launchReady() {
	for r.hasReady() && r.running < r.maxConc && !r.stopping {
		r.drainSkips()                                                             // skips decided by the last node come before the next start: events follow cause
		if r.launches++; r.launches%32 == 0 && time.Since(r.started) > r.timeout { // a long stretch of inline nodes
			r.timedOut()
			return
		}
		i := r.ready[r.readyHead]
		r.readyHead++
		if r.status[i] != nsReady {
			continue
		}
		r.start(i)
	}
	if !r.hasReady() { // reuse the queue's array
		r.ready, r.readyHead = r.ready[:0], 0
	}
}

func (r *run) hasReady() bool { return r.readyHead < len(r.ready) }

// activate marks a node as due to run once its data dependencies finished.
func (r *run) activate(i int) {
	if r.depsLeft[i] > 0 {
		r.status[i] = nsWaitDeps
		return
	}
	r.status[i] = nsReady
	r.ready = append(r.ready, i)
}

// deliverFired / deliverPruned pass one edge decision to its target.
func (r *run) deliverFired(ei int) {
	e := &r.c.Edges[ei]
	t := r.g.idx[e.Target]
	s := r.g.idx[e.Source]
	if e.IsLoop() {
		r.loopCount[ei]++
		switch r.status[t] {
		case nsReady, nsRunning, nsWaitDeps, nsPaused:
			r.loopAct[t] = s // runs again when the current pass ends
		default:
			r.activators[t] = append(r.activators[t][:0], s)
			r.activate(t)
		}
		return
	}
	r.decided[t]++
	r.fired[t]++
	r.activators[t] = append(r.activators[t], s)
	r.checkJoin(t)
}

func (r *run) deliverPruned(ei int, reason string) {
	e := &r.c.Edges[ei]
	if e.IsLoop() {
		return
	}
	t := r.g.idx[e.Target]
	r.decided[t]++
	if reason != "" {
		r.pruneReason[t] = reason
	}
	r.checkJoin(t)
}

// checkJoin runs or skips a node once every non-loop incoming edge is decided.
func (r *run) checkJoin(t int) {
	switch r.status[t] {
	case nsReady, nsRunning, nsWaitDeps, nsPaused:
		return
	}
	if int(r.decided[t]) < len(r.g.in[t]) {
		return
	}
	if r.fired[t] > 0 {
		r.activate(t)
		return
	}
	r.decided[t] = 0
	r.status[t] = nsSkip // claimed; finished by drainSkips
	r.skipQueue = append(r.skipQueue, t)
}

// drainSkips finishes queued skips iteratively (a pruned branch can cascade
// through thousands of nodes).
func (r *run) drainSkips() {
	for len(r.skipQueue) > 0 {
		t := r.skipQueue[0]
		r.skipQueue = r.skipQueue[1:]
		reason := r.pruneReason[t]
		if reason == "" {
			reason = ReasonConditionFalse
		}
		r.skipNode(t, reason)
	}
}

func (r *run) notifyDependants(i int) {
	if r.depsDone[i] {
		return
	}
	r.depsDone[i] = true
	for _, d := range r.p.plan.dependants[i] {
		r.depsLeft[d]--
		if r.depsLeft[d] == 0 && r.status[d] == nsWaitDeps {
			r.status[d] = nsReady
			r.ready = append(r.ready, d)
		}
	}
}

// resolveDead settles nodes that can no longer be activated once the run is
// quiet: error handlers nobody needed and opted-out nodes are skipped, so
// joins waiting on them can go on. It reports whether anything changed.
func (r *run) resolveDead() bool {
	changed := false
	for i := range r.c.Nodes {
		if r.status[i] != nsIdle || r.decided[i] != 0 || r.iterations[i] > 0 {
			continue
		}
		isHandler := false
		for _, a := range r.g.owners[i] {
			if a.rel == RelHandler {
				isHandler = true
			}
		}
		optedOut := !r.c.Nodes[i].IsReachableRequired() && len(r.g.in[i]) == 0 && !r.g.attached(i)
		if (isHandler && len(r.g.out[i]) > 0) || optedOut {
			r.skipNode(i, ReasonNotNeeded)
			changed = true
		}
	}
	r.drainSkips()
	return changed || r.hasReady()
}

// setOutput records a node's output where expressions can read it.
func (r *run) setOutput(i int, out any, ok bool) {
	id := r.c.Nodes[i].ID
	if !ok {
		delete(r.nodeResults, id)
		r.hasOut[i] = true
		return
	}
	r.nodeResults[id] = out
	r.hasOut[i] = true
}

func (r *run) edgeIDs(idx []int) []string {
	if len(idx) == 0 {
		return nil
	}
	if len(idx) == 1 { // shared, read-only
		return r.p.plan.edgeID1[idx[0]]
	}
	out := make([]string, len(idx))
	for k, ei := range idx {
		out[k] = r.c.Edges[ei].ID
	}
	return out
}

// nodeInput is the data a node receives when it sets neither input nor
// input_map: the output of the node whose edge activated it (an object keyed
// by source id when several did), or the run's input for a root.
func (r *run) upstream(i int) any {
	acts := r.activators[i]
	switch len(acts) {
	case 0:
		return r.input
	case 1:
		return r.nodeResults[r.c.Nodes[acts[0]].ID]
	}
	m := make(map[string]any, len(acts))
	for _, s := range acts {
		m[r.c.Nodes[s].ID] = r.nodeResults[r.c.Nodes[s].ID]
	}
	return m
}

// finishRun computes the result and writes the closing checkpoint.
func (r *run) finishRun() (*Result, error) {
	r.drainSkips()
	status := StatusCompleted
	switch {
	case r.runErr != nil:
		status = r.status0
	case len(r.pending) > 0:
		status = StatusPaused
	case r.handled:
		status = StatusPartial
	}
	var unfinished []UnfinishedNode
	if status != StatusPaused && !r.invalid {
		// Whatever never ran now never will: say so, so every node ends done, error or skip.
		for i := range r.c.Nodes {
			switch r.status[i] {
			case nsIdle, nsWaitDeps, nsReady:
				now := time.Now()
				if r.stopped[i] {
					// ended with an error when the run stopped
					u := UnfinishedNode{NodeID: r.c.Nodes[i].ID, Status: PhaseError, Reason: ReasonUpstreamStopped,
						Error: r.res[i].Error, Attempts: r.res[i].Attempts, Iteration: r.iterations[i]}
					u.applyTo(&r.res[i], now)
					unfinished = append(unfinished, u)
					continue
				}
				inner := r.g.attached(i) && !isHandlerOnly(r.g, i)
				if inner && r.attRan[i].Load() {
					continue // map bodies and branches report per call
				}
				r.status[i] = nsSkip
				u := UnfinishedNode{NodeID: r.c.Nodes[i].ID, Status: PhaseSkip, Reason: ReasonUpstreamStopped}
				if r.g.attached(i) && r.runErr == nil {
					u.Reason = ReasonNotNeeded
				}
				u.applyTo(&r.res[i], now)
				r.emit(Event{NodeID: r.c.Nodes[i].ID, Phase: PhaseSkip, Reason: u.Reason, Time: now})
				unfinished = append(unfinished, u)
			}
		}
	}
	// The run's last event is out: whatever an abandoned worker emits from now
	// on is dropped, so the sinks flushed below hold the whole run.
	r.emitMu.Lock()
	r.closed = true
	r.emitMu.Unlock()
	res := r.result(status)
	end := &EndRecord{Status: status, Error: r.runErr, Final: res.FinalOutput, NodesRun: r.nodesRun, Unfinished: unfinished}
	r.addCheckpoint(Checkpoint{Kind: CheckpointEnd, End: end})
	r.checkpointFailed(r.checkpoints.sync())
	for _, s := range flushers(r.sink) {
		_ = s.Flush(context.WithoutCancel(r.ctx))
	}
	r.cancel(nil)
	if r.infraErr != nil && res.Error == nil {
		res.Error = &RunError{Code: CodeCheckpoint, Message: r.infraErr.Error()}
	}
	return res, r.infraErr
}

func isHandlerOnly(g *graph, i int) bool {
	for _, a := range g.owners[i] {
		if a.rel != RelHandler {
			return false
		}
	}
	return true
}

func flushers(s EventSink) []Flusher {
	if f, ok := s.(Flusher); ok {
		return []Flusher{f}
	}
	var out []Flusher
	if m, ok := s.(MultiSink); ok {
		for _, x := range m {
			out = append(out, flushers(x)...)
		}
		return out
	}
	return nil
}

func (r *run) result(status RunStatus) *Result {
	now := time.Now()
	res := &Result{
		RunID: r.id, Status: status, Outputs: make(map[string]any, len(r.nodeResults)),
		Error: r.runErr, err: r.typedErr, NodesRun: r.nodesRun, State: r.state,
		Pending: r.pending, Started: r.started, Ended: now,
		DurationMS: now.Sub(r.started).Milliseconds(),
		Nodes:      make(map[string]*NodeResult, len(r.res)),
	}
	for i := range r.res {
		if r.status[i] == nsDone {
			res.Outputs[r.c.Nodes[i].ID] = r.nodeResults[r.c.Nodes[i].ID]
		}
		if r.res[i].Status != "" {
			res.Nodes[r.res[i].NodeID] = &r.res[i] // the run is over: r.res no longer changes
		}
	}
	// final_output: the last terminal node that completed, in topological order.
	best := -1
	var terminals []int
	if r.p.plan != nil {
		terminals = r.p.plan.terminals
	}
	for _, i := range terminals {
		if r.status[i] == nsDone && (best < 0 || r.p.plan.topoPos[i] > r.p.plan.topoPos[best]) {
			best = i
		}
	}
	if best >= 0 {
		res.FinalOutput = r.nodeResults[r.c.Nodes[best].ID]
	}
	return res
}
