package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
)

// A node's outcome takes three steps, the same for every kind of outcome:
//
//  1. decide (nodeDone, nodeFailed, skipNode): on the coordinator, from a
//     worker's completion, build the NodeRecord the log keeps and the
//     routing of the node's outgoing edges (edge indices), publishing on the
//     way what routing reads: the node's state writes and its output;
//  2. commit: emit the node's event, append the record to the checkpoint
//     log, then apply it;
//  3. apply: change the run's state as the record says (the node's result
//     and status, its edges delivered, a handler started, dependants told).
//
// Replay (resume) rebuilds the run from the log: it publishes each record's
// state writes and output, then applies it through the same apply. Readers
// of the log fold the same records (NodeResultFold), so a new outcome or
// record field is handled once. docs/design.md ("Node outcomes and the
// run's state") has the overview.

// complete applies a worker's completion on the coordinator.
func (r *run) complete(c completion) {
	r.sched.running--
	i := c.i
	if c.input != nil && !c.reused { // the node's checkpoint keeps its input
		r.chargeOutput(0, valueSize(c.input, r.engine.opts.Limits.MaxStoredBytes))
	}
	if ho, ok := c.out.(handledOut); ok {
		c.out, c.partial = ho.v, true
	}
	if c.err == nil {
		r.nodeDone(i, c)
		return
	}
	if ie, ok := tool.IsInterrupt(c.err); ok {
		r.pauseNode(i, ie, c)
		return
	}
	var pe *pausedErr
	if errors.As(c.err, &pe) {
		r.pauseSlots(i, pe, c)
		return
	}
	if !r.outcome.stopping && r.ctx.Err() != nil {
		// The run was cancelled (or timed out) and this node's error came
		// from that: the coordinator may read the node's report before the
		// context's, but the run stopped, the node did not fail.
		r.stopFromContext()
	}
	if r.outcome.stopping {
		r.stoppedNode(i, c)
		return
	}
	r.nodeFailed(i, c)
}

// nodeDone decides a success: the node's set_state writes are applied first
// (its edge conditions read the state it wrote), then its edges are routed.
// A set_state that fails makes the node fail.
func (r *run) nodeDone(i int, c completion) {
	nd := &r.chain.Nodes[i]
	out := c.out
	writes, err := r.applySetState(i, out)
	if err != nil {
		c.err = err
		r.nodeFailed(i, c)
		return
	}
	if c.reused && r.rerun.patched(writes) {
		r.scope.writeState(r.rerun.statePatch)
	}
	// The record and the encoding its event shares (commit) in one
	// allocation: a run allocates one per node either way.
	x := &recordOutput{NodeRecord: NodeRecord{NodeID: nd.ID, Status: PhaseDone, Input: c.input, Output: out, Matched: c.matched, Reused: c.reused, Pinned: c.pinned,
		Attempts: c.attempts, Iteration: r.nodes.iterations[i], Started: c.started, Ended: c.ended, State: writes, Partial: c.partial,
		Decisions: c.decided, Credentialed: c.credentialed}}
	rec := &x.NodeRecord
	if out != nil {
		rec.OutputJSON = &x.encoded
	}
	r.publishOutput(i, rec)
	rt := r.route(i, out, c.matched)
	r.recordRouting(rec, &rt)
	r.commit(i, rec, &rt, nil)
	r.scratch.recycle(rt)
}

// recordOutput is a done record with the output encoding it shares with
// its event (OutputJSON), allocated together.
type recordOutput struct {
	NodeRecord
	encoded OutputJSON
}

