package engine

import (
	"context"
	"time"
)

// checkpointBatcher writes a run's checkpoints in the background, one batch
// at a time (group commit): while a write is in flight the coordinator keeps
// running nodes and collecting entries, and hands them over as the next
// batch when the write returns. A run therefore pays one commit per batch,
// not per node. A crash can lose the entries of the batch in flight; their
// nodes simply run again on resume. Pauses and the run's end wait for every
// write (sync).
//
// It is owned by the coordinator goroutine; only the write itself runs on
// another one, and reports on done.
type checkpointBatcher struct {
	to      Checkpointer
	runID   string
	ctx     context.Context // not cancelled with the run: a stopping run's last entries matter most
	pending []Checkpoint    // collected, not yet handed to a write
	spare   []Checkpoint    // a written batch's array, reused for the next one
	busy    bool            // a write is in flight
	done    chan cpWrite    // its result
	timer   *time.Timer
	delayC  <-chan time.Time // armed while a small batch waits for company
}

// checkpointBatch bounds how many checkpoints wait for one write.
const checkpointBatch = 256

// Group commit waits a little for company: a write of one or two entries
// costs nearly what a write of fifty does (the commit dominates), so while
// nodes are still running a small batch waits up to checkpointDelay.
const (
	checkpointEager = 32
	checkpointDelay = time.Millisecond
)

// cpWrite is a finished background checkpoint write.
type cpWrite struct {
	batch []Checkpoint
	err   error
}

func newCheckpointBatcher(ctx context.Context, to Checkpointer, runID string, nodes int) checkpointBatcher {
	return checkpointBatcher{to: to, runID: runID, ctx: context.WithoutCancel(ctx),
		pending: make([]Checkpoint, 0, min(nodes+2, checkpointBatch)), done: make(chan cpWrite, 1)}
}

// add collects an entry. A full batch is handed over at once, after waiting
// for the write in flight (what waits in memory stays bounded); that
// write's error is returned.
func (b *checkpointBatcher) add(cp Checkpoint) error {
	b.pending = append(b.pending, cp)
	if len(b.pending) < checkpointBatch {
		return nil
	}
	var err error
	if b.busy {
		err = b.written(<-b.done)
	}
	b.flush()
	return err
}

// flush hands the collected entries to a background write if none is in
// flight.
func (b *checkpointBatcher) flush() {
	if len(b.pending) == 0 || b.busy {
		return
	}
	batch := b.pending
	b.pending, b.spare = b.spare[:0], nil // the batch written last time, now free
	if cap(b.pending) == 0 {
		b.pending = make([]Checkpoint, 0, min(2*len(batch), checkpointBatch))
	}
	b.busy = true
	go func() {
		err := b.to.Append(b.ctx, b.runID, batch)
		b.done <- cpWrite{batch, err}
	}()
}

// coalesce flushes a full enough batch now (any batch when the run is
// stopping), or arms the delay.
func (b *checkpointBatcher) coalesce(stopping bool) {
	if len(b.pending) == 0 || b.busy || b.delayC != nil {
		return
	}
	if len(b.pending) >= checkpointEager || stopping {
		b.flush()
		return
	}
	if b.timer == nil {
		b.timer = time.NewTimer(checkpointDelay)
	} else {
		b.timer.Reset(checkpointDelay)
	}
	b.delayC = b.timer.C
}

// delayed: the delay armed by coalesce ran out.
func (b *checkpointBatcher) delayed() {
	b.delayC = nil
	b.flush()
}

// written takes a finished background write back; it returns its error.
func (b *checkpointBatcher) written(w cpWrite) error {
	b.busy = false
	clear(w.batch) // drop references to outputs before reusing the array
	b.spare = w.batch[:0]
	return w.err
}

// sync waits until every collected entry is written and returns the first
// error.
func (b *checkpointBatcher) sync() error {
	var err error
	if b.busy {
		err = b.written(<-b.done)
	}
	if len(b.pending) == 0 {
		return err
	}
	// Nothing else to do but wait: write on this goroutine (a hand-off to
	// another one would only add a wake-up on another core).
	batch := b.pending
	b.pending = b.pending[:0:0]
	if werr := b.written(cpWrite{batch, b.to.Append(b.ctx, b.runID, batch)}); err == nil {
		err = werr
	}
	return err
}
