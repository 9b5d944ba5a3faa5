package engine

import (
	"context"
	"sync"
)

// emitter numbers a run's events and hands them to its sinks. Workers emit
// too, so every field is under mu; only the coordinator sets the numbering
// (replaying a log, resuming) and closes it.
type emitter struct {
	mu     sync.Mutex
	seq    int64 // the last event's seq
	sink   EventSink
	closed bool // the run returned; late events are dropped
}

// emit gives ev the next seq and hands it to the sinks, in order; an event
// after close (a worker abandoned when the run stopped) is dropped.
func (e *emitter) emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.seq++
	ev.Seq = e.seq
	e.sink.Emit(ev)
}

// last is the seq of the last event emitted.
func (e *emitter) last() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq
}

// continueAfter makes seq the last event's: a resumed run numbers on from it.
func (e *emitter) continueAfter(seq int64) {
	e.mu.Lock()
	e.seq = seq
	e.mu.Unlock()
}

// saw raises the numbering to seq when a replayed checkpoint was written
// after an event the emitter has not counted.
func (e *emitter) saw(seq int64) {
	e.mu.Lock()
	if seq > e.seq {
		e.seq = seq
	}
	e.mu.Unlock()
}

// close drops every later event, so the sinks flushed next hold the whole run.
func (e *emitter) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
}

// flush flushes the sinks that buffer (a MultiSink's, each in turn), even
// when ctx is cancelled: the run's last events must reach them.
func (e *emitter) flush(ctx context.Context) {
	for _, s := range flushers(e.sink) {
		_ = s.Flush(context.WithoutCancel(ctx))
	}
}

// flushers lists the sinks in s that buffer.
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