// nodeFailed decides a failure by the node's on_error policy (see
// docs/chain-format.md): abort stops the run; skip and continue route the
// node's edges as if it had finished with no output; a handler node runs
// instead of the node's edges, which are pruned.
func (r *run) nodeFailed(i int, c completion) {
	nd := &r.chain.Nodes[i]
	rec := &NodeRecord{NodeID: nd.ID, Status: PhaseError, Input: c.input, Error: c.err.Error(), ErrorCode: errorCode(c.err),
		Attempts: c.attempts, Iteration: r.nodes.iterations[i], Started: c.started, Ended: c.ended, Decisions: c.decided,
		Credentialed: c.credentialed}
	// A node whose incoming guard failed never ran: it is reported skipped
	// (reason guard_failed, with the error), never as an error of its own;
	// its on_error still decides what the failure does to the run.
	if c.guard {
		rec.Status, rec.Reason = PhaseSkip, ReasonGuardFailed
	}
	rt := noRouting(nil)
	switch pol := nd.OnErrorOrDefault(); pol {
	case chain.OnErrorAbort:
		rec.Fatal = true
		r.commit(i, rec, &rt, &ChainNodeError{NodeID: nd.ID, Attempt: c.attempts, Err: c.err})
		return
	case chain.OnErrorSkip, chain.OnErrorContinue:
		if pol == chain.OnErrorSkip {
			rec.Status = PhaseSkip
			if !c.guard {
				rec.Reason = ReasonOnErrorSkip
			}
		}
		r.publishOutput(i, rec)
		rt = r.route(i, nil, "")
		r.recordRouting(rec, &rt)
		r.commit(i, rec, &rt, nil)
		r.scratch.recycle(rt)
		return
	default:
		rec.Handled = pol
		rec.Pruned = r.edgeIDs(r.graph.Out[i])
		r.publishOutput(i, rec)
	}
	r.commit(i, rec, &rt, nil)
}

// skipNode decides a skip: the node never runs (every incoming edge was
// pruned, or nothing needs it) and its own edges are pruned with the same
// reason, so a pruned branch reads as one cause all the way down.
//
// A skip has no start time: it never ran, so it shows no duration.
func (r *run) skipNode(t int, reason string) {
	rt := noRouting(nil)
	rt.pruned = r.graph.Out[t]
	rec := &NodeRecord{NodeID: r.chain.Nodes[t].ID, Status: PhaseSkip, Reason: reason, Ended: stamp(), Pruned: r.edgeIDs(rt.pruned)}
	r.publishOutput(t, rec)
	r.commit(t, rec, &rt, nil)
}

// recordRouting copies a routing decision into the node's record.
func (r *run) recordRouting(rec *NodeRecord, rt *routing) {
	rec.Fired, rec.Pruned, rec.Held, rec.Sequential, rec.Failed = r.edgeIDs(rt.fired), r.edgeIDs(rt.pruned), rt.held, rt.sequential, r.failedIDs(rt.failed)
	if rec.Decisions == nil {
		rec.Decisions = rt.decisions
	} else {
		rec.Decisions = append(rec.Decisions, rt.decisions...)
	}
	if rt.deferred != noEdge {
		rec.Deferred = r.chain.Edges[rt.deferred].ID
	}
}

// commit publishes a decided outcome (event, then checkpoint) and applies
// it. stop is the typed error of a failure that stops the run (on_error
// abort); the run fails with it once the record is applied.
func (r *run) commit(i int, rec *NodeRecord, rt *routing, stop error) {
	if rec.Output != nil && rec.OutputJSON == nil && !r.replay.on {
		rec.OutputJSON = &OutputJSON{} // the event and the record share it
	}
	if rec.Status == PhaseSkip && rec.Reason == ReasonOnErrorSkip {
		r.emitSkippedFailure(Event{NodeID: rec.NodeID, Error: rec.Error, Attempt: rec.Attempts, Iteration: rec.Iteration, Time: rec.Ended})
	}
	r.emit(Event{NodeID: rec.NodeID, Phase: rec.Status, Output: rec.Output, Matched: rec.Matched, Error: rec.Error, Reason: rec.Reason,
		Attempt: rec.Attempts, Iteration: rec.Iteration, Edges: rec.Fired, Time: rec.Ended, Reused: rec.Reused, Pinned: rec.Pinned, Decisions: rec.Decisions,
		Credentialed: rec.Credentialed, OutputJSON: rec.OutputJSON})
	r.addCheckpoint(Checkpoint{Kind: CheckpointNode, Node: rec})
	if stop != nil {
		r.fail(&RunError{Code: CodeNodeError, Message: stop.Error(), NodeID: rec.NodeID}, stop)
	}
	r.apply(i, rec, rt)
}

// emitSkippedFailure emits the error event of a node that failed under
// on_error: skip, before its skip event: the failure is an error (A2E fills
// `error` on "error" events only), and its reason says the policy skipped
// it, so readers that count node ends wait for the skip.
func (r *run) emitSkippedFailure(ev Event) {
	ev.Phase, ev.Reason = PhaseError, ReasonOnErrorSkip
	r.emit(ev)
}

// outcome is the record's phase as the scheduler sees it: a guard failure
// is reported skipped, but it is a failure its on_error handled (or a fatal
// one).
func (rec *NodeRecord) outcome() Phase {
	if rec.Reason == ReasonGuardFailed {
		return PhaseError
	}
	return rec.Status
}

