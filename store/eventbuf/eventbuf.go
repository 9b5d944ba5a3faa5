// Package eventbuf is the event writer the store backends share: events are
// buffered and written in batches by a background goroutine, so a run never
// waits for the database.
package eventbuf

import (
	"context"

	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
)

// EventWriter is an engine.EventSink (and engine.Flusher) that stores events
// in the database without making the run wait for the disk: Emit appends to a
// buffer, and a background goroutine writes the buffer in batches, each in one
// transaction, in emit order.
//
// A batch that cannot be written is retried with backoff; after MaxRetries
// failed attempts its events are dropped, the failure is logged and the next
// Flush returns it. Flush and Close report every failure.
type EventWriter struct {
	db       Backend
	batch    int
	interval time.Duration
	retries  int
	log      *slog.Logger

	mu       sync.Mutex
	buf      []engine.Event
	writing  []engine.Event // the batch being written, out of buf until it is committed
	spare    []engine.Event
	emitted  uint64 // events accepted by Emit
	settled  uint64 // events committed, or dropped after retries
	dropped  uint64
	err      error               // a loss not yet reported by Flush
	lost     map[string]*lostRun // runs whose events were dropped, until FlushRun
	failing  bool                // inside a run of failed attempts (log once)
	flushing int                 // Flush calls waiting
	changed  chan struct{}
	closed   bool

	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// lostRun is what a run lost: how many events, and the last write error.
type lostRun struct {
	n   uint64
	err error
}

// maxLostRuns bounds how many runs' losses wait for their FlushRun; past
// it, further runs' losses are reported by Flush (and the log) only.
const maxLostRuns = 10000

var (
	_ store.RunFlusher   = (*EventWriter)(nil)
	_ store.BufferReader = (*EventWriter)(nil)
	_ engine.EventSink   = (*EventWriter)(nil)
	_ engine.Flusher     = (*EventWriter)(nil)
)

// Backend is what a store backend gives the writer.
type Backend interface {
	// WriteEventBatch stores a batch in one transaction; bodies[i] is the
	// JSON of batch[i].
	WriteEventBatch(ctx context.Context, batch []engine.Event, bodies []string) error
	// AppendEvents stores events directly (late events after Close).
	AppendEvents(ctx context.Context, events []engine.Event) error
}

// New starts an EventWriter on db; close it before closing db.
func New(db Backend, opts store.EventWriterOptions) *EventWriter {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.Interval <= 0 {
		opts.Interval = 20 * time.Millisecond
	}
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = 5
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &EventWriter{
		db: db, batch: opts.BatchSize, interval: opts.Interval, retries: opts.MaxRetries, log: opts.Logger,
		changed: make(chan struct{}),
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go w.loop()
	return w
}

func (w *EventWriter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Emit buffers an event. It never waits for the disk.
func (w *EventWriter) Emit(e engine.Event) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		// Late event after Close: store it directly rather than lose it.
		if err := w.db.AppendEvents(context.Background(), []engine.Event{e}); err != nil {
			w.log.Error("store: event after the event writer was closed was not stored", "run_id", e.RunID, "seq", e.Seq, "err", err)
		}
		return
	}
	w.buf = append(w.buf, e)
	w.emitted++
	n := len(w.buf)
	w.mu.Unlock()
	if n == 1 || n >= w.batch {
		w.wake()
	}
}

// Buffered appends to dst the events of runID after seq after that were
// emitted but are not committed yet: the batch being written, then the
// buffer (store.BufferReader). Reading them does not wait for the disk,
// nor take a write failure meant for whoever flushes.
func (w *EventWriter) Buffered(runID string, after int64, dst []engine.Event) []engine.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, part := range [2][]engine.Event{w.writing, w.buf} {
		for i := range part {
			if part[i].RunID == runID && part[i].Seq > after {
				dst = append(dst, part[i])
			}
		}
	}
	return dst
}

