package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// sseFlushGap is the least time between two flushes of a live stream: a
// burst of events goes out in one write instead of one per event, which is
// what lets hundreds of watchers follow a fast run.
const sseFlushGap = 10 * time.Millisecond

// A replay reads the store in pages bounded by count and by bytes: at most
// replayPageEvents events, and about the stream's buffer bound
// (Config.StreamBufferBytes) of stored events.
const replayPageEvents = 256

// sseStream writes one run's events to one watcher, in the order its
// runs.Watch gives them.
type sseStream struct {
	s     *Streams
	c     echo.Context
	out   *streamWriter
	watch *runs.Watch
	run   string
	// withhold: the watcher may not see credentialed calls' outputs
	// (withheld.go).
	withhold bool
	// page: the run page's stream (page_stream.go), whose frames carry
	// what the page shows; nil: the API's.
	page *pageView
	// frame is the size of the largest frame seen, the room a read asks
	// for before it reads.
	frame int
}

// GET /v1/runs/{id}/events
func (s *Streams) RunEvents(c echo.Context) error {
	id := c.Param("id")
	after, err := streamAfter(c)
	if err != nil {
		return err
	}
	if _, err := s.DB.GetRunInfo(c.Request().Context(), id); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	return s.streamRun(c, id, after, nil)
}

// streamAfter is the seq a stream resumes after: Last-Event-ID, else the
// query's after, else 0.
func streamAfter(c echo.Context) (int64, error) {
	raw := c.Request().Header.Get("Last-Event-ID")
	if raw == "" {
		raw = c.QueryParam("after")
	}
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("Last-Event-ID (or after) must be an event seq, a non-negative integer; got %q", raw), map[string]any{"parameter": "after"})
	}
	return n, nil
}

// streamRun streams run id's events after seq after: the API's frames, or
// the run page's (page set).
//
// The run service's Watch orders the events without gaps or duplicates
// (replay after Last-Event-ID, then live); this writes their frames, the
// heartbeats and the run's result, within the stream's bounds.
func (s *Streams) streamRun(c echo.Context, id string, after int64, page *pageView) error {
	ctx := c.Request().Context()
	watch, err := s.Runs.Watch(id, after)
	if err != nil {
		return err // a watcher limit: 503 with Retry-After
	}
	defer watch.Close()

	out := s.OpenStream(c, StreamRunEvents)
	defer out.close()
	st := &sseStream{s: s, c: c, out: out, watch: watch, run: id, withhold: !s.SeesCredentialed(c), page: page}
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	if err := out.Start(http.StatusOK); err != nil {
		return nil
	}

	if err := st.catchUp(ctx); err != nil {
		return st.fail(err)
	}
	if !watch.Live() {
		// Not executing here (finished, paused, or never started in this
		// process): the store holds the whole run.
		return st.finish(ctx)
	}

	tick := time.NewTicker(s.heartbeat)
	defer tick.Stop()
	// Frames are written as they come, but the connection is flushed at most
	// once per sseFlushGap: under a burst, one write carries many events.
	lastFlush := time.Now()
	flushTimer := time.NewTimer(time.Hour)
	flushTimer.Stop()
	defer flushTimer.Stop()
	var flushC <-chan time.Time
	flushNow := func() error {
		flushC = nil
		lastFlush = time.Now()
		tick.Reset(s.heartbeat)
		return st.flush()
	}
	if pos := watch.QueuePosition(); pos > 0 {
		// Waiting for a slot: say so now; its events follow once it starts.
		q := map[string]any{"run_id": id, "status": "queued", "position": pos}
		if why := s.Runs.MemoryWait(); why != "" {
			q["reason"] = why // the memory budget holds it back, not the slots
		}
		data, err := json.Marshal(q)
		if err != nil {
			return fmt.Errorf("run %s: queued frame: %w", id, err)
		}
		frame := fmt.Appendf(nil, "event: queued\ndata: %s\n\n", data)
		if err := st.out.Append(ctx, frame); err != nil {
			return nil
		}
		if err := st.flush(); err != nil {
			return nil
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if flushC == nil {
				if err := st.out.Append(ctx, sseHeartbeat); err != nil {
					return nil
				}
				if err := flushNow(); err != nil {
					return nil
				}
			}
		case <-flushC:
			if err := flushNow(); err != nil {
				return nil // the watcher went away
			}
		case _, ok := <-watch.C():
			state, err := watch.Next(ctx, ok, st.replay, st.live)
			if err != nil {
				return st.fail(err)
			}
			if st.out.err != nil {
				return nil // the watcher stalled or went away
			}
			switch state {
			case runs.WatchEnded:
				// Send what arrived live before reading the store for
				// the run's result: the last events must not wait
				// behind that.
				if err := st.flush(); err != nil {
					return nil
				}
				return st.finish(ctx)
			case runs.WatchDropped:
				// The client reconnects with Last-Event-ID and catches up
				// from the store.
				_ = st.flush()
				return nil
			}
			if st.out.Full() {
				if err := flushNow(); err != nil {
					return nil
				}
			} else if flushC == nil {
				if wait := sseFlushGap - time.Since(lastFlush); wait > 0 {
					flushTimer.Reset(wait)
					flushC = flushTimer.C
				} else if err := flushNow(); err != nil {
					return nil
				}
			}
		}
	}
}

// live writes a live event's frame (the watch sends each once, in order).
func (st *sseStream) live(ev *runs.LiveEvent) error {
	var frame []byte
	var err error
	if st.page != nil {
		frame, err = st.page.live(ev, st.withhold)
	} else if st.withhold && ev.Credentialed && ev.Output != nil {
		frame, err = sseEventFrame(nil, &ops.WithholdEvents([]engine.Event{ev.Event})[0])
	} else {
		frame, err = ev.Encoded(encodeSSE)
	}
	if err != nil {
		return err
	}
	if err := st.out.Append(st.c.Request().Context(), frame); err != nil {
		return nil // the watcher stalled or went away: the loop ends it
	}
	return nil
}