// publishOutput makes the node's output (or that it has none) readable by
// expressions, as its record says. Deciding does it before routing (edge
// conditions may read <id>.output); replay before apply.
func (r *run) publishOutput(i int, rec *NodeRecord) {
	switch rec.outcome() {
	case PhaseDone:
		r.setOutput(i, rec.Output, true)
	case PhaseSkip:
		r.setOutput(i, nil, rec.Reason == ReasonOnErrorSkip)
	case PhaseError:
		if !rec.Fatal {
			r.setOutput(i, nil, true)
		}
	}
}

// apply changes the run as a node record says, live and in replay. rt is
// the record's routing as edge indices (rt.err: the routing failed live and
// the run stops).
func (r *run) apply(i int, rec *NodeRecord, rt *routing) {
	r.nodes.result[i] = rec.result()
	r.clearPauses(i)
	if rec.Iteration > 0 {
		r.nodes.iterations[i] = rec.Iteration
	}
	switch rec.outcome() {
	case PhaseDone:
		r.nodes.status[i] = nsDone
		if rec.Partial {
			r.outcome.handled = true
		}
	case PhaseSkip:
		r.nodes.status[i] = nsSkip
		if rec.Reason == ReasonOnErrorSkip {
			r.outcome.handled = true
		}
	case PhaseError:
		r.nodes.status[i] = nsError
		if rec.Fatal { // the run stopped here; a resume runs the node again
			r.nodes.fatal[i] = true
			return
		}
		r.outcome.handled = true
	}
	if rt.err != nil {
		r.failRouting(i, rt.err)
		return
	}
	if rec.Handled != "" {
		for _, ei := range r.graph.Out[i] {
			r.deliverPruned(ei, ReasonUpstreamStopped)
		}
		if h, ok := r.graph.Idx[rec.Handled]; ok {
			r.startHandler(h, i, errorScope(rec.NodeID, rec.Attempts, rec.Error, rec.ErrorCode))
		}
		r.notifyDependants(i)
	} else {
		r.deliver(rt, r.pruneReasonOf(i, rec))
		if rt.deferred != noEdge {
			r.holdDefault(i, rt.deferred, *rt)
		}
		r.notifyDependants(i)
		if rec.Sequential {
			r.startDispatch(i, rec.Output)
		}
		r.runPendingDispatch()
	}
	r.nodeFinished(i, rec.Output)
}

// pruneReasonOf is why the targets of a node's pruned edges may be skipped: a
// skipped node passes its own reason on; a failed one says its upstream
// stopped; a router's edges were not taken; other edges' conditions were
// false.
func (r *run) pruneReasonOf(i int, rec *NodeRecord) string {
	switch {
	case rec.Status == PhaseSkip && rec.Reason != ReasonOnErrorSkip && rec.Reason != ReasonGuardFailed:
		return rec.Reason
	case rec.Status != PhaseDone:
		return ReasonUpstreamStopped
	}
	if k := r.chain.Nodes[i].Kind; k == chain.KindBranch || k == chain.KindCondition {
		return ReasonBranchNotTaken
	}
	return ReasonConditionFalse
}

// nodeFinished tells whoever waits for node i that it finished: a held
// default waiting for its fan-out, a loop pass due next, a sequential
// dispatch whose current link it was.
func (r *run) nodeFinished(i int, out any) {
	r.releaseHeld(i)
	if s := r.nodes.loopFrom[i]; s != noNode && !r.outcome.stopping {
		r.nodes.loopFrom[i] = noNode
		r.nodes.activators[i] = append(r.nodes.activators[i][:0], s)
		r.activate(i)
	}
	if d, ok := r.sched.dispatch.byTarget[i]; ok {
		delete(r.sched.dispatch.byTarget, i)
		d.steps[d.key(i, r)] = out
		if d.waiting == i {
			d.waiting = noNode
		}
		if !r.replay.on {
			r.stepDispatch(d)
		}
	}
}

