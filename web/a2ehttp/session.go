package a2ehttp

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
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// httpSession is one session and what it holds for its stream.
type httpSession struct {
	sess  *a2e.Session
	owner string // the user who opened it (owner)
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

// ticket is one message's reservation: its answers are charged to it.
type ticket struct {
	bytes int
	spent bool // the final answer took it, or the message was done
}

// held is what the session holds: queued, being written, reserved.
// h.mu is held.
func (h *httpSession) held() int { return h.queued + h.writing + h.resBytes }

// reserve makes room for a message and its answer before the session takes
// it; false when that would pass the session's bounds.
func (h *httpSession) reserve(n int) (*ticket, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.queue)+h.resMsgs+1 > queueMessages || h.held()+n > h.limit {
		return nil, false
	}
	h.resBytes += n
	h.resMsgs++
	h.peak = max(h.peak, h.held())
	return &ticket{bytes: n}, true
}

// release gives back what the ticket still holds. h.mu is held.
func (h *httpSession) releaseLocked(t *ticket) {
	if t == nil || t.spent {
		return
	}
	t.spent = true
	h.resBytes -= t.bytes
	h.resMsgs--
}

// done ends a message: nothing more answers it.
func (h *httpSession) done(t *ticket) {
	h.mu.Lock()
	h.releaseLocked(t)
	h.mu.Unlock()
}

// push queues one answer to the message of ticket t for the stream. The
// final answer (chain/resp, pong, handshake/resp) takes the ticket's room:
// a chain/resp too large for it and what is free is replaced by one saying
// so. Any other message (chain/event) is queued only into free room, else
// dropped: the chain/resp still comes.
func (h *httpSession) push(t *ticket, msg any) {
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
			// made (its own size and answerReserve), so it fits.
			b = tooLargeResponse(resp, len(b), h.limit, h.held())
		}
	case len(h.queue)+h.resMsgs < queueMessages && h.held()+len(b) <= h.limit:
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
	out := a2e.NewResponseMessage(&chain.Request{ID: r.ReqID, ChainID: r.ChainID}, nil)
	out.DurationMS, out.NodesRun = r.DurationMS, r.NodesRun
	out.Error = &a2e.WireError{Code: CodeResponseTooLarge,
		Message: fmt.Sprintf("the chain/resp is %d bytes, more than the session may hold (%d bytes, %d of them held unread): "+
			"the run ran, its outputs are not kept; read GET /v1/a2e/stream as it goes, or return less", n, limit, held),
		Details: map[string]any{"bytes": n, "limit_bytes": limit, "held_bytes": held}}
	b, _ := json.Marshal(out)
	return b
}

func (h *httpSession) wake() {
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *httpSession) touch() {
	h.mu.Lock()
	h.used = time.Now()
	h.mu.Unlock()
}

