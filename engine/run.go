package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/chainstudio/studio/engine/chain"
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
	pinned   bool // the output is the chain's pin (RunOptions.UsePins): the node did not run
	// credentialed: the call sent a stored credential (Event.Credentialed)
	credentialed bool

	decided []Decision      // a router's own tests (branch condition, cases)
	asked   []ApprovalField // an interrupt node's config.fields, evaluated when it pauses
}

// run is one execution of a prepared chain: the coordinator. Its state is
// cut into named sub-states, each a type with its methods in one file: the
// emitter (emitter.go), the scope expressions read (runScope, scope.go), the
// scheduler (scheduler.go), the re-run plan (rerunPlan, rerun.go), the
// scratch (scratch.go), the checkpoint batcher (batcher.go) and the budget
// (budget.go). What many of them read or change stays here: the per-node
// state, the outcome, the replay flag. Every field but the emitter, the
// budget's counters and the attached nodes' atomics (nodes.attRan,
// nodes.attBusy) is owned by the coordinator goroutine (loop); workers only
// send completions, emit events, charge the budget and read what was set
// before they started.
// sessions numbers run executions in this process (tool.Scope.Session).
var sessions atomic.Uint64

// toolSession is tool.Scope.Session for this execution, built when a
// scoped tool runs so that runs without one pay nothing for it.
func (r *run) toolSession() string { return r.id + "#" + strconv.FormatUint(r.seq, 36) }

type run struct {
	engine *Engine
	plan   *chain.Plan
	order  *chain.Order // the plan's; nil when it is not Valid
	bind   *binding     // the plan bound to the engine's registry
	graph  *chain.Graph
	chain  *chain.Chain
	id     string
	seq    uint64 // numbers this execution in the process (toolSession)
	depth  int    // sub-chain nesting

	ctx     context.Context
	cancel  context.CancelCauseFunc
	started time.Time
	strict  bool // strict_conditions: a condition on a missing value is an error

	events      emitter   // numbers the events and hands them to the sinks
	scope       runScope  // what expressions read
	sched       scheduler // what starts when
	rerun       rerunPlan // what the run takes from an earlier one instead of running it
	nodes       nodeState // per node
	loopCount   []int     // per edge: times a loop edge fired
	replay      replayState
	scratch     scratch // reused by routing and traced conditions
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
	answered    map[int]Pending            // the pause a node that paused itself was answered at (its state, its proposal)
	slotAnswers map[int]map[string]answer  // answers to pauses inside a node (items, branches, sub-chains), for its next start
	slots       map[int]map[int]SlotOutput // a paused node's finished items or branches
	deferred    []*ResumeRecord            // answers to a node that was running when they came
	handlerErr  map[int]map[string]any     // an on_error handler's `error`, for its next start
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
	status   chain.RunStatus // set when stopping: failed, cancelled, timed_out
	err      *RunError
	typed    error // err as a typed error, for Result.Err
	infra    error // a checkpoint write failed: returned to the host
	handled  bool  // a failure was handled: the run ends partial
	invalid  bool  // refused by validation: no node ran, no events
}