// pauseNode: the node asked for a human (an interrupt). The run pauses once
// nothing else runs.
func (r *run) pauseNode(i int, ie *tool.InterruptError, c completion) {
	prompt := ie.Prompt
	rec := &PauseRecord{NodeID: r.chain.Nodes[i].ID, Prompt: prompt, Input: c.input, Attempts: c.attempts, Iteration: r.nodes.iterations[i],
		State: chain.NormalizeValue(ie.State)}
	if nd := &r.chain.Nodes[i]; nd.Kind == chain.KindInterrupt {
		rec.Approval = approvalInfo(nd, c.input, c.ended)
		rec.Approval.Fields = c.asked
	} else if ie.Approve {
		rec.Approval = &ApprovalInfo{Kind: ApprovalToolCall, Proposed: chain.NormalizeValue(ie.Proposed)}
	}
	r.nodes.result[i].Ended = c.ended
	r.emit(Event{NodeID: rec.NodeID, Phase: PhasePaused, Prompt: prompt, Attempt: rec.Attempts, Iteration: rec.Iteration})
	r.addCheckpoint(Checkpoint{Kind: CheckpointPause, Pause: rec})
	r.applyPause(i, rec, stamp())
	r.applyDeferred(i)
}

// applyPause marks node i waiting for a resume value, live and in replay.
func (r *run) applyPause(i int, rec *PauseRecord, since time.Time) {
	r.nodes.status[i] = nsPaused
	rec.applyTo(&r.nodes.result[i])
	id := rec.ID()
	r.pending = slices.DeleteFunc(r.pending, func(p Pending) bool { return p.PauseID == id })
	r.pending = append(r.pending, Pending{PauseID: id, NodeID: rec.NodeID, Prompt: rec.Prompt, Since: since, slot: rec.Slot, sub: rec.SubRunID, approval: rec.Approval, state: rec.State})
}

// stoppedNode: the run was already stopping (another node failed, timeout,
// cancel) when this node ended with an error. It is not checkpointed as
// finished, so a resume runs it again; the run's end entry lists it.
func (r *run) stoppedNode(i int, c completion) {
	r.nodes.status[i] = nsIdle
	r.nodes.stopped[i] = true
	msg := "stopped: " + r.outcome.err.Message
	nr := &r.nodes.result[i]
	nr.Status, nr.Error, nr.Attempts, nr.Input, nr.Ended = PhaseError, msg, c.attempts, c.input, c.ended
	r.emit(Event{NodeID: r.chain.Nodes[i].ID, Phase: PhaseError, Error: msg, Reason: ReasonUpstreamStopped, Attempt: c.attempts, Iteration: r.nodes.iterations[i]})
}

// replayNode applies a logged node record, as commit applied it live.
func (r *run) replayNode(rec *NodeRecord) {
	i, ok := r.graph.Idx[rec.NodeID]
	if !ok {
		return
	}
	// The node's live start reset these; replay has no start.
	r.sched.queue.skips = slices.DeleteFunc(r.sched.queue.skips, func(t int) bool { return t == i })
	r.nodes.decided[i], r.nodes.fired[i] = 0, 0
	r.nodes.activators[i] = r.nodes.activators[i][:0]
	if len(rec.State) > 0 { // live, nodeDone wrote them before routing
		r.scope.writeState(rec.State)
	}
	r.publishOutput(i, rec)
	rt := r.recordedRouting(rec)
	r.apply(i, rec, &rt)
}

// recordedRouting turns a record's edge ids back into a routing decision.
func (r *run) recordedRouting(rec *NodeRecord) routing {
	rt := noRouting(nil)
	rt.held, rt.sequential = rec.Held, rec.Sequential
	for _, id := range rec.Fired {
		if k, ok := r.edgeIndex(id); ok {
			rt.fired = append(rt.fired, k)
		}
	}
	for _, id := range rec.Pruned {
		if k, ok := r.edgeIndex(id); ok {
			rt.pruned = append(rt.pruned, k)
		}
	}
	for id, msg := range rec.Failed {
		if k, ok := r.edgeIndex(id); ok {
			if rt.failed == nil {
				rt.failed = map[int]error{}
			}
			rt.failed[k] = fmt.Errorf("%s", msg)
		}
	}
	if rec.Deferred != "" {
		if k, ok := r.edgeIndex(rec.Deferred); ok {
			rt.deferred = k
		}
	}
	return rt
}

// errorCode is the code a failure carries into records and `error` scopes.
func errorCode(err error) string {
	if code := CodeOf(err); code != "" {
		return code
	}
	return CodeNodeError
}

// errorScope is what an on_error handler reads as `error`.
func errorScope(nodeID string, attempt int, msg, code string) map[string]any {
	if code == "" { // logs written before records carried the code
		code = CodeNodeError
	}
	return map[string]any{"message": msg, "code": code, "node_id": nodeID, "attempt": float64(attempt)}
}
