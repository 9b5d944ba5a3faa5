package live

import (
	"context"
	"errors"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// Stream defaults (Config fields and serve flags override them).
const (
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultStreamBufferBytes  = 256 << 10
	DefaultStreamBufferTotal  = 16 << 20
	// streamKeepBuffer is the largest buffer a connection keeps between
	// writes; a larger one (a big frame) is given back after its write.
	streamKeepBuffer = 16 << 10
)

// StreamRunEvents is the kind of a run's event stream, the label of the
// stream metrics (GET /v1/runs/{id}/events and the run page's); the other
// doors name theirs (a2ehttp.StreamRun, a2ehttp.StreamSession).
const StreamRunEvents = "run_events"

// errStreamStalled ends a stream whose client did not take its frames (or
// that found no room in the budget) within the write timeout.
var errStreamStalled = errors.New("web: the client did not take the stream's frames within the write timeout")

// streamPool is the server-wide budget of bytes buffered for streaming
// responses, and their counts.
type StreamPool struct {
	timeout  time.Duration
	perConn  int
	total    int64
	mu       sync.Mutex
	used     int64
	freed    chan struct{} // closed (and replaced) when bytes are given back
	kinds    []string      // the stream kinds counted
	conns    map[string]*atomic.Int64
	timeouts map[string]*atomic.Uint64 // write deadlines passed
	waits    map[string]*atomic.Uint64 // no room within the deadline
	// reads admits replayReaders store reads (and their encoding) at once:
	// a read decodes events before their size is known, so it is the
	// number of readers that bounds what reads hold.
	reads chan struct{}
	// sizes is the largest frame seen per run (at most maxSizeHints runs):
	// a New replay of a run reserves room for it before its first read,
	// instead of reading a large event only to drop it for want of room.
	sizes map[string]int
}

const maxSizeHints = 1024

// frameHint is the largest frame a replay of run has seen (0: none).
func (p *StreamPool) frameHint(run string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sizes[run]
}

// noteFrame records a frame size of run's replay.
func (p *StreamPool) noteFrame(run string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= p.sizes[run] {
		return
	}
	if len(p.sizes) >= maxSizeHints {
		clear(p.sizes)
	}
	p.sizes[run] = n
}

// replayReaders is how many replays read and encode a page at once.
const replayReaders = 2

// NewStreamPool returns a pool of total bytes, perConn at most per
// connection, whose writes wait up to timeout; kinds are the streams it
// counts (StreamRunEvents and the other doors' kinds).
func NewStreamPool(timeout time.Duration, perConn int, total int64, kinds ...string) *StreamPool {
	p := &StreamPool{timeout: timeout, perConn: perConn, total: total, freed: make(chan struct{}), reads: make(chan struct{}, replayReaders), sizes: map[string]int{},
		conns: map[string]*atomic.Int64{}, timeouts: map[string]*atomic.Uint64{}, waits: map[string]*atomic.Uint64{}}
	p.kinds = kinds
	for _, k := range kinds {
		p.conns[k] = new(atomic.Int64)
		p.timeouts[k] = new(atomic.Uint64)
		p.waits[k] = new(atomic.Uint64)
	}
	return p
}

// tryAcquire takes n bytes of the budget if they fit. A frame larger than
// the whole budget fits when nothing else is held, so it is still sent.
func (p *StreamPool) tryAcquire(n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+n > p.total && p.used > 0 {
		return false
	}
	p.used += n
	return true
}

// acquire waits for n bytes of the budget until ctx ends or until passes.
func (p *StreamPool) acquire(ctx context.Context, n int64, until time.Time) error {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	for {
		p.mu.Lock()
		if p.used+n <= p.total || p.used == 0 {
			p.used += n
			p.mu.Unlock()
			return nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return errStreamStalled
		}
	}
}

// release gives n bytes back and wakes the waiters.
func (p *StreamPool) release(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.used -= n
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}

// Buffered is how many bytes the open streams hold.
func (p *StreamPool) Buffered() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Connections is the number of open streams of a kind ("" for all).
func (p *StreamPool) Connections(kind string) int64 {
	if kind != "" {
		return p.conns[kind].Load()
	}
	var n int64
	for _, c := range p.conns {
		n += c.Load()
	}
	return n
}

// Collectors are the pool's metrics.
func (p *StreamPool) Collectors() []prometheus.Collector {
	var cs []prometheus.Collector
	cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "studio_stream_buffered_bytes",
		Help: "Bytes buffered for streaming responses (event streams, A2E streams), out of --stream-buffer-total.",
	}, func() float64 { return float64(p.Buffered()) }))
	for _, k := range p.kinds {
		conns, timeouts, waits := p.conns[k], p.timeouts[k], p.waits[k]
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "studio_stream_connections", Help: "Open streaming responses by kind, finished runs' replays included.",
				ConstLabels: prometheus.Labels{"kind": k},
			}, func() float64 { return float64(conns.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "studio_stream_write_timeouts_total", Help: "Streams disconnected because the client did not take a write within --stream-write-timeout.",
				ConstLabels: prometheus.Labels{"kind": k},
			}, func() float64 { return float64(timeouts.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "studio_stream_budget_timeouts_total", Help: "Streams disconnected because --stream-buffer-total had no room for their next frame within --stream-write-timeout.",
				ConstLabels: prometheus.Labels{"kind": k},
			}, func() float64 { return float64(waits.Load()) }),
		)
	}
	return cs
}