// Flush waits until every event emitted before the call is committed (or
// given up on), and returns any write failure not yet reported.
func (w *EventWriter) Flush(ctx context.Context) error {
	if err := w.settle(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	w.err = nil
	return err
}

// FlushRun waits like Flush, then returns an *store.EventsLostError when
// events of runID were dropped since its last FlushRun. It leaves other
// failures to Flush.
func (w *EventWriter) FlushRun(ctx context.Context, runID string) error {
	if err := w.settle(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lost[runID]
	if l == nil {
		return nil
	}
	delete(w.lost, runID)
	return &store.EventsLostError{RunID: runID, Events: l.n, Err: l.err}
}

// settle waits until every event emitted before the call is committed or
// given up on.
func (w *EventWriter) settle(ctx context.Context) error {
	w.mu.Lock()
	target := w.emitted
	w.flushing++
	defer func() {
		w.flushing--
		w.mu.Unlock()
	}()
	for w.settled < target {
		ch := w.changed
		w.mu.Unlock()
		w.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			w.mu.Lock()
			return fmt.Errorf("store: flush events: %w", ctx.Err())
		}
		w.mu.Lock()
	}
	return nil
}

// Close writes everything buffered and stops the writer. It returns any
// failure not yet reported by Flush.
func (w *EventWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.err
	w.err = nil
	return err
}

// Dropped returns how many events were given up on after failed writes.
func (w *EventWriter) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

func (w *EventWriter) loop() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	var retryAt time.Time
	attempts := 0
	for {
		fired := false
		select {
		case <-w.kick:
		case <-timer.C:
			armed, fired = false, true
		case <-w.stop:
			timer.Stop()
			w.drain(attempts)
			return
		}
		w.mu.Lock()
		n, urgent := len(w.buf), len(w.buf) >= w.batch || w.flushing > 0
		w.mu.Unlock()
		if n == 0 {
			continue
		}
		if wait := time.Until(retryAt); wait > 0 {
			if !armed {
				timer.Reset(wait)
				armed = true
			}
			continue
		}
		if !urgent && !fired {
			if !armed {
				timer.Reset(w.interval)
				armed = true
			}
			continue
		}
		if armed {
			timer.Stop()
			armed = false
		}
		if err := w.writeOnce(); err != nil {
			attempts++
			if w.giveUp(attempts, err) {
				attempts = 0
				retryAt = time.Time{}
			} else {
				retryAt = time.Now().Add(w.interval << min(attempts, 6))
			}
		} else {
			attempts = 0
			retryAt = time.Time{}
		}
		w.wake() // more may have arrived meanwhile
	}
}

// writeOnce writes everything buffered in one transaction. On failure the
// events go back to the front of the buffer.
func (w *EventWriter) writeOnce() error {
	w.mu.Lock()
	batch := w.buf
	if len(batch) == 0 {
		w.mu.Unlock()
		return nil
	}
	w.buf = w.spare[:0]
	w.spare = nil
	w.writing = batch // still read by Buffered until it is committed
	w.mu.Unlock()
	err := w.write(batch)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = nil
	if err != nil {
		w.buf = append(batch, w.buf...)
		return err
	}
	if w.failing {
		w.failing = false
		w.log.Info("store: event writes recovered")
	}
	w.settled += uint64(len(batch))
	clear(batch)
	w.spare = batch[:0]
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

// giveUp logs a failed attempt (once per run of failures) and, after the
// last attempt, drops the events that were being written. It reports whether
// it dropped them.
func (w *EventWriter) giveUp(attempts int, err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.failing {
		w.failing = true
		w.log.Error("store: writing events failed; retrying", "err", err)
	}
	if attempts < w.retries {
		return false
	}
	n := len(w.buf)
	var runID string
	if n > 0 {
		runID = w.buf[0].RunID
	}
	w.log.Error("store: events dropped after repeated write failures", "events", n, "run_id", runID, "err", err)
	lost := fmt.Errorf("store: %d events (run %s, seq %d..) were not stored: %w", n, runID, firstSeq(w.buf), err)
	w.err = errors.Join(w.err, lost)
	if w.lost == nil {
		w.lost = map[string]*lostRun{}
	}
	for i := range w.buf {
		id := w.buf[i].RunID
		l := w.lost[id]
		if l == nil {
			if len(w.lost) >= maxLostRuns {
				continue
			}
			l = &lostRun{}
			w.lost[id] = l
		}
		l.n++
		l.err = err
	}
	clear(w.buf)
	w.buf = w.buf[:0]
	w.dropped += uint64(n)
	w.settled += uint64(n)
	close(w.changed)
	w.changed = make(chan struct{})
	return true
}

func firstSeq(es []engine.Event) int64 {
	if len(es) == 0 {
		return 0
	}
	return es[0].Seq
}

// drain writes what is left at Close, retrying without long waits.
func (w *EventWriter) drain(attempts int) {
	for {
		w.mu.Lock()
		n := len(w.buf)
		w.mu.Unlock()
		if n == 0 {
			return
		}
		if err := w.writeOnce(); err != nil {
			attempts++
			if !w.giveUp(attempts, err) {
				time.Sleep(w.interval)
			}
			continue
		}
		attempts = 0
	}
}

// write stores a batch in one transaction.
func (w *EventWriter) write(batch []engine.Event) error {
	bodies := make([]string, len(batch))
	for i := range batch {
		b, err := cplog.MarshalEvent(&batch[i])
		if err != nil {
			// An event that is not JSON-safe is stored with its output replaced,
			// rather than blocking every event after it.
			e := batch[i]
			e.Output = map[string]any{"unencodable": err.Error()}
			e.OutputJSON = nil
			e.Progress = nil
			b, _ = cplog.MarshalString(&e)
		}
		bodies[i] = b
	}
	return w.db.WriteEventBatch(context.Background(), batch, bodies)
}
