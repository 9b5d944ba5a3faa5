package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// Resume continues a run from its checkpoint log, following the resume
// table (docs/chain-format.md, "Interrupts and resume"):
//
//	latest status   value?  result
//	paused          yes     the interrupted node re-runs with `resume` in scope
//	paused          no      *ChainResumeError: an interrupted run needs a value
//	not paused      yes     *AlreadyResumedError (never interrupted, or claimed)
//	failed          no      the failed (and cancelled) nodes re-run, completed
//	                        outputs are kept, modifiedState is merged into state
//	unknown run     either  *ChainCheckpointError
//
// Of concurrent resumes of one pause exactly one wins (the checkpointer's
// claim is atomic); the others get *AlreadyResumedError.
func (e *Engine) Resume(ctx context.Context, runID string, value *ResumeValue, modifiedState map[string]any, opts ResumeOptions) (*Result, error) {
	rs, err := e.StartResume(ctx, runID, value, modifiedState, opts)
	if err != nil {
		return nil, err
	}
	return rs.Run(ctx)
}

// Resumption is a resume that passed every check and holds its claim on the
// run; Run executes it. Hosts use the split to answer a resume request at
// once (404/409/422) and run the continuation in the background.
type Resumption struct {
	e       *Engine
	runID   string
	log     []Checkpoint
	start   *StartRecord
	p       *chain.Plan
	rec     *ResumeRecord
	opts    ResumeOptions
	started bool
	handed  bool     // claimed through ResumeOptions.Claim: continued elsewhere
	box     *mailbox // the answer went to the running run (answerLive)
}