func newRun(ctx context.Context, e *Engine, p *chain.Plan, id string, input map[string]any, extra EventSink) *run {
	c := p.Chain()
	n := len(c.Nodes)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = chain.DefaultTimeout
	}
	timeout = min(timeout, e.opts.Limits.MaxChainTimeout) // a lower ceiling bounds the default too
	// The chain timeout is a deadline the coordinator watches (a timer only
	// while it waits for workers), not a context timer per run: most small
	// runs never wait.
	if e.opts.ExprBudget != (expr.Budget{}) {
		ctx = expr.WithBudget(ctx, e.opts.ExprBudget)
	}
	if e.opts.RunContext != nil {
		ctx = e.opts.RunContext(ctx, id, c)
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
	started := stamp()
	r := &run{
		engine: e, plan: p, order: p.Order(), graph: p.Graph(), chain: c, id: id, seq: sessions.Add(1),
		ctx: rctx, cancel: cancel,
		started: started, strict: c.StrictConditions, events: emitter{sink: sink},
		scope:     runScope{ctx: rctx, g: p.Graph(), input: input, state: map[string]any{}, nodeResults: make(map[string]any, n)},
		sched:     newScheduler(maxConc, started, time.Duration(timeout*float64(time.Second))),
		loopCount: make([]int, len(c.Edges)),
	}
	if p.Valid() {
		r.bind = e.bind(p)
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
	r.scope.hasOutput, ns.depsDone, ns.stopped, ns.fatal = bools[:n:n], bools[n:2*n:2*n], bools[2*n:3*n:3*n], bools[3*n:]
	for i := range c.Nodes {
		ns.result[i].NodeID = c.Nodes[i].ID
		ns.loopFrom[i] = noNode
		ns.depsLeft[i] = int32(len(r.graph.DataDeps[i]))
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
	r.outcome.status = chain.StatusFailed
	r.outcome.stopping = true
	r.cancel(errRunStopped)
}

var errRunStopped = errors.New("the run stopped")

// seedRoots activates every root (and replays reused outputs for re-runs).
func (r *run) seedRoots() {
	if r.rerun.single() {
		return // its one node is queued by RunNode, or by a resume
	}
	for _, i := range r.order.Roots {
		r.activate(i)
	}
}

// loop is the coordinator: it starts ready nodes, applies completions and
// stops when nothing runs and nothing can start. It never polls.
func (r *run) loop() {
	defer close(r.sched.quit)
	ctxDone := r.ctx.Done()
	var grace <-chan time.Time
	r.openBox() // answers to its pauses may come while it runs
	mail := r.box.wake
	for {
		r.drainSkips()
		if !r.outcome.stopping {
			r.launchReady()
		}
		if r.sched.running == 0 {
			r.drainSkips()
			if !r.outcome.stopping && r.sched.queue.hasReady() {
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
		if r.sched.deadline == nil {
			t := r.sched.armDeadline()
			defer t.Stop()
		}
		if r.outcome.stopping && grace == nil {
			t := time.NewTimer(r.sched.stopGrace())
			defer t.Stop()
			grace = t.C
		}
		select {
		case c := <-r.sched.done:
			r.complete(c)
		case w := <-r.checkpoints.done:
			r.checkpointFailed(r.checkpoints.written(w))
		case <-r.checkpoints.delayC:
			r.checkpoints.delayed()
		case <-ctxDone:
			ctxDone = nil
			r.stopFromContext()
		case <-r.sched.deadline:
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
	r.sched.running = 0
}

// timedOut ends the run at the chain timeout: running nodes are cancelled
// with the timeout as the cause.
func (r *run) timedOut() {
	if r.outcome.stopping {
		return
	}
	r.cancel(errChainTimeout{r.sched.timeout.Seconds()})
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
		r.outcome.status = chain.StatusTimedOut
	default:
		r.fail(&RunError{Code: CodeCancelled, Message: "run cancelled: " + cause.Error()}, cause)
		r.outcome.status = chain.StatusCancelled
	}
}

// setOutput records a node's output where expressions can read it, and
// charges the output budget for it.
func (r *run) setOutput(i int, out any, ok bool) {
	if !ok {
		r.scope.clearOutput(i)
		r.chargeOutput(-r.budget.outSize[i], 0)
		r.budget.outSize[i] = 0
		return
	}
	r.scope.setOutput(i, out)
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
		return r.order.EdgeID1[idx[0]]
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
		return r.scope.input
	case 1:
		return r.scope.nodeResults[r.chain.Nodes[acts[0]].ID]
	}
	m := make(map[string]any, len(acts))
	for _, s := range acts {
		m[r.chain.Nodes[s].ID] = r.scope.nodeResults[r.chain.Nodes[s].ID]
	}
	return m
}

// finishRun computes the result and writes the closing checkpoint.
func (r *run) finishRun() (res *Result, err error) {
	defer func() { r.closeBox(res, err) }()
	r.drainSkips()
	status := chain.StatusCompleted
	switch {
	case r.outcome.err != nil:
		status = r.outcome.status
	case len(r.pending) > 0:
		status = chain.StatusPaused
	case r.outcome.handled:
		status = chain.StatusPartial
	}
	var unfinished []UnfinishedNode
	if status != chain.StatusPaused && !r.outcome.invalid {
		// Whatever never ran now never will: say so, so every node ends done, error or skip.
		for i := range r.chain.Nodes {
			if r.rerun.single() && i != r.rerun.alone() {
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
				inner := r.graph.Attached(i) && !isHandlerOnly(r.graph, i)
				if inner && r.nodes.attRan[i].Load() {
					continue // map bodies and branches report per call
				}
				r.nodes.status[i] = nsSkip
				u := UnfinishedNode{NodeID: r.chain.Nodes[i].ID, Status: PhaseSkip, Reason: ReasonUpstreamStopped}
				if r.graph.Attached(i) && r.outcome.err == nil {
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
	res.Outcome = r.runOutcome(status)
	end := &EndRecord{Status: status, Error: r.outcome.err, Final: res.FinalOutput, NodesRun: r.nodesRun, Outcome: res.Outcome, Unfinished: unfinished}
	r.addCheckpoint(Checkpoint{Kind: CheckpointEnd, End: end})
	r.checkpointFailed(r.checkpoints.sync())
	r.events.flush(r.ctx)
	r.cancel(nil)
	if r.outcome.infra != nil && res.Error == nil {
		res.Error = &RunError{Code: CodeCheckpoint, Message: r.outcome.infra.Error()}
	}
	return res, r.outcome.infra
}

func isHandlerOnly(g *chain.Graph, i int) bool {
	for _, a := range g.Owners[i] {
		if a.Rel != chain.RelHandler {
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
	if h, ok := r.graph.Idx[r.chain.Nodes[i].ErrorHandler()]; ok && r.nodes.status[h] == nsDone {
		return h
	}
	return -1
}

func (r *run) result(status chain.RunStatus) *Result {
	now := stamp()
	res := &Result{
		RunID: r.id, Status: status, Outputs: make(map[string]any, len(r.scope.nodeResults)),
		Error: r.outcome.err, err: r.outcome.typed, NodesRun: r.nodesRun, State: r.scope.state,
		Pending: r.pending, Started: r.started, Ended: now,
		DurationMS: now.Sub(r.started).Milliseconds(),
		Nodes:      make(map[string]*NodeResult, len(r.nodes.result)),
	}
	for i := range r.nodes.result {
		if r.nodes.status[i] == nsDone {
			res.Outputs[r.chain.Nodes[i].ID] = r.scope.nodeResults[r.chain.Nodes[i].ID]
		}
		if r.nodes.result[i].Status != "" {
			res.Nodes[r.nodes.result[i].NodeID] = &r.nodes.result[i] // the run is over: r.nodes.result no longer changes
		}
	}
	// final_output: the last terminal node that completed, in topological
	// order (an error handler nothing depends on is one, after its owner).
	bestRank := -1
	var terminals []int
	if r.order != nil {
		terminals = r.order.Terminals
	}
	bestOut := -1 // the node whose output stands for the best terminal: itself, or its error handler
	for k, i := range terminals {
		out := r.completedAs(i)
		if rank := r.order.TermRank[k]; out >= 0 && rank > bestRank {
			bestRank, bestOut = rank, out
		}
	}
	if r.rerun.single() { // a node run alone: its output, whatever comes after it
		bestOut = -1
		if i := r.rerun.alone(); r.nodes.status[i] == nsDone {
			bestOut = i
		}
	}
	if bestOut >= 0 {
		res.FinalOutput = r.scope.nodeResults[r.chain.Nodes[bestOut].ID]
	}
	return res
}