// streamWriter writes one streaming response's frames: buffered, within
// the budget, each write under the deadline. Not safe for concurrent use.
type streamWriter struct {
	pool *StreamPool
	kind string
	w    http.ResponseWriter
	rc   *http.ResponseController
	buf  []byte
	// borrowed: buf is a frame the caller passed (perhaps shared with
	// other streams), never appended to in place nor kept after its write.
	borrowed bool
	held     int64     // bytes of the budget this connection holds
	due      time.Time // when the bytes waiting now must have left; zero: none wait
	err      error     // the first failure; every later call answers it
	done     bool
}

// OpenStream counts a streaming response open; close ends it.
func (s *Streams) OpenStream(c echo.Context, kind string) *streamWriter {
	s.streams.conns[kind].Add(1)
	w := c.Response()
	// The controller on the writer under echo's: echo's Flush swallows the
	// error of a flush that missed its deadline.
	return &streamWriter{pool: s.streams, kind: kind, w: w, rc: http.NewResponseController(w.Writer)}
}

// close gives back what the stream holds and stops counting it.
func (sw *streamWriter) close() {
	if sw.done {
		return
	}
	sw.done = true
	sw.drop()
	sw.pool.conns[sw.kind].Add(-1)
}

// Close is close, for the doors that hold the stream as their own
// interface (a2ehttp.StreamWriter).
func (sw *streamWriter) Close() { sw.close() }

// Err is the stream's first failure; every later call answers it.
func (sw *streamWriter) Err() error { return sw.err }

// drop gives back the buffer and its bytes.
func (sw *streamWriter) drop() {
	sw.buf, sw.borrowed = nil, false
	sw.pool.release(sw.held)
	sw.held = 0
}

// Start sends the status line and headers, within the deadline.
func (sw *streamWriter) Start(status int) error {
	sw.w.WriteHeader(status)
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.pool.timeout))
	if err := sw.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			sw.pool.timeouts[sw.kind].Add(1)
		}
		return sw.fail(err)
	}
	return nil
}

// Buffered is how many bytes wait to be written.
func (sw *streamWriter) Buffered() int { return len(sw.buf) }

// Full reports whether the buffer reached its bound and should be flushed.
func (sw *streamWriter) Full() bool { return len(sw.buf) >= sw.pool.perConn }

// startClock starts the deadline of the bytes about to wait.
func (sw *streamWriter) startClock() {
	if sw.due.IsZero() {
		sw.due = time.Now().Add(sw.pool.timeout)
	}
}

