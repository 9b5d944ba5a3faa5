package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// The A2E SDK's HTTP transport, under the base URL /v1/a2e:
//
//	POST /v1/a2e/session  → {"session_id": "…"}
//	POST /v1/a2e/send     one A2E message (X-Session-Id), answered on the stream
//	GET  /v1/a2e/stream   SSE of the session's messages (X-Session-Id)
//
// A session is an a2e.Session (handshake/req, ping, shutdown, chain/req
// run concurrently) whose answers queue until the stream takes them.
// Everything it holds is bounded: sessions per server and per user, and per
// session the bytes and messages it holds for its agent — messages queued
// for the stream or being written to it, and for every message in flight
// (a chain/req waiting for a slot or running) a reservation made before
// the session took it, its own size and room for an answer. A send that
// would pass the cap is refused (503 stream_not_read); an answer that does
// not fit is replaced by a chain/resp saying so. A session belongs to the
// user who opened it, and one idle for the idle time (no send, nothing
// delivered, no chain in flight) is closed, stream or not.

// HeaderSessionID carries the session id on send and stream.
const HeaderSessionID = "X-Session-Id"

// Bounds of the HTTP sessions (Config fields override the defaults).
const (
	defaultA2ESessions        = 64
	defaultA2ESessionsPerUser = 8
	defaultA2ESessionIdle     = 10 * time.Minute
	defaultA2ESessionBytes    = 32 << 20
	a2eQueueMessages          = 4096
	// a2eAnswerReserve is what a send reserves beyond its own size: room
	// for its answer when that is an error (a pong, a handshake/resp, a
	// refusal, the chain/resp saying an answer was too large).
	a2eAnswerReserve = 4 << 10
)

// CodeResponseTooLarge is the chain/resp error of an answer that did not
// fit in what its session may hold: the run ran, its outputs are not kept.
const CodeResponseTooLarge = "response_too_large"

// CodeSessionExpired is the error message that ends the stream of a session
// closed for being idle.
const CodeSessionExpired = "session_expired"

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

// a2eHTTPSession is one session and what it holds for its stream.
type a2eHTTPSession struct {
	sess  *a2e.Session
	owner string // the user who opened it (a2eOwner)
	limit int    // bytes it may hold

	mu       sync.Mutex
	queue    [][]byte      // encoded messages the stream has not taken yet
	queued   int           // their bytes
	writing  int           // bytes the stream took and is writing
	resBytes int           // reserved for the answers of messages in flight
	resMsgs  int           // messages in flight (each holds one reservation)
	peak     int           // the most bytes held at once
	dropped  int           // chain/event messages dropped for want of room
	signal   chan struct{} // a message was queued, or the session closed
	used     time.Time     // last send or delivery
	streamer int           // generation of the stream allowed to read; a newer stream replaces an older
	streams  int           // streams attached
	closed   bool          // shut down or expired: the stream ends once the queue is empty
	final    []byte        // the last message of the stream (why the session closed), or nil
}

// a2eTicket is one message's reservation: its answers are charged to it.
type a2eTicket struct {
	bytes int
	spent bool // the final answer took it, or the message was done
}

// held is what the session holds: queued, being written, reserved.
// h.mu is held.
func (h *a2eHTTPSession) held() int { return h.queued + h.writing + h.resBytes }

// reserve makes room for a message and its answer before the session takes
// it; false when that would pass the session's bounds.
func (h *a2eHTTPSession) reserve(n int) (*a2eTicket, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue)+h.resMsgs+1 > a2eQueueMessages || h.held()+n > h.limit {
		return nil, false
	}
	h.resBytes += n
	h.resMsgs++
	h.peak = max(h.peak, h.held())
	return &a2eTicket{bytes: n}, true
}

// release gives back what the ticket still holds. h.mu is held.
func (h *a2eHTTPSession) releaseLocked(t *a2eTicket) {
	if t == nil || t.spent {
		return
	}
	t.spent = true
	h.resBytes -= t.bytes
	h.resMsgs--
}

// done ends a message: nothing more answers it.
func (h *a2eHTTPSession) done(t *a2eTicket) {
	h.mu.Lock()
	h.releaseLocked(t)
	h.mu.Unlock()
}

