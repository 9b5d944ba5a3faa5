package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// The A2E SDK's HTTP transport, under the base URL /v1/a2e:
//
//	POST /v1/a2e/session  → {"session_id": "…"}
//	POST /v1/a2e/send     one A2E message (X-Session-Id), answered on the stream
//	GET  /v1/a2e/stream   SSE of the session's messages (X-Session-Id)
//
// A session is an engine.Session (handshake/req, ping, shutdown, chain/req
// run concurrently) whose Send queues messages until the stream takes them.
// Everything it holds is bounded: sessions per server, messages and bytes
// queued per session, chains running per session, and an idle session
// (no stream, no send) expires with its runs.

// HeaderSessionID carries the session id on send and stream.
const HeaderSessionID = "X-Session-Id"

// Bounds of the HTTP sessions (Config fields override the first two).
const (
	defaultA2ESessions    = 64
	defaultA2ESessionIdle = 10 * time.Minute
	a2eQueueMessages      = 4096
	a2eQueueBytes         = 32 << 20
	// a2eSlotWait is how long a send waits for a run slot of a busy session
	// before the chain/req is refused with host_busy.
	a2eSlotWait = 10 * time.Second
)

// a2eSessions is the server's table of HTTP sessions. Its context, made on
// first use, is every session's: Shutdown cancels it.
type a2eSessions struct {
	mu     sync.Mutex
	m      map[string]*a2eHTTPSession
	ctx    context.Context
	cancel context.CancelFunc
}

// base returns the sessions' context.
func (t *a2eSessions) base() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	return t.ctx
}

// stop cancels every session's runs (server shutdown); sessions opened
// after it start cancelled.
func (t *a2eSessions) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	t.cancel()
}

// a2eHTTPSession is one session and the queue between it and its stream.
type a2eHTTPSession struct {
	sess *engine.Session

	mu       sync.Mutex
	queue    [][]byte // encoded messages the stream has not taken yet
	bytes    int
	dropped  int           // chain/event and pong messages dropped on a full queue
	signal   chan struct{} // a message was queued, or the session closed
	used     time.Time     // last send or stream activity
	streamer int           // generation of the stream allowed to read; a newer stream replaces an older
	streams  int           // streams attached
	closed   bool          // shut down or expired: the stream ends once the queue is empty
}

// push queues one message for the stream. On a full queue only the
// messages an agent cannot do without are kept (chain/resp, handshake/resp):
// each chain/req has one answer and the runs per session are bounded, so
// those stay bounded too.
func (h *a2eHTTPSession) push(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	var env struct{ Type string }
	_ = json.Unmarshal(b, &env)
	h.mu.Lock()
	full := len(h.queue) >= a2eQueueMessages || h.bytes+len(b) > a2eQueueBytes
	if full && env.Type != engine.TypeResponse && env.Type != engine.TypeHandshakeResp {
		h.dropped++
		h.mu.Unlock()
		return
	}
	h.queue = append(h.queue, b)
	h.bytes += len(b)
	h.mu.Unlock()
	h.wake()
}

func (h *a2eHTTPSession) wake() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

// full reports whether the queue has no room: the stream is not being read.
func (h *a2eHTTPSession) full() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.queue) >= a2eQueueMessages || h.bytes >= a2eQueueBytes
}

func (h *a2eHTTPSession) touch() {
	h.mu.Lock()
	h.used = time.Now()
	h.mu.Unlock()
}

// take returns the queued messages, or closed when the session is over and
// nothing is left to send.
func (h *a2eHTTPSession) take() (msgs [][]byte, closed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msgs, h.queue, h.bytes = h.queue, nil, 0
	return msgs, h.closed && len(msgs) == 0
}

func (s *Server) a2eSessionLimits() (int, time.Duration) {
	max, idle := s.cfg.A2EMaxSessions, s.cfg.A2ESessionIdle
	if max <= 0 {
		max = defaultA2ESessions
	}
	if idle <= 0 {
		idle = defaultA2ESessionIdle
	}
	return max, idle
}

// expireIdle closes the sessions nobody has used for the idle time: no
// stream attached and no send. Called on every session request, so no
// janitor goroutine outlives the server.
func (s *Server) expireIdle(now time.Time) {
	_, idle := s.a2eSessionLimits()
	var old []*a2eHTTPSession
	s.a2e.mu.Lock()
	for id, h := range s.a2e.m {
		h.mu.Lock()
		if h.streams == 0 && now.Sub(h.used) > idle {
			delete(s.a2e.m, id)
			old = append(old, h)
		}
		h.mu.Unlock()
	}
	s.a2e.mu.Unlock()
	for _, h := range old {
		go s.endSession(h, 0)
	}
}

// endSession drains the session's runs (up to drain), then closes it; the
// stream sends what is left and ends.
func (s *Server) endSession(h *a2eHTTPSession, drain time.Duration) {
	h.sess.Drain(drain)
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wake()
	s.a2e.mu.Lock()
	if s.a2e.m[h.sess.ID()] == h {
		delete(s.a2e.m, h.sess.ID())
	}
	s.a2e.mu.Unlock()
}