// TryAppend buffers frame if the budget has room for it now; false when it
// has not (the caller drops the frame and waits with Reserve). A frame
// larger than the buffer is written from where it is, not copied, so the
// caller must not change it until the next Flush.
func (sw *streamWriter) TryAppend(frame []byte) (bool, error) {
	if sw.err != nil {
		return false, sw.err
	}
	sw.startClock()
	if need := int64(len(sw.buf) + len(frame)); need > sw.held {
		if !sw.pool.tryAcquire(need - sw.held) {
			return false, nil
		}
		sw.held = need
	}
	if len(sw.buf) == 0 && cap(sw.buf) < len(frame) {
		// Capped at its length: a later append copies instead of writing
		// past the end of someone else's frame.
		sw.buf, sw.borrowed = frame[:len(frame):len(frame)], true
	} else {
		sw.buf = append(sw.buf, frame...)
	}
	return true, nil
}

// Reserve waits (within the deadline) until the budget has room for n more
// bytes than are buffered, and holds them for the next TryAppend. The
// buffered frames are written first, so that waiting holds nothing else.
func (sw *streamWriter) Reserve(ctx context.Context, n int) error {
	if sw.err != nil {
		return sw.err
	}
	if int64(len(sw.buf)+n) <= sw.held {
		return nil
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	if int64(n) <= sw.held {
		return nil
	}
	sw.startClock()
	err := sw.pool.acquire(ctx, int64(n)-sw.held, sw.due)
	if err != nil {
		if errors.Is(err, errStreamStalled) {
			sw.pool.waits[sw.kind].Add(1)
		}
		return sw.fail(err)
	}
	sw.held = int64(n)
	return nil
}

// enterRead waits for one of the replay readers' places; leaveRead gives
// it back. The wait is the server's, not the client's, so it is bounded by
// the request alone: a waiting stream holds no frame (only the room it
// reserved), and cutting healthy clients of a loaded server would only
// have them reconnect and read again.
func (sw *streamWriter) enterRead(ctx context.Context) error {
	if sw.err != nil {
		return sw.err
	}
	select {
	case sw.pool.reads <- struct{}{}:
		return nil
	case <-ctx.Done():
		return sw.fail(ctx.Err())
	}
}

func (sw *streamWriter) leaveRead() { <-sw.pool.reads }

// Append buffers frame, waiting for room in the budget if need be (within
// the deadline), and writes the buffer once it is full. As with
// TryAppend, frame must not change until the next Flush.
func (sw *streamWriter) Append(ctx context.Context, frame []byte) error {
	ok, err := sw.TryAppend(frame)
	if err != nil {
		return err
	}
	if !ok {
		if err := sw.Reserve(ctx, len(frame)); err != nil {
			return err
		}
		if ok, err = sw.TryAppend(frame); err != nil {
			return err
		} else if !ok {
			return sw.fail(errStreamStalled) // unreachable: the room is held
		}
	}
	if sw.Full() {
		return sw.Flush()
	}
	return nil
}

// Flush writes the buffered frames and flushes the connection, both before
// the deadline; then gives back the bytes.
func (sw *streamWriter) Flush() error {
	if sw.err != nil {
		return sw.err
	}
	if len(sw.buf) == 0 {
		sw.due = time.Time{}
		return nil
	}
	sw.startClock()
	// Not every ResponseWriter has a deadline (a recorder in tests): then
	// the write has none, as before.
	_ = sw.rc.SetWriteDeadline(sw.due)
	_, err := sw.w.Write(sw.buf)
	if err == nil {
		err = sw.rc.Flush()
		if errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			sw.pool.timeouts[sw.kind].Add(1)
		}
		return sw.fail(err)
	}
	sw.due = time.Time{}
	if sw.borrowed || cap(sw.buf) > streamKeepBuffer {
		sw.drop()
		return nil
	}
	sw.buf = sw.buf[:0]
	if keep := int64(cap(sw.buf)); keep < sw.held {
		sw.pool.release(sw.held - keep)
		sw.held = keep
	}
	return nil
}

// fail records the stream's end and gives back what it holds. The
// deadline moves to now, so nothing more is written (not even the chunked
// body's end, which would let the connection be reused): the server closes
// the connection when the handler returns.
func (sw *streamWriter) fail(err error) error {
	if sw.err == nil {
		sw.err = err
		_ = sw.rc.SetWriteDeadline(time.Now())
	}
	sw.drop()
	return sw.err
}