// take returns the queued messages, counted as being written until
// written(n); closed when the session is over and nothing is left to send.
// Taking messages is activity: the session is not idle.
func (h *httpSession) take() (msgs [][]byte, closed bool) {
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
func (h *httpSession) written(n int) {
	h.mu.Lock()
	h.writing -= n
	h.mu.Unlock()
}

func (s *Handler) limits() (maxAll, perUser int, idle time.Duration, bytes int) {
	return s.cfg.MaxSessions, s.cfg.MaxSessionsPerUser, s.cfg.SessionIdle, s.cfg.SessionBytes
}

// owner names the caller a session belongs to: the user and when it was
// made, so a removed user's sessions do not pass to a new one of the same
// name.
func owner(c echo.Context) string {
	id := httpcore.CallerOf(c)
	return id.Via + "\x00" + id.Name + "\x00" + strconv.FormatInt(id.Created.UnixNano(), 10)
}

// ExpireIdle closes the sessions idle for the idle time: no send, nothing
// delivered, no chain in flight, whether a stream is attached or not (its
// stream ends with a session_expired error message). Called on every
// session request, so no janitor goroutine outlives the server.
func (s *Handler) ExpireIdle(now time.Time) {
	_, _, idle, _ := s.limits()
	var old []*httpSession
	s.sessions.mu.Lock()
	for id, h := range s.sessions.m {
		h.mu.Lock()
		if h.resMsgs == 0 && now.Sub(h.used) > idle {
			delete(s.sessions.m, id)
			old = append(old, h)
		}
		h.mu.Unlock()
	}
	s.sessions.mu.Unlock()
	for _, h := range old {
		final, _ := json.Marshal(a2e.NewErrorMessage(CodeSessionExpired,
			fmt.Sprintf("the session was idle for %s (no send and nothing delivered) and is closed; open another with POST /v1/a2e/session", idle), false))
		go s.endSession(h, 0, final)
	}
}

// endSession drains the session's runs (up to drain), then closes it; the
// stream sends what is left, then final when set, and ends.
func (s *Handler) endSession(h *httpSession, drain time.Duration, final []byte) {
	h.sess.Drain(drain)
	h.mu.Lock()
	h.closed = true
	h.final = final
	h.mu.Unlock()
	h.wake()
	s.sessions.mu.Lock()
	if s.sessions.m[h.sess.ID()] == h {
		delete(s.sessions.m, h.sess.ID())
	}
	s.sessions.mu.Unlock()
}

// lookupSession finds the session named by X-Session-Id, if the caller
// opened it: another user's session id answers as an unknown one.
func (s *Handler) lookupSession(c echo.Context) (*httpSession, error) {
	s.ExpireIdle(time.Now())
	id := c.Request().Header.Get(HeaderSessionID)
	if id == "" {
		return nil, httpcore.Error(httpcore.EBADREQUEST, "session_required",
			"send the session id from POST /v1/a2e/session in the "+HeaderSessionID+" header", map[string]any{"header": HeaderSessionID})
	}
	s.sessions.mu.Lock()
	h := s.sessions.m[id]
	s.sessions.mu.Unlock()
	if h == nil || h.owner != owner(c) {
		_, _, idle, _ := s.limits()
		if len(id) > 64 {
			id = id[:64] + "…"
		}
		return nil, httpcore.Error(httpcore.ENOTFOUND, "unknown_session",
			fmt.Sprintf("no A2E session %q of yours: it was shut down, or expired after %s idle; open another with POST /v1/a2e/session", id, idle), nil)
	}
	return h, nil
}

// POST /v1/a2e/session: open a session.
func (s *Handler) OpenSession(c echo.Context) error {
	now := time.Now()
	s.ExpireIdle(now)
	maxAll, perUser, _, limit := s.limits()
	id := a2e.NewSessionID()
	h := &httpSession{owner: owner(c), limit: limit, signal: make(chan struct{}, 1), used: now}
	base := s.sessions.base()
	s.sessions.mu.Lock()
	if s.sessions.m == nil {
		s.sessions.m = map[string]*httpSession{}
	}
	mine := 0
	for _, o := range s.sessions.m {
		if o.owner == h.owner {
			mine++
		}
	}
	if mine >= perUser {
		s.sessions.mu.Unlock()
		return httpcore.Error(httpcore.ETOOMANY, "too_many_sessions",
			fmt.Sprintf("you have %d A2E sessions open, the limit per user; shut one down (a shutdown message) or wait for an idle one to expire", perUser),
			map[string]any{"limit": perUser, "per": "user"})
	}
	if len(s.sessions.m) >= maxAll {
		s.sessions.mu.Unlock()
		return httpcore.Error(httpcore.ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%d A2E sessions are open, the limit; shut one down (a shutdown message) or wait for an idle one to expire", maxAll),
			map[string]any{"limit": maxAll, "per": "server"})
	}
	h.sess = a2e.NewSession(base, a2e.SessionOptions{
		ID:             id,
		IDIssued:       true,
		Limits:         s.cfg.Limits,
		MaxQueuedBytes: limit,
		Send:           func(msg any) { h.push(nil, msg) },
		Run: func(ctx context.Context, req *chain.Request, doc *chain.Chain, sink engine.EventSink) (*engine.Result, error) {
			return s.runFunc(ctx, id, req, doc, sink)
		},
		Check:   func(doc *chain.Chain) []chain.Issue { return s.runs.CheckAdHoc(base, doc) },
		RunCode: s.runCode,
	})
	s.sessions.m[id] = h
	s.sessions.mu.Unlock()
	return c.JSON(http.StatusOK, map[string]any{"session_id": id})
}

// POST /v1/a2e/send: one A2E message for the session; its answers arrive on
// the stream. 202 once the session took it (an answer that is an error is a
// chain/resp on the stream too); a resent chain/req id is not run twice. A
// chain/req waiting for a run slot waits in the session, not here. Before
// the session takes a message it reserves the message's size and room for
// an answer; past the session's bound it is refused with 503
// stream_not_read.
func (s *Handler) Send(c echo.Context) error {
	body, err := httpcore.ReadBody(c)
	if err != nil {
		return err
	}
	noteEnvelope(c, body) // a refusal answers the message by its id
	h, err := s.lookupSession(c)
	if err != nil {
		return err
	}
	t, ok := h.reserve(len(body) + answerReserve)
	if !ok {
		h.mu.Lock()
		held, msgs := h.held(), len(h.queue)+h.resMsgs
		h.mu.Unlock()
		return httpcore.Error(httpcore.EUNAVAILABLE, "stream_not_read",
			fmt.Sprintf("the session holds %d bytes and %d messages its stream has not delivered (at most %d bytes, %d messages, answers of running chains included): "+
				"read GET /v1/a2e/stream, then send again", held, msgs, h.limit, queueMessages),
			map[string]any{"held_bytes": held, "limit_bytes": h.limit, "held_messages": msgs, "limit_messages": queueMessages})
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
func (s *Handler) Stream(c echo.Context) error {
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
	w := s.newWriter(c, StreamSession, false)
	defer w.close()
	if w.start() != nil {
		return nil
	}
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	// An attached stream is no activity: the stream looks for idle
	// sessions itself, as no other request may come to.
	_, _, idle, _ := s.limits()
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
			s.ExpireIdle(now)
		case <-beat.C:
			// a heartbeat is no activity: an idle session expires with its stream
			if w.comment("keep-alive") != nil {
				return nil
			}
		}
	}
}

// runFunc runs a session's chain/req as an A2E run of the run service;
// the run records the session that started it.
func (s *Handler) runFunc(ctx context.Context, sessionID string, req *chain.Request, doc *chain.Chain, sink engine.EventSink) (*engine.Result, error) {
	input := req.InitialInput
	if input == nil {
		input = map[string]any{}
	}
	return s.runs.RunAdHocTriggered(ctx, doc, input, store.KindA2E, runs.Trigger{Kind: store.TriggerA2ESession, ID: sessionID}, sink)
}

// runCode names a run the service refused (busy, shutting down) with the
// API's own code, as POST /v1/a2e would.
func (s *Handler) runCode(err error) *a2e.WireError {
	ae := s.errorFor(err)
	return &a2e.WireError{Code: ae.Code, Message: ae.Message, Details: detailsMap(ae.Details)}
}

// Holding reads what session id holds (tests, diagnosis): bytes now
// (queued, being written, reserved), the most it ever held, and messages
// in flight; ok is false when no such session is open.
func (s *Handler) Holding(id string) (held, peak, inFlight int, ok bool) {
	s.sessions.mu.Lock()
	h := s.sessions.m[id]
	s.sessions.mu.Unlock()
	if h == nil {
		return 0, 0, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held(), h.peak, h.resMsgs, true
}
