package engine

import (
	"context"
	"sync"
)

// mailbox takes answers to a run's pauses while the run executes in this
// process, so that answers to different pauses sent at once all succeed:
// the first continues the run, the others are claimed and handed to it
// (docs/design.md, "Pauses anywhere").
type mailbox struct {
	mu      sync.Mutex
	answers []*ResumeRecord
	closed  bool          // the run stopped taking answers: it is ending
	wake    chan struct{} // cap 1: answers are waiting
	done    chan struct{} // closed with res, err once the run ended
	res     *Result
	err     error
}

// openBox registers the run's mailbox for the length of its loop.
func (r *run) openBox() {
	b := &mailbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
	s := &r.engine.active
	s.mu.Lock()
	if s.boxes == nil {
		s.boxes = map[string]*mailbox{}
	}
	s.boxes[r.id] = b
	s.mu.Unlock()
	r.box = b
}

// takeMail applies the answers that came in. With closing, it closes the
// box when none came (the run may end); it reports whether it took any.
func (r *run) takeMail(closing bool) bool {
	if r.box == nil {
		return false
	}
	b := r.box
	b.mu.Lock()
	recs := b.answers
	b.answers = nil
	if closing && len(recs) == 0 {
		b.closed = true
	}
	b.mu.Unlock()
	for _, rec := range recs {
		r.answer(rec)
	}
	return len(recs) > 0
}

// answer applies a live answer: at once when its node is paused, after the
// node stops when it is running.
func (r *run) answer(rec *ResumeRecord) {
	if i, ok := r.graph.Idx[rec.NodeID]; ok && r.nodes.status[i] == nsRunning {
		r.nodes.deferred = append(r.nodes.deferred, rec)
		return
	}
	r.addCheckpoint(Checkpoint{Kind: CheckpointResume, Resume: rec})
	r.applyResume(rec)
}

// closeBox publishes the run's result to whoever handed it answers.
func (r *run) closeBox(res *Result, err error) {
	b := r.box
	if b == nil {
		return
	}
	s := &r.engine.active
	s.mu.Lock()
	if s.boxes[r.id] == b {
		delete(s.boxes, r.id)
	}
	s.mu.Unlock()
	b.mu.Lock()
	b.closed = true
	b.res, b.err = res, err
	b.mu.Unlock()
	close(b.done)
}

// deliver claims pause of the running run runID and hands the answer to it.
// ok is false when the run does not take answers here (not running in this
// process, or ending): the caller treats the run as busy.
func (e *Engine) deliver(ctx context.Context, runID string, rec *ResumeRecord) (b *mailbox, ok bool, err error) {
	e.active.mu.Lock()
	b = e.active.boxes[runID]
	e.active.mu.Unlock()
	if b == nil {
		return nil, false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, false, nil
	}
	if _, err := e.opts.Checkpointer.ClaimInterrupt(ctx, runID, rec.PauseID); err != nil {
		return nil, true, err
	}
	b.answers = append(b.answers, rec)
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return b, true, nil
}