// catchUp has the watch store the events emitted so far and replay them.
func (st *sseStream) catchUp(ctx context.Context) error { return st.watch.CatchUp(ctx, st.replay) }

// replay sends every event after seq after, in pages
// (replayPageEvents), and returns the last seq sent. A page is read only
// once the byte budget has room for its largest frame so far; a frame that
// finds no room is dropped with the rest of its page and read again once
// there is.
func (st *sseStream) replay(ctx context.Context, after int64) (int64, error) {
	last := after
	st.frame = max(st.frame, st.s.streams.frameHint(st.run))
	for {
		if err := st.out.Reserve(ctx, max(st.frame, sseMinReserve)); err != nil {
			return last, errStreamGone
		}
		if err := st.out.enterRead(ctx); err != nil {
			return last, errStreamGone
		}
		n, sent, room, err := st.readPage(ctx, last)
		st.out.leaveRead()
		st.s.streams.noteFrame(st.run, st.frame)
		last = sent
		if err != nil {
			return last, err
		}
		if !room {
			continue
		}
		if err := st.flush(); err != nil {
			return last, errStreamGone
		}
		if n == 0 {
			return last, nil
		}
	}
}

// readPage reads one page after seq after and buffers its frames while the
// budget has room (room false: a frame found none and was dropped with the
// rest of the page); last is the seq of the last frame buffered. The frames
// are written after it, out of the replay readers' gate.
func (st *sseStream) readPage(ctx context.Context, after int64) (n int, last int64, room bool, err error) {
	last = after
	// Bounded by the bytes stored as well: the count may stay full. The
	// events the writer has not stored yet come with them.
	evs, err := st.s.Runs.Events(ctx, st.run, after, replayPageEvents, int64(st.s.streams.perConn))
	if err != nil {
		return 0, last, false, err
	}
	n = len(evs)
	if st.withhold {
		evs = ops.WithholdEvents(evs)
	}
	for i := range evs {
		var frame []byte
		if st.page != nil {
			frame, err = st.page.frame(&evs[i], evs[i].Seq > st.page.shown)
		} else {
			frame, err = sseEventFrame(nil, &evs[i])
		}
		if err != nil {
			return 0, last, false, err
		}
		seq := evs[i].Seq
		evs[i] = engine.Event{} // its output is in the frame now
		st.frame = max(st.frame, len(frame))
		ok, err := st.out.TryAppend(frame)
		if err != nil {
			return 0, last, false, errStreamGone
		}
		if !ok {
			return n, last, false, nil // read again after last once Reserve found room
		}
		last = seq
	}
	return n, last, true, nil
}

// sseMinReserve is the room a replay read asks for before it has seen a
// frame of the run.
const sseMinReserve = 16 << 10

var sseHeartbeat = []byte(": heartbeat\n\n")

// errStreamGone is a stream whose watcher stalled or left: nothing is
// reported to it.
var errStreamGone = errors.New("web: the watcher stalled or left")

// finish replays what is left, sends the run's result and ends the stream.
func (st *sseStream) finish(ctx context.Context) error {
	if err := st.catchUp(ctx); err != nil {
		return st.fail(err)
	}
	if st.page != nil {
		return st.finishPage(ctx)
	}
	// When a run ends, its watchers (hundreds, under load) share one read
	// of its result instead of each doing its own.
	key := st.run
	if st.withhold {
		key += "\x00withheld" // readers who may not see credentialed outputs share another read
	}
	v, err, _ := st.s.finals.Do(key, func() (any, error) {
		r, err := st.s.DB.GetRun(ctx, st.run)
		if err != nil {
			return nil, err
		}
		if st.withhold {
			r = ops.WithheldRun(r)
		}
		out, err := st.s.RunView(ctx, r)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	if err != nil {
		return st.fail(err)
	}
	final := v.([]byte)
	frame := make([]byte, 0, len(final)+20)
	frame = append(frame, "event: run\ndata: "...)
	frame = append(append(frame, final...), "\n\n"...)
	if err := st.out.Append(ctx, frame); err == nil {
		_ = st.flush()
	}
	return nil
}

// fail reports an error inside an open stream (the status line is gone).
func (st *sseStream) fail(err error) error {
	if errors.Is(err, errStreamGone) || st.out.err != nil || st.c.Request().Context().Err() != nil {
		return nil // the watcher stalled or left
	}
	st.s.Log.Error("event stream failed", "run_id", st.run, "err", err)
	b, _ := json.Marshal(map[string]any{"error": httpcore.Error(httpcore.EINTERNAL, "internal", "the event stream failed; reconnect to resume", nil)})
	frame := append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
	if err := st.out.Append(st.c.Request().Context(), frame); err == nil {
		_ = st.flush()
	}
	return nil
}

// encodeSSE is an event's text/event-stream frame: id = seq, event = phase,
// data = the event JSON.
func encodeSSE(ev *engine.Event) ([]byte, error) { return sseEventFrame(nil, ev) }

// sseEventFrame appends an event's SSE frame to buf (nil: a frame of its
// own, allocated at its size).
func sseEventFrame(buf []byte, ev *engine.Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return buf, err
	}
	if buf == nil {
		buf = make([]byte, 0, len(b)+len(ev.Phase)+40)
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Phase...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...), nil
}

// flush writes the buffered frames and flushes the connection, within
// the write deadline.
func (st *sseStream) flush() error { return st.out.Flush() }