// push queues one answer to the message of ticket t for the stream. The
// final answer (chain/resp, pong, handshake/resp) takes the ticket's room:
// a chain/resp too large for it and what is free is replaced by one saying
// so. Any other message (chain/event) is queued only into free room, else
// dropped: the chain/resp still comes.
func (h *a2eHTTPSession) push(t *a2eTicket, msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	var final bool
	resp, isResp := msg.(a2e.ResponseMessage)
	switch msg.(type) {
	case a2e.ResponseMessage, a2e.HandshakeResponse, a2e.Pong:
		final = t != nil
	}
	h.mu.Lock()
	switch {
	case final && !t.spent:
		h.releaseLocked(t)
		if free := h.limit - h.held(); isResp && len(b) > free {
			// The refusal is smaller than the reservation the message
			// made (its own size and a2eAnswerReserve), so it fits.
			b = tooLargeResponse(resp, len(b), h.limit, h.held())
		}
	case len(h.queue)+h.resMsgs < a2eQueueMessages && h.held()+len(b) <= h.limit:
	default:
		h.dropped++
		h.mu.Unlock()
		return
	}
	h.queue = append(h.queue, b)
	h.queued += len(b)
	h.peak = max(h.peak, h.held())
	h.mu.Unlock()
	h.wake()
}

// tooLargeResponse is the chain/resp answering a request whose own answer
// (n bytes) does not fit in what the session may still hold.
func tooLargeResponse(r a2e.ResponseMessage, n, limit, held int) []byte {
	out := a2e.NewResponseMessage(&engine.Request{ID: r.ReqID, ChainID: r.ChainID}, nil)
	out.DurationMS, out.NodesRun = r.DurationMS, r.NodesRun
	out.Error = &a2e.WireError{Code: CodeResponseTooLarge,
		Message: fmt.Sprintf("the chain/resp is %d bytes, more than the session may hold (%d bytes, %d of them held unread): "+
			"the run ran, its outputs are not kept; read GET /v1/a2e/stream as it goes, or return less", n, limit, held),
		Details: map[string]any{"bytes": n, "limit_bytes": limit, "held_bytes": held}}
	b, _ := json.Marshal(out)
	return b
}

func (h *a2eHTTPSession) wake() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *a2eHTTPSession) touch() {
	h.mu.Lock()
	h.used = time.Now()
	h.mu.Unlock()
}

// take returns the queued messages, counted as being written until
// written(n); closed when the session is over and nothing is left to send.
// Taking messages is activity: the session is not idle.
func (h *a2eHTTPSession) take() (msgs [][]byte, closed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msgs, h.queue = h.queue, nil
	h.writing += h.queued
	h.queued = 0
	if len(msgs) > 0 {
		h.used = time.Now()
	}
	return msgs, h.closed && len(msgs) == 0
}

// written says the stream is done with n bytes it took.
func (h *a2eHTTPSession) written(n int) {
	h.mu.Lock()
	h.writing -= n
	h.mu.Unlock()
}

func (s *Server) a2eSessionLimits() (maxAll, perUser int, idle time.Duration, bytes int) {
	maxAll, perUser, idle, bytes = s.cfg.A2EMaxSessions, s.cfg.A2EMaxSessionsPerUser, s.cfg.A2ESessionIdle, s.cfg.A2ESessionBytes
	if maxAll <= 0 {
		maxAll = defaultA2ESessions
	}
	if perUser <= 0 {
		perUser = defaultA2ESessionsPerUser
	}
	if idle <= 0 {
		idle = defaultA2ESessionIdle
	}
	if bytes <= 0 {
		bytes = defaultA2ESessionBytes
	}
	return maxAll, perUser, idle, bytes
}

// a2eOwner names the caller a session belongs to: the user and when it was
// made, so a removed user's sessions do not pass to a new one of the same
// name.
func a2eOwner(c echo.Context) string {
	id := callerOf(c)
	return id.Via + "\x00" + id.Name + "\x00" + strconv.FormatInt(id.created.UnixNano(), 10)
}