// lookupSession finds the session named by X-Session-Id.
func (s *Server) lookupSession(c echo.Context) (*a2eHTTPSession, error) {
	s.expireIdle(time.Now())
	id := c.Request().Header.Get(HeaderSessionID)
	if id == "" {
		return nil, apiError(EBADREQUEST, "session_required",
			"send the session id from POST /v1/a2e/session in the "+HeaderSessionID+" header", map[string]any{"header": HeaderSessionID})
	}
	s.a2e.mu.Lock()
	h := s.a2e.m[id]
	s.a2e.mu.Unlock()
	if h == nil {
		_, idle := s.a2eSessionLimits()
		if len(id) > 64 {
			id = id[:64] + "…"
		}
		return nil, apiError(ENOTFOUND, "unknown_session",
			fmt.Sprintf("no A2E session %q: it was shut down, or expired after %s idle; open another with POST /v1/a2e/session", id, idle), nil)
	}
	return h, nil
}

// POST /v1/a2e/session: open a session.
func (s *Server) a2eOpenSession(c echo.Context) error {
	now := time.Now()
	s.expireIdle(now)
	max, _ := s.a2eSessionLimits()
	h := &a2eHTTPSession{signal: make(chan struct{}, 1), used: now}
	base := s.a2e.base()
	h.sess = engine.NewSession(base, engine.SessionOptions{
		IDIssued: true,
		Limits:   s.cfg.Limits,
		Send:     h.push,
		Run:      s.a2eRunFunc,
		Check:    func(doc *engine.Chain) []engine.Issue { return s.validateToRunCtx(base, doc) },
		RunCode:  s.a2eRunCode,
	})
	s.a2e.mu.Lock()
	if s.a2e.m == nil {
		s.a2e.m = map[string]*a2eHTTPSession{}
	}
	if len(s.a2e.m) >= max {
		s.a2e.mu.Unlock()
		h.sess.Close()
		return apiError(ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%d A2E sessions are open, the limit; shut one down (a shutdown message) or wait for an idle one to expire", max), map[string]any{"limit": max})
	}
	s.a2e.m[h.sess.ID()] = h
	s.a2e.mu.Unlock()
	return c.JSON(http.StatusOK, map[string]any{"session_id": h.sess.ID()})
}

// POST /v1/a2e/send: one A2E message for the session; its answers arrive on
// the stream. 202 once the session took it (an answer that is an error is a
// chain/resp on the stream too); a resent chain/req id is not run twice.
func (s *Server) a2eSend(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	a2eNoteEnvelope(c, body) // a refusal answers the message by its id
	h, err := s.lookupSession(c)
	if err != nil {
		return err
	}
	if h.full() {
		return apiError(EUNAVAILABLE, "stream_not_read",
			"the session's stream is not being read and its queue is full: read GET /v1/a2e/stream, then send again", nil)
	}
	h.touch()
	ctx, cancel := context.WithTimeout(c.Request().Context(), a2eSlotWait)
	defer cancel()
	if shutdown, drain := h.sess.Handle(ctx, body); shutdown {
		// The agent says goodbye: its running chains get the drain time to
		// answer on the stream, then the stream ends.
		go s.endSession(h, drain)
	}
	return c.JSON(http.StatusAccepted, map[string]any{"accepted": true})
}

// GET /v1/a2e/stream: the session's messages as SSE, one message per event
// (event: its type; data: the JSON), with heartbeat comments. A new stream
// for the same session replaces the old one.
func (s *Server) a2eStream(c echo.Context) error {
	h, err := s.lookupSession(c)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.streamer++
	gen := h.streamer
	h.streams++
	h.used = time.Now()
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.streams--
		h.used = time.Now()
		h.mu.Unlock()
	}()
	w := s.newA2EWriter(c, streamA2E, false)
	defer w.close()
	if w.start() != nil {
		return nil
	}
	beat := time.NewTicker(s.cfg.SSEHeartbeat)
	defer beat.Stop()
	ctx := c.Request().Context()
	for {
		h.mu.Lock()
		replaced := h.streamer != gen
		h.mu.Unlock()
		if replaced {
			return nil
		}
		msgs, closed := h.take()
		for _, m := range msgs {
			var env struct{ Type string }
			_ = json.Unmarshal(m, &env)
			if err := w.writeRaw(env.Type, m); err != nil {
				return nil
			}
		}
		if w.flush() != nil {
			return nil
		}
		if closed {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.signal:
		case <-beat.C:
			if w.comment("keep-alive") != nil {
				return nil
			}
			h.touch()
		}
	}
}

// a2eRunFunc runs a session's chain/req as an A2E run of the run service.
func (s *Server) a2eRunFunc(ctx context.Context, req *engine.Request, doc *engine.Chain, sink engine.EventSink) (*engine.Result, error) {
	input := req.InitialInput
	if input == nil {
		input = map[string]any{}
	}
	return s.runs.RunAdHoc(ctx, doc, input, store.KindA2E, sink)
}

// a2eRunCode names a run the service refused (busy, shutting down) with the
// API's own code, as POST /v1/a2e would.
func (s *Server) a2eRunCode(err error) *engine.WireError {
	ae := s.errorFor(err)
	return &engine.WireError{Code: ae.Code, Message: ae.Message, Details: detailsMap(ae.Details)}
}
