package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
)

// Pauses anywhere (docs/chain-format.md, "Pauses inside map items, branches
// and sub-chains"): a node may hold several pauses at once, each with its own
// id: the node id (a top-level interrupt), "<map>[k]" (a map item),
// the branch node id (a parallel branch), and "<skill>/<inner id>" (a pause
// of the chain a skill node runs). Each is answered on its own; the node
// runs again for each answer, keeping what its items or branches already
// finished (slots entries) and leaving the unanswered ones paused.

// slotPause is one pause a node reported.
type slotPause struct {
	id     string // the full pause id (prefixed by the caller for sub-chains)
	prompt any
	slot   *int
	sub    string // the sub-chain run holding the pause
}

// pausedErr: a node stopped because something inside it paused. pauses are
// the new ones (pauses already pending are not reported again); done are the
// slots that finished in this attempt. inner: the ids are a sub-chain's own,
// to be prefixed with the node's id.
type pausedErr struct {
	pauses []slotPause
	done   []SlotOutput
	inner  bool
}

func (e *pausedErr) Error() string {
	ids := make([]string, len(e.pauses))
	for k, p := range e.pauses {
		ids[k] = p.id
	}
	return "paused at " + strings.Join(ids, ", ")
}

// prefixed returns e with every pause id under prefix.
func (e *pausedErr) prefixed(prefix string, slot *int) *pausedErr {
	out := &pausedErr{done: e.done}
	for _, p := range e.pauses {
		p.id = prefix + "/" + p.id
		if slot != nil {
			p.slot = slot
		}
		out.pauses = append(out.pauses, p)
	}
	return out
}

// isPause reports whether err stops a node for a human rather than failing it.
func isPause(err error) bool {
	if _, ok := tool.IsInterrupt(err); ok {
		return true
	}
	var pe *pausedErr
	return errors.As(err, &pe)
}

// answer is a claimed pause's value, held for the node's next start.
type answer struct {
	value any
	sub   string // the sub-chain run to resume with it
}

// fanState is what a node that holds pauses starts with: the slots that
// finished, the pauses still waiting, and the answers to hand on. It is
// taken on the coordinator and read by the node's worker only.
type fanState struct {
	done    map[int]SlotOutput
	pending []string
	answers map[string]answer
}

// takeFan gathers node i's pause state for its next start (nil: none).
func (r *run) takeFan(i int) *fanState {
	id := r.chain.Nodes[i].ID
	f := &fanState{done: r.nodes.slots[i], answers: r.nodes.slotAnswers[i]}
	delete(r.nodes.slotAnswers, i)
	for _, p := range r.pending {
		if p.NodeID == id {
			f.pending = append(f.pending, p.PauseID)
		}
	}
	if f.done == nil && f.answers == nil && f.pending == nil {
		return nil
	}
	return f
}

// slot returns slot k's output when it finished before a pause.
func (f *fanState) slot(k int) (SlotOutput, bool) {
	if f == nil {
		return SlotOutput{}, false
	}
	d, ok := f.done[k]
	return d, ok
}

// blocked reports whether the slot (or sub-chain) id still waits for an
// answer: then it is not run, it stays paused.
func (f *fanState) blocked(id string) bool {
	if f == nil {
		return false
	}
	for _, p := range f.pending {
		if p == id || strings.HasPrefix(p, id+"/") {
			return true
		}
	}
	return false
}

// ctxFor hands the answers under id to whatever runs it: the value of id
// itself as the tool's resume value, the answers to id's sub-chain pauses
// for runSub.
func (f *fanState) ctxFor(ctx context.Context, id string) context.Context {
	if f == nil {
		return ctx
	}
	if a, ok := f.answers[id]; ok {
		ctx = tool.WithResume(ctx, a.value)
	}
	var sa *subAnswers
	for pid, a := range f.answers {
		if inner, ok := strings.CutPrefix(pid, id+"/"); ok && a.sub != "" {
			if sa == nil {
				sa = &subAnswers{runID: a.sub, values: map[string]any{}}
			}
			sa.values[inner] = a.value
		}
	}
	if sa != nil {
		ctx = context.WithValue(ctx, subAnswersKey{}, sa)
	}
	return ctx
}

type subAnswersKey struct{}

// subAnswers are answers to the pauses of a sub-chain run, by inner id.
type subAnswers struct {
	runID  string
	values map[string]any
}