// expireIdle closes the sessions idle for the idle time: no send, nothing
// delivered, no chain in flight, whether a stream is attached or not (its
// stream ends with a session_expired error message). Called on every
// session request, so no janitor goroutine outlives the server.
func (s *Server) expireIdle(now time.Time) {
	_, _, idle, _ := s.a2eSessionLimits()
	var old []*a2eHTTPSession
	s.a2e.mu.Lock()
	for id, h := range s.a2e.m {
		h.mu.Lock()
		if h.resMsgs == 0 && now.Sub(h.used) > idle {
			delete(s.a2e.m, id)
			old = append(old, h)
		}
		h.mu.Unlock()
	}
	s.a2e.mu.Unlock()
	for _, h := range old {
		final, _ := json.Marshal(a2e.NewErrorMessage(CodeSessionExpired,
			fmt.Sprintf("the session was idle for %s (no send and nothing delivered) and is closed; open another with POST /v1/a2e/session", idle), false))
		go s.endSession(h, 0, final)
	}
}

// endSession drains the session's runs (up to drain), then closes it; the
// stream sends what is left, then final when set, and ends.
func (s *Server) endSession(h *a2eHTTPSession, drain time.Duration, final []byte) {
	h.sess.Drain(drain)
	h.mu.Lock()
	h.closed = true
	h.final = final
	h.mu.Unlock()
	h.wake()
	s.a2e.mu.Lock()
	if s.a2e.m[h.sess.ID()] == h {
		delete(s.a2e.m, h.sess.ID())
	}
	s.a2e.mu.Unlock()
}

// lookupSession finds the session named by X-Session-Id, if the caller
// opened it: another user's session id answers as an unknown one.
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
	if h == nil || h.owner != a2eOwner(c) {
		_, _, idle, _ := s.a2eSessionLimits()
		if len(id) > 64 {
			id = id[:64] + "…"
		}
		return nil, apiError(ENOTFOUND, "unknown_session",
			fmt.Sprintf("no A2E session %q of yours: it was shut down, or expired after %s idle; open another with POST /v1/a2e/session", id, idle), nil)
	}
	return h, nil
}

// POST /v1/a2e/session: open a session.
func (s *Server) a2eOpenSession(c echo.Context) error {
	now := time.Now()
	s.expireIdle(now)
	maxAll, perUser, _, limit := s.a2eSessionLimits()
	id := a2e.NewSessionID()
	h := &a2eHTTPSession{owner: a2eOwner(c), limit: limit, signal: make(chan struct{}, 1), used: now}
	base := s.a2e.base()
	s.a2e.mu.Lock()
	if s.a2e.m == nil {
		s.a2e.m = map[string]*a2eHTTPSession{}
	}
	mine := 0
	for _, o := range s.a2e.m {
		if o.owner == h.owner {
			mine++
		}
	}
	if mine >= perUser {
		s.a2e.mu.Unlock()
		return apiError(ETOOMANY, "too_many_sessions",
			fmt.Sprintf("you have %d A2E sessions open, the limit per user; shut one down (a shutdown message) or wait for an idle one to expire", perUser),
			map[string]any{"limit": perUser, "per": "user"})
	}
	if len(s.a2e.m) >= maxAll {
		s.a2e.mu.Unlock()
		return apiError(ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%d A2E sessions are open, the limit; shut one down (a shutdown message) or wait for an idle one to expire", maxAll),
			map[string]any{"limit": maxAll, "per": "server"})
	}
	h.sess = a2e.NewSession(base, a2e.SessionOptions{
		ID:             id,
		IDIssued:       true,
		Limits:         s.cfg.Limits,
		MaxQueuedBytes: limit,
		Send:           func(msg any) { h.push(nil, msg) },
		Run: func(ctx context.Context, req *engine.Request, doc *engine.Chain, sink engine.EventSink) (*engine.Result, error) {
			return s.a2eRunFunc(ctx, id, req, doc, sink)
		},
		Check:   func(doc *engine.Chain) []engine.Issue { return s.runs.CheckAdHoc(base, doc) },
		RunCode: s.a2eRunCode,
	})
	s.a2e.m[id] = h
	s.a2e.mu.Unlock()
	return c.JSON(http.StatusOK, map[string]any{"session_id": id})
}

