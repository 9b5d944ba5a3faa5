package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/labstack/echo/v4"
)

// sseFlushGap is the least time between two flushes of a live stream: a
// burst of events goes out in one write instead of one per event, which is
// what lets hundreds of watchers follow a fast run.
const sseFlushGap = 10 * time.Millisecond

// replayPage is how many stored events one replay query reads.
const replayPage = 1000

// sseStream writes one run's events to one watcher.
type sseStream struct {
	s    *Server
	c    echo.Context
	w    *echo.Response
	run  string
	last int64 // the highest seq sent
	buf  bytes.Buffer
}

// GET /v1/runs/{id}/events
//
// Ordering without gaps or duplicates: subscribe to the run service's live
// hub first, then flush the event writer and replay the store after
// Last-Event-ID, then stream live events, skipping any seq already sent.
// Events emitted between the subscription and the replay are in both and
// sent once.
func (s *Server) runEvents(c echo.Context) error {
	id := c.Param("id")
	ctx := c.Request().Context()
	after := int64(0)
	raw := c.Request().Header.Get("Last-Event-ID")
	if raw == "" {
		raw = c.QueryParam("after")
	}
	if raw != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil || n < 0 {
			return apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("Last-Event-ID (or after) must be an event seq, a non-negative integer; got %q", raw), map[string]any{"parameter": "after"})
		}
		after = n
	}
	if _, err := s.db.GetRunInfo(ctx, id); err != nil {
		return storeErr(err, fmt.Sprintf("run %q", id))
	}

	sub, err := s.runs.Subscribe(id)
	if err != nil {
		return err // a watcher limit: 503 with Retry-After
	}
	defer s.runs.Unsubscribe(sub)

	st := &sseStream{s: s, c: c, w: c.Response(), run: id, last: after}
	h := st.w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	st.w.WriteHeader(http.StatusOK)
	st.w.Flush()

	if err := st.catchUp(ctx); err != nil {
		return st.fail(err)
	}
	if !s.runs.Active(id) {
		// Not executing here (finished, paused, or never started in this
		// process): the store holds the whole run.
		return st.finish(ctx)
	}

	tick := time.NewTicker(s.cfg.SSEHeartbeat)
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
		tick.Reset(s.cfg.SSEHeartbeat)
		return st.flush()
	}
	if pos := s.runs.QueuePosition(id); pos > 0 {
		// Waiting for a slot: say so now; its events follow once it starts.
		fmt.Fprintf(&st.buf, "event: queued\ndata: {\"run_id\":%q,\"status\":\"queued\",\"position\":%d}\n\n", id, pos)
		if err := st.flush(); err != nil {
			return nil
		}
	}
	var pending []*runs.LiveEvent
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if flushC == nil {
				st.buf.WriteString(": heartbeat\n\n")
				if err := flushNow(); err != nil {
					return nil
				}
			}
		case <-flushC:
			if err := flushNow(); err != nil {
				return nil // the watcher went away
			}
		case _, ok := <-sub.C:
			// Take what is queued: the events before a close are still there.
			pending = sub.Take(pending[:0])
			for _, ev := range pending {
				if err := st.live(ctx, ev); err != nil {
					return st.fail(err)
				}
			}
			clear(pending)
			if !ok {
				if sub.Ended {
					// Send what arrived live before waiting on the store:
					// finish flushes the event writer first, and the run's
					// last events must not wait behind that.
					if err := st.flush(); err != nil {
						return nil
					}
					return st.finish(ctx)
				}
				// Dropped: this watcher fell behind. End the response; the
				// client reconnects with Last-Event-ID and catches up from
				// the store.
				_ = st.flush()
				return nil
			}
			if flushC == nil {
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

// live sends a live event unless it was already sent; a gap (which the
// subscribe-then-replay order rules out) is filled from the store.
func (st *sseStream) live(ctx context.Context, ev *runs.LiveEvent) error {
	if ev.Seq <= st.last {
		return nil
	}
	if ev.Seq > st.last+1 {
		if err := st.catchUp(ctx); err != nil {
			return err
		}
		if ev.Seq <= st.last {
			return nil
		}
	}
	frame, err := ev.Encoded(encodeSSE)
	if err != nil {
		return err
	}
	st.buf.Write(frame)
	st.last = ev.Seq
	return nil
}

// catchUp flushes the event writer and sends every stored event after the
// last one sent.
func (st *sseStream) catchUp(ctx context.Context) error {
	if err := st.s.runs.Flush(ctx); err != nil && ctx.Err() == nil {
		st.s.log.Warn("event stream: flushing the event writer failed; replaying what is stored", "run_id", st.run, "err", err)
	}
	for {
		evs, err := st.s.db.EventsAfter(ctx, st.run, st.last, replayPage)
		if err != nil {
			return err
		}
		for i := range evs {
			if err := st.event(&evs[i]); err != nil {
				return err
			}
		}
		if err := st.flush(); err != nil {
			return err
		}
		if len(evs) < replayPage {
			return nil
		}
	}
}

// finish replays what is left, sends the run's result and ends the stream.
func (st *sseStream) finish(ctx context.Context) error {
	if err := st.catchUp(ctx); err != nil {
		return st.fail(err)
	}
	// When a run ends, its watchers (hundreds, under load) share one read
	// of its result instead of each doing its own.
	v, err, _ := st.s.finals.Do(st.run, func() (any, error) {
		r, err := st.s.db.GetRun(ctx, st.run)
		if err != nil {
			return nil, err
		}
		out, err := st.s.runView(ctx, r)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
	if err != nil {
		return st.fail(err)
	}
	st.buf.WriteString("event: run\ndata: ")
	st.buf.Write(v.([]byte))
	st.buf.WriteString("\n\n")
	_ = st.flush()
	return nil
}

// fail reports an error inside an open stream (the status line is gone).
func (st *sseStream) fail(err error) error {
	if st.c.Request().Context().Err() != nil {
		return nil // the watcher left
	}
	st.s.log.Error("event stream failed", "run_id", st.run, "err", err)
	b, _ := json.Marshal(map[string]any{"error": apiError(EINTERNAL, "internal", "the event stream failed; reconnect to resume", nil)})
	st.buf.WriteString("event: error\ndata: ")
	st.buf.Write(b)
	st.buf.WriteString("\n\n")
	_ = st.flush()
	return nil
}

// encodeSSE is an event's text/event-stream frame: id = seq, event = phase,
// data = the event JSON.
func encodeSSE(ev *engine.Event) ([]byte, error) { return sseEventFrame(nil, ev) }

// sseEventFrame appends an event's SSE frame to buf.
func sseEventFrame(buf []byte, ev *engine.Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return buf, err
	}
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, ev.Seq, 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, ev.Phase...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, b...)
	return append(buf, "\n\n"...), nil
}

// event buffers one event frame: id = seq, event = phase, data = the event.
func (st *sseStream) event(ev *engine.Event) error {
	b, err := sseEventFrame(st.buf.AvailableBuffer(), ev)
	if err != nil {
		return err
	}
	st.buf.Write(b)
	st.last = ev.Seq
	return nil
}

// flush writes the buffered frames and flushes the connection.
func (st *sseStream) flush() error {
	if st.buf.Len() == 0 {
		return nil
	}
	_, err := st.w.Write(st.buf.Bytes())
	st.buf.Reset()
	if err != nil {
		return err
	}
	st.w.Flush()
	return nil
}