// resumeSub resumes a paused sub-chain run with each answer in turn (in id
// order, so a replay resumes alike).
func (r *run) resumeSub(ctx context.Context, sa *subAnswers) (*Result, error) {
	ids := make([]string, 0, len(sa.values))
	for id := range sa.values {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var res *Result
	for _, id := range ids {
		var err error
		res, err = r.engine.Resume(ctx, sa.runID, &ResumeValue{Value: sa.values[id]}, nil, ResumeOptions{PauseID: id})
		if err != nil {
			return nil, err
		}
		if res.Status != chain.StatusPaused {
			break
		}
	}
	return res, nil
}

// subPaused is the pausedErr of a sub-chain run that paused: its pending
// pauses, by their own ids.
func subPaused(res *Result) *pausedErr {
	pe := &pausedErr{inner: true}
	for _, p := range res.Pending {
		pe.pauses = append(pe.pauses, slotPause{id: p.PauseID, prompt: p.Prompt, sub: res.RunID})
	}
	return pe
}

// pauseSlots: node i stopped because pauses inside it wait for answers. The
// slots it finished are logged (a resume keeps them), then each new pause.
func (r *run) pauseSlots(i int, pe *pausedErr, c completion) {
	nd := &r.chain.Nodes[i]
	if pe.inner {
		pe = pe.prefixed(nd.ID, nil)
	}
	r.nodes.result[i].Ended = c.ended
	if len(pe.done) > 0 {
		rec := &SlotsRecord{NodeID: nd.ID, Done: pe.done}
		r.addCheckpoint(Checkpoint{Kind: CheckpointSlots, Slots: rec})
		r.applySlots(i, rec)
	}
	r.nodes.status[i] = nsPaused
	for _, p := range pe.pauses {
		if slices.ContainsFunc(r.pending, func(q Pending) bool { return q.PauseID == p.id }) {
			continue
		}
		rec := &PauseRecord{NodeID: nd.ID, PauseID: p.id, Slot: p.slot, SubRunID: p.sub, Prompt: p.prompt, Input: c.input,
			Attempts: c.attempts, Iteration: r.nodes.iterations[i]}
		r.emit(Event{NodeID: nd.ID, PauseID: p.id, Phase: PhasePaused, Prompt: p.prompt, Item: p.slot, Attempt: rec.Attempts, Iteration: rec.Iteration})
		r.addCheckpoint(Checkpoint{Kind: CheckpointPause, Pause: rec})
		r.applyPause(i, rec, time.Now())
	}
	r.applyDeferred(i)
}

// applySlots keeps finished slots of node i, live and in replay.
func (r *run) applySlots(i int, rec *SlotsRecord) {
	if r.nodes.slots == nil {
		r.nodes.slots = map[int]map[int]SlotOutput{}
	}
	m := r.nodes.slots[i]
	if m == nil {
		m = map[int]SlotOutput{}
		r.nodes.slots[i] = m
	}
	for _, d := range rec.Done {
		m[d.Slot] = d
	}
}

// clearPauses forgets node i's slots once it finished: a later pass starts
// afresh.
func (r *run) clearPauses(i int) {
	delete(r.nodes.slots, i)
	delete(r.nodes.slotAnswers, i)
}

// pendingIn lists the pauses a log leaves waiting, oldest first: pause
// entries less the ones a resume entry answered; an end that is not paused
// leaves none (the store clears them the same way).
func pendingIn(log []Checkpoint) []Pending {
	var out []Pending
	for k := range log {
		cp := &log[k]
		switch cp.Kind {
		case CheckpointPause:
			out = append(out, Pending{PauseID: cp.Pause.ID(), NodeID: cp.Pause.NodeID, Prompt: cp.Pause.Prompt, Since: cp.Time,
				slot: cp.Pause.Slot, sub: cp.Pause.SubRunID, approval: cp.Pause.Approval})
		case CheckpointResume:
			id := cp.Resume.PauseID
			if id == "" {
				id = cp.Resume.NodeID
			}
			out = slices.DeleteFunc(out, func(p Pending) bool { return p.PauseID == id })
		case CheckpointEnd:
			if cp.End.Status != chain.StatusPaused {
				out = nil
			}
		}
	}
	return out
}

// PendingPauses lists the pauses a run's log leaves waiting for an answer.
func PendingPauses(log []Checkpoint) []Pending { return pendingIn(log) }

// PauseToAnswer is the pause a resume of the run with pauseID would answer
// (the one named, or the only one pending), chosen as StartResume chooses
// it: a host checks who may answer it before handing the answer on.
func PauseToAnswer(runID, pauseID string, log []Checkpoint) (Pending, error) {
	return choosePause(runID, pauseID, log)
}

// choosePause picks the pause a resume answers: the one named, or the only
// one pending. Naming none while several wait, or one the run never had, is
// a *ChainResumeError that names the pending ids; naming one already
// answered is an *AlreadyResumedError.
func choosePause(runID, want string, log []Checkpoint) (Pending, error) {
	pend := pendingIn(log)
	ids := make([]string, len(pend))
	for k, p := range pend {
		ids[k] = p.PauseID
	}
	if want == "" {
		switch len(pend) {
		case 0:
			return Pending{}, &AlreadyResumedError{RunID: runID}
		case 1:
			return pend[0], nil
		}
		return Pending{}, &ChainResumeError{ChainCheckpointError{RunID: runID,
			Msg: fmt.Sprintf("the run has %d pending pauses; name one with pause_id (pending: %s)", len(pend), strings.Join(ids, ", "))}}
	}
	if k := slices.Index(ids, want); k >= 0 {
		return pend[k], nil
	}
	for k := range log {
		if cp := &log[k]; cp.Kind == CheckpointPause && cp.Pause.ID() == want {
			return Pending{}, &AlreadyResumedError{RunID: runID, PauseID: want}
		}
	}
	return Pending{}, &ChainResumeError{ChainCheckpointError{RunID: runID,
		Msg: fmt.Sprintf("the run has no pause %q (pending: %s)", want, strings.Join(ids, ", "))}}
}