// StartResume checks a resume against the resume table and claims the run
// (and its interrupt, when resuming with a value). The caller must call Run
// or Release on the returned Resumption.
func (e *Engine) StartResume(ctx context.Context, runID string, value *ResumeValue, modifiedState map[string]any, opts ResumeOptions) (*Resumption, error) {
	log, err := e.opts.Checkpointer.Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	start, last := inspectLog(log)
	if start == nil {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log has no start entry"}
	}
	busy := func() error {
		if value != nil { // nothing is pending while the run executes (another resume may have claimed it)
			return &AlreadyResumedError{RunID: runID}
		}
		return &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run is executing; it can be resumed once it pauses or stops"}}
	}
	status := chain.StatusFailed // a log with no end entry: the process died mid-run
	if last != nil {
		status = last.Status
	}
	if value != nil && len(modifiedState) > 0 {
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "an answer to a pause cannot patch the run's state (modified_state): the answered step must do what the person saw"}}
	}
	switch {
	case status == chain.StatusPaused && value == nil:
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run is paused at an interrupt; resume it with a value"}}
	case status != chain.StatusPaused && value != nil:
		if _, running := e.active.Load(runID); running {
			if opts.Claim == nil {
				return e.answerRunning(ctx, runID, value, modifiedState, opts)
			}
			return nil, busy()
		}
		return nil, &AlreadyResumedError{RunID: runID}
	case status == chain.StatusCompleted || status == chain.StatusPartial:
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: fmt.Sprintf("the run is %s; there is nothing to resume", status)}}
	}
	// Hold the run before claiming its interrupt, so a claim is never spent
	// by a resume that then finds the run busy.
	if _, running := e.active.LoadOrStore(runID, struct{}{}); running {
		if value != nil && opts.Claim == nil {
			return e.answerRunning(ctx, runID, value, modifiedState, opts)
		}
		return nil, busy()
	}
	// The log was read before the run was held: a leg that ended in between
	// (another answer's) is missing from it, and replaying it would lose that
	// answer. Read it again now that nobody else here can write it.
	if again, err := e.opts.Checkpointer.Load(ctx, runID); err != nil || len(again) != len(log) {
		e.active.Delete(runID)
		if err != nil {
			return nil, err
		}
		return e.StartResume(ctx, runID, value, modifiedState, opts)
	}
	opts.NextSeq = nextSeqAfter(opts.NextSeq, log)
	p, err := e.compile(ctx, start.Chain)
	if err != nil {
		e.active.Delete(runID)
		return nil, err
	}
	if !p.Valid() {
		e.active.Delete(runID)
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run's chain no longer validates: " + (&chain.ValidationError{Issues: p.Issues()}).Error()}}
	}
	rec := &ResumeRecord{HasValue: value != nil, ModifiedState: modifiedState}
	if value == nil && len(modifiedState) > 0 {
		rec.By = SenderOf(ctx) // the patch's sender, for its state_patch event
	}
	if value != nil {
		rec.Value, rec.Action, rec.Comment, rec.By, rec.Address, rec.At = value.Value, value.Action, value.Comment, value.By, value.Address, stamp()
		pause, err := choosePause(runID, opts.PauseID, log)
		if err != nil {
			e.active.Delete(runID)
			return nil, err
		}
		rec.NodeID, rec.PauseID = pause.NodeID, pause.PauseID
		if pr := pauseRecordOf(log, pause.PauseID); pr != nil {
			if err := checkAnswer(start.Chain, runID, pr.NodeID, pr.Approval, rec); err != nil {
				e.active.Delete(runID)
				return nil, err
			}
		}
		if opts.Claim != nil {
			// Claimed and handed on in one step by the host; the entry is
			// written by whoever continues the run.
			if _, err = opts.Claim(ctx, runID, *rec); err != nil {
				e.active.Delete(runID)
				return nil, err
			}
			return &Resumption{e: e, runID: runID, log: log, start: start, p: p, rec: rec, opts: opts, handed: true}, nil
		}
		if _, err = e.opts.Checkpointer.ClaimInterrupt(ctx, runID, rec.PauseID); err != nil {
			e.active.Delete(runID)
			var ae *AlreadyResumedError
			if errors.As(err, &ae) && ae.PauseID == "" {
				ae.PauseID = rec.PauseID
			}
			return nil, err
		}
	} else if opts.Claim != nil {
		// A failed run: the host claims the run itself (its status) and
		// hands it on with the record, as for a pause.
		if _, err = opts.Claim(ctx, runID, *rec); err != nil {
			e.active.Delete(runID)
			return nil, err
		}
		return &Resumption{e: e, runID: runID, log: log, start: start, p: p, rec: rec, opts: opts, handed: true}, nil
	}
	// The resume entry is written before StartResume returns, so whoever
	// reads the run next (a page, the API) sees it running again.
	seq := opts.NextSeq - 1
	if seq < 0 || opts.NextSeq == 0 {
		seq = log[len(log)-1].EventSeq
	}
	cp := Checkpoint{RunID: runID, Kind: CheckpointResume, EventSeq: seq, Time: stamp(), Resume: rec}
	if err := e.opts.Checkpointer.Append(ctx, runID, []Checkpoint{cp}); err != nil {
		e.active.Delete(runID)
		return nil, fmt.Errorf("engine: record resume of run %s: %w", runID, err)
	}
	return &Resumption{e: e, runID: runID, log: log, start: start, p: p, rec: rec, opts: opts}, nil
}

// nextSeqAfter is the seq a resumed leg's first event takes: next, the
// host's count of the events it stored, unless the run's log says a later
// one was emitted. The host counts before the run is held here, so a leg
// that ended in between (another answer's, in a map whose items each
// paused) stored events the count missed; numbering from the count would
// repeat their seqs and the run would fail with its history refused.
// next 0 (the host gave none) stays 0: the log's numbering is the default.
func nextSeqAfter(next int64, log []Checkpoint) int64 {
	if next <= 0 || len(log) == 0 {
		return next
	}
	return max(next, log[len(log)-1].EventSeq+1)
}

// liveWait bounds how long an answer waits for a run executing here to take
// answers (it is between legs: starting, or writing its end).
const liveWait = 5 * time.Second