// POST /v1/a2e/send: one A2E message for the session; its answers arrive on
// the stream. 202 once the session took it (an answer that is an error is a
// chain/resp on the stream too); a resent chain/req id is not run twice. A
// chain/req waiting for a run slot waits in the session, not here. Before
// the session takes a message it reserves the message's size and room for
// an answer; past the session's bound it is refused with 503
// stream_not_read.
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
	t, ok := h.reserve(len(body) + a2eAnswerReserve)
	if !ok {
		h.mu.Lock()
		held, msgs := h.held(), len(h.queue)+h.resMsgs
		h.mu.Unlock()
		return apiError(EUNAVAILABLE, "stream_not_read",
			fmt.Sprintf("the session holds %d bytes and %d messages its stream has not delivered (at most %d bytes, %d messages, answers of running chains included): "+
				"read GET /v1/a2e/stream, then send again", held, msgs, h.limit, a2eQueueMessages),
			map[string]any{"held_bytes": held, "limit_bytes": h.limit, "held_messages": msgs, "limit_messages": a2eQueueMessages})
	}
	h.touch()
	reply := a2e.Reply{Send: func(msg any) { h.push(t, msg) }, Done: func() { h.done(t) }}
	if shutdown, drain := h.sess.HandleReply(c.Request().Context(), body, reply); shutdown {
		// The agent says goodbye: its running chains get the drain time to
		// answer on the stream, then the stream ends.
		go s.endSession(h, drain, nil)
	}
	return c.JSON(http.StatusAccepted, map[string]any{"accepted": true})
}

// GET /v1/a2e/stream: the session's messages as SSE, one message per event
// (event: its type; data: the JSON), with heartbeat comments. A new stream
// for the same session replaces the old one. A session closed for being
// idle ends its stream with an error message (session_expired).
func (s *Server) a2eStream(c echo.Context) error {
	h, err := s.lookupSession(c)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.streamer++
	gen := h.streamer
	h.streams++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.streams--
		h.mu.Unlock()
	}()
	w := s.newA2EWriter(c, streamA2E, false)
	defer w.close()
	if w.start() != nil {
		return nil
	}
	beat := time.NewTicker(s.cfg.SSEHeartbeat)
	defer beat.Stop()
	// An attached stream is no activity: the stream looks for idle
	// sessions itself, as no other request may come to.
	_, _, idle, _ := s.a2eSessionLimits()
	idleCheck := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer idleCheck.Stop()
	ctx := c.Request().Context()
	for {
		h.mu.Lock()
		replaced := h.streamer != gen
		h.mu.Unlock()
		if replaced {
			return nil
		}
		msgs, closed := h.take()
		n := 0
		for _, m := range msgs {
			n += len(m)
		}
		for _, m := range msgs {
			var env struct{ Type string }
			_ = json.Unmarshal(m, &env)
			if err := w.writeRaw(env.Type, m); err != nil {
				h.written(n)
				return nil
			}
		}
		h.written(n)
		if w.flush() != nil {
			return nil
		}
		if closed {
			h.mu.Lock()
			final := h.final
			h.mu.Unlock()
			if final != nil && w.writeRaw(a2e.TypeError, final) == nil {
				w.flush()
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.signal:
		case now := <-idleCheck.C:
			s.expireIdle(now)
		case <-beat.C:
			// a heartbeat is no activity: an idle session expires with its stream
			if w.comment("keep-alive") != nil {
				return nil
			}
		}
	}
}

// a2eRunFunc runs a session's chain/req as an A2E run of the run service;
// the run records the session that started it.
func (s *Server) a2eRunFunc(ctx context.Context, sessionID string, req *engine.Request, doc *engine.Chain, sink engine.EventSink) (*engine.Result, error) {
	input := req.InitialInput
	if input == nil {
		input = map[string]any{}
	}
	return s.runs.RunAdHocTriggered(ctx, doc, input, store.KindA2E, runs.Trigger{Kind: store.TriggerA2ESession, ID: sessionID}, sink)
}

// a2eRunCode names a run the service refused (busy, shutting down) with the
// API's own code, as POST /v1/a2e would.
func (s *Server) a2eRunCode(err error) *a2e.WireError {
	ae := s.errorFor(err)
	return &a2e.WireError{Code: ae.Code, Message: ae.Message, Details: detailsMap(ae.Details)}
}