// answerRunning answers a pause of a run that is executing in this process:
// handed to the run when it takes answers, or resumed as usual once it
// stopped (it paused again in between).
func (e *Engine) answerRunning(ctx context.Context, runID string, value *ResumeValue, modifiedState map[string]any, opts ResumeOptions) (*Resumption, error) {
	deadline := time.Now().Add(liveWait)
	for {
		if len(modifiedState) > 0 {
			break // a state patch needs a leg of its own
		}
		log, err := e.opts.Checkpointer.Load(ctx, runID)
		if err != nil {
			return nil, err
		}
		if rs, ok, err := e.answerLive(ctx, runID, value, log, opts); ok {
			return rs, err
		}
		if _, running := e.active.Load(runID); !running {
			return e.StartResume(ctx, runID, value, modifiedState, opts)
		}
		if time.Now().After(deadline) {
			break
		}
		t := time.NewTimer(2 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run is executing; it can be resumed once it pauses or stops"}}
}

// answerLive answers a pause of a run that is executing in this process.
func (e *Engine) answerLive(ctx context.Context, runID string, value *ResumeValue, log []Checkpoint, opts ResumeOptions) (*Resumption, bool, error) {
	pause, err := choosePause(runID, opts.PauseID, log)
	if err != nil {
		return nil, true, err
	}
	rec := &ResumeRecord{HasValue: true, Value: value.Value, NodeID: pause.NodeID, PauseID: pause.PauseID,
		Action: value.Action, Comment: value.Comment, By: value.By, Address: value.Address, At: stamp()}
	if start, _ := inspectLog(log); start != nil && start.Chain != nil {
		if pr := pauseRecordOf(log, pause.PauseID); pr != nil {
			if err := checkAnswer(start.Chain, runID, pr.NodeID, pr.Approval, rec); err != nil {
				return nil, true, err
			}
		}
	}
	b, ok, err := e.deliver(ctx, runID, rec)
	if !ok || err != nil {
		return nil, ok, err
	}
	return &Resumption{e: e, runID: runID, rec: rec, box: b, started: true}, true, nil
}

// Delivered reports whether the answer was handed to the run executing in
// this process: Run then waits for that run's end, and a host has nothing
// to launch.
func (rs *Resumption) Delivered() bool { return rs.box != nil }

// NodeID returns the interrupted node being resumed ("" for a failed run).
func (rs *Resumption) NodeID() string { return rs.rec.NodeID }

// PauseID returns the pause being answered ("" for a failed run).
func (rs *Resumption) PauseID() string { return rs.rec.PauseID }

// Release gives up a Resumption that will not be run.
func (rs *Resumption) Release() {
	if !rs.started {
		rs.started = true
		rs.e.active.Delete(rs.runID)
	}
}

// Run rebuilds the run from its log and continues it under ctx.
func (rs *Resumption) Run(ctx context.Context) (*Result, error) {
	if rs.box != nil {
		select {
		case <-rs.box.done:
			return rs.box.res, rs.box.err
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	if rs.started || rs.handed {
		rs.Release()
		return nil, &ChainResumeError{ChainCheckpointError{RunID: rs.runID, Msg: "this resumption was already run, released or handed on"}}
	}
	rs.started = true
	defer rs.e.active.Delete(rs.runID)
	r := newRun(ctx, rs.e, rs.p, rs.runID, rs.start.Input, rs.opts.Sink)
	r.depth = rs.start.Depth
	if rs.start.UsesPins { // the pins of the document the run started with
		r.rerun.pins = rs.p.Chain().PinnedOutputs
	}
	if pr := rs.start.Pinned; pr != nil {
		if i, ok := r.graph.Idx[pr.NodeID]; ok {
			r.rerun.runAlone(i)
		}
	}
	r.replayLog(rs.log)
	r.resumeDispatchers()
	if rs.opts.NextSeq > 0 {
		r.events.continueAfter(rs.opts.NextSeq - 1)
	}
	r.applyResume(rs.rec) // its checkpoint was written by StartResume
	if rs.rec.NodeID == "" && len(rs.rec.ModifiedState) > 0 {
		r.emit(statePatchEvent(chain.NormalizeMap(rs.rec.ModifiedState), rs.rec.By))
	}
	if rs.rec.NodeID == "" {
		r.restartFailed()
	}
	r.resumeHeld()
	if r.rerun.single() {
		r.restoreActivators(rs.start.Pinned)                   // replay cleared them
		if i := r.rerun.alone(); r.nodes.status[i] == nsIdle { // stopped before it finished: it runs now
			r.nodes.status[i] = nsReady
			r.sched.queue.push(i)
		}
	}
	if r.ctx.Err() != nil { // cancelled while it waited for a slot
		r.stopFromContext()
	}
	r.loop()
	return r.finishRun()
}

// handedOn reports whether a log ending with last is where a claim that
// handed rec on found it: a pause for a resume with a value; for a failed
// run, anything but an accepted resume or an end that cannot be resumed.
func handedOn(last Checkpoint, rec *ResumeRecord) bool {
	if rec.HasValue {
		return last.Kind == CheckpointEnd && last.End != nil && last.End.Status == chain.StatusPaused
	}
	if last.Kind == CheckpointResume {
		return false
	}
	if last.Kind != CheckpointEnd || last.End == nil {
		return true // the process died mid-run: it failed
	}
	switch last.End.Status {
	case chain.StatusPaused, chain.StatusCompleted, chain.StatusPartial:
		return false
	}
	return true
}

// pauseRecordOf is the newest pause entry of the pause id in a log, with
// the interrupt's approval settings the answer is checked against.
func pauseRecordOf(log []Checkpoint, id string) *PauseRecord {
	for k := len(log) - 1; k >= 0; k-- {
		if cp := &log[k]; cp.Kind == CheckpointPause && cp.Pause != nil && cp.Pause.ID() == id {
			return cp.Pause
		}
	}
	return nil
}

// inspectLog finds the start record and the latest end record.
func inspectLog(log []Checkpoint) (*StartRecord, *EndRecord) {
	var start *StartRecord
	var end *EndRecord
	for k := range log {
		switch log[k].Kind {
		case CheckpointStart:
			start = log[k].Start
		case CheckpointEnd:
			end = log[k].End
		case CheckpointResume:
			end = nil // a resume reopened the run
		}
	}
	return start, end
}

// applyResume resolves the claimed interrupt and merges the state patch.
func (r *run) applyResume(rec *ResumeRecord) {
	if len(rec.ModifiedState) > 0 {
		r.scope.writeState(chain.NormalizeMap(rec.ModifiedState))
	}
	if rec.NodeID == "" {
		return
	}
	id := rec.PauseID
	if id == "" {
		id = rec.NodeID
	}
	k := slices.IndexFunc(r.pending, func(p Pending) bool { return p.PauseID == id })
	if k < 0 {
		return
	}
	p := r.pending[k]
	i, ok := r.graph.Idx[p.NodeID]
	if !ok {
		return
	}
	if r.nodes.status[i] == nsRunning {
		// The node is running for another answer and still holds this
		// pause: the answer waits until it stops (applyDeferred).
		r.nodes.deferred = append(r.nodes.deferred, rec)
		return
	}
	r.pending = slices.Delete(r.pending, k, k+1)
	if id == p.NodeID {
		if r.nodes.resumeValue == nil {
			r.nodes.resumeValue = map[int]any{}
		}
		r.nodes.resumeValue[i] = rec.Value
		if r.nodes.answers == nil {
			r.nodes.answers = map[int]*ResumeRecord{}
		}
		r.nodes.answers[i] = rec // its action (approve, reject, respond)
		if r.nodes.answered == nil {
			r.nodes.answered = map[int]Pending{}
		}
		r.nodes.answered[i] = p
	} else {
		if r.nodes.slotAnswers == nil {
			r.nodes.slotAnswers = map[int]map[string]answer{}
		}
		if r.nodes.slotAnswers[i] == nil {
			r.nodes.slotAnswers[i] = map[string]answer{}
		}
		r.nodes.slotAnswers[i][id] = answer{value: rec.Value, sub: p.sub}
	}
	if r.nodes.status[i] == nsPaused {
		r.nodes.status[i] = nsReady
		r.sched.queue.push(i)
	}
}

// applyDeferred applies the answers that came while node i ran, now that it
// paused again. Their resume entries are written now, after the node's
// pauses, so a replay meets them in the same order.
func (r *run) applyDeferred(i int) {
	if len(r.nodes.deferred) == 0 {
		return
	}
	recs := r.nodes.deferred
	r.nodes.deferred = nil
	for _, rec := range recs {
		if r.graph.Idx[rec.NodeID] != i {
			r.nodes.deferred = append(r.nodes.deferred, rec)
			continue
		}
		r.addCheckpoint(Checkpoint{Kind: CheckpointResume, Resume: rec})
		r.applyResume(rec)
	}
}

// restartFailed queues the nodes a failed run did not finish: the node whose
// failure stopped it and any node that was running or due.
func (r *run) restartFailed() {
	for i := range r.chain.Nodes {
		if r.nodes.status[i] == nsError && r.nodes.result[i].Status == PhaseError && r.nodes.fatal[i] {
			r.nodes.fatal[i] = false
			r.nodes.status[i] = nsReady
			r.sched.queue.push(i)
		}
	}
}

// replayLog rebuilds the run from its log by applying each entry through the
// same transitions the coordinator uses, without running or emitting.
func (r *run) replayLog(log []Checkpoint) {
	r.replay.on = true
	defer func() { r.replay.on = false }()
	r.seedRoots()
	for k := range log {
		cp := &log[k]
		r.events.saw(cp.EventSeq)
		switch cp.Kind {
		case CheckpointStart:
			if cp.Start != nil && len(cp.Start.ModifiedState) > 0 {
				r.rerun.statePatch = cp.Start.ModifiedState
				r.scope.writeState(r.rerun.statePatch)
			}
		case CheckpointNode:
			r.replayNode(cp.Node)
		case CheckpointPause:
			if i, ok := r.graph.Idx[cp.Pause.NodeID]; ok {
				r.applyPause(i, cp.Pause, cp.Time)
			}
		case CheckpointSlots:
			if i, ok := r.graph.Idx[cp.Slots.NodeID]; ok {
				r.applySlots(i, cp.Slots)
			}
		case CheckpointResume:
			r.applyResume(cp.Resume)
		case CheckpointEdges:
			r.replayEdges(cp.Edges)
		case CheckpointEnd:
			r.nodesRun = cp.End.NodesRun
		}
	}
}

func (r *run) edgeIndex(id string) (int, bool) {
	if r.replay.edgeIdx == nil {
		r.replay.edgeIdx = make(map[string]int, len(r.chain.Edges))
		for k := range r.chain.Edges {
			r.replay.edgeIdx[r.chain.Edges[k].ID] = k
		}
	}
	k, ok := r.replay.edgeIdx[id]
	return k, ok
}

// replayEdges applies decisions of a sequential dispatch and moves its
// dispatcher to where it was.
func (r *run) replayEdges(rec *EdgesRecord) {
	src, ok := r.graph.Idx[rec.Source]
	if !ok {
		return
	}
	d := r.replay.dispatch[src]
	outs := r.graph.Out[src]
	advance := func(k int) {
		if d == nil {
			return
		}
		if p := slices.Index(outs, k); p >= d.pos {
			d.pos = p + 1
		}
		if e := &r.chain.Edges[k]; e.Default && e.Condition == "" {
			d.def = noEdge
		}
	}
	for _, id := range rec.Pruned {
		if k, ok := r.edgeIndex(id); ok {
			advance(k)
			r.deliverPruned(k, ReasonConditionFalse)
		}
	}
	fire := func(k int) {
		advance(k)
		t := r.graph.Idx[r.chain.Edges[k].Target]
		if d != nil {
			if r.chain.Edges[k].Condition != "" {
				d.matched = true
			}
			if r.sched.dispatch.byTarget == nil {
				r.sched.dispatch.byTarget = map[int]*dispatcher{}
			}
			r.sched.dispatch.byTarget[t] = d
			d.waiting = t
		}
		r.deliverFired(k)
	}
	for _, id := range rec.Fired {
		if k, ok := r.edgeIndex(id); ok {
			r.replayedHeldFired(src, k)
			fire(k)
		}
	}
	for id, msg := range rec.Failed {
		if k, ok := r.edgeIndex(id); ok {
			r.nodes.presetErr[r.graph.Idx[r.chain.Edges[k].Target]] = fmt.Errorf("%s", msg)
			fire(k)
		}
	}
}

// resumeDispatchers continues sequential dispatches whose current link had
// already finished when the log ended.
func (r *run) resumeDispatchers() {
	for _, d := range r.replay.dispatch {
		if d.waiting == noNode && d.pos <= len(r.graph.Out[d.src]) {
			waiting := false
			for _, dd := range r.sched.dispatch.byTarget {
				if dd == d {
					waiting = true
				}
			}
			if !waiting {
				r.sched.dispatch.pending = append(r.sched.dispatch.pending, d)
			}
		}
	}
	r.replay.dispatch = nil
}

// RerunFrom starts a new run of the chain of runID that keeps the outputs of
// every node upstream of fromNode and executes from there. input replaces the
// original input when non-nil.
func (e *Engine) RerunFrom(ctx context.Context, runID, fromNode string, input map[string]any, opts RunOptions) (*Result, error) {
	return e.RerunOn(ctx, runID, fromNode, nil, input, opts)
}

// ancestors returns the nodes upstream of i (not i itself) over non-loop
// edges and data dependencies.
func ancestors(g *chain.Graph, i int) []bool {
	keep := make([]bool, len(g.C.Nodes))
	stack := []int{i}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var preds []int
		for _, ei := range g.In[n] {
			preds = append(preds, g.Idx[g.C.Edges[ei].Source])
		}
		preds = append(preds, g.DataDeps[n]...)
		for _, a := range g.Owners[n] {
			preds = append(preds, a.Owner)
		}
		for _, p := range preds {
			if !keep[p] && p != i {
				keep[p] = true
				stack = append(stack, p)
			}
		}
	}
	return keep
}

// ContinueResume runs a resume that StartResume accepted elsewhere (another
// process checked it and handed the run to a worker). With rec nil, that
// process wrote the resume entry and the log must end with it. With rec set
// (the record handed on by ResumeOptions.Claim, the interrupt already
// claimed), this call writes the entry, and the log must end where the
// claim found it. A log that goes on past that point was already
// continued, and is refused rather than run twice.
func (e *Engine) ContinueResume(ctx context.Context, runID string, rec *ResumeRecord, opts ResumeOptions) (*Result, error) {
	log, err := e.opts.Checkpointer.Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	continued := &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run's log does not end with an accepted resume; it was continued already"}}
	if len(log) == 0 {
		return nil, continued
	}
	last := log[len(log)-1]
	if rec == nil {
		if last.Kind != CheckpointResume || last.Resume == nil {
			return nil, continued
		}
		rec = last.Resume
		log = log[:len(log)-1]
	} else if !handedOn(last, rec) {
		return nil, continued
	}
	start, _ := inspectLog(log)
	if start == nil {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log has no start entry"}
	}
	if _, running := e.active.LoadOrStore(runID, struct{}{}); running {
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run is executing; it can be resumed once it pauses or stops"}}
	}
	opts.NextSeq = nextSeqAfter(opts.NextSeq, log)
	p, err := e.compile(ctx, start.Chain)
	if err != nil {
		e.active.Delete(runID)
		return nil, err
	}
	if !p.Valid() {
		e.active.Delete(runID)
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run's chain no longer validates: " + (&chain.ValidationError{Issues: p.Issues()}).Error()}}
	}
	if last.Kind != CheckpointResume {
		// The entry this call owns (rec handed on): written before the run
		// goes on, as StartResume writes it.
		seq := opts.NextSeq - 1
		if seq < 0 || opts.NextSeq == 0 {
			seq = last.EventSeq
		}
		cp := Checkpoint{RunID: runID, Kind: CheckpointResume, EventSeq: seq, Time: stamp(), Resume: rec}
		if err := e.opts.Checkpointer.Append(ctx, runID, []Checkpoint{cp}); err != nil {
			e.active.Delete(runID)
			return nil, fmt.Errorf("engine: record resume of run %s: %w", runID, err)
		}
	}
	rs := &Resumption{e: e, runID: runID, log: log, start: start, p: p, rec: rec, opts: opts}
	return rs.Run(ctx)
}
