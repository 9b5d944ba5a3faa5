package a2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/google/uuid"
)

// The A2E base protocol around the chains capability: an agent opens a
// session with handshake/req, checks it with ping, and closes it with
// shutdown; chain/req messages run in between, several at a time, each
// answered by its id (req_id). A Session speaks that protocol over any
// transport: the stdio host feeds it lines, the HTTP host the bodies of
// POST …/send, and both hand it a Send that writes one message.

// Base-protocol message types and the capability this host offers.
const (
	TypeHandshakeReq  = "handshake/req"
	TypeHandshakeResp = "handshake/resp"
	TypePing          = "ping"
	TypePong          = "pong"
	TypeShutdown      = "shutdown"
	CapabilityChains  = "chains"
)

// DefaultMaxParallel bounds the chain/req messages one session runs at once
// (the handshake's max_parallel).
const DefaultMaxParallel = 4

// DefaultMaxQueued and DefaultMaxQueuedBytes bound the chain/req messages a
// session has accepted that wait for a run slot: their count and the bytes
// of their messages. A control message never waits behind them.
const (
	DefaultMaxQueued      = 64
	DefaultMaxQueuedBytes = 32 << 20
)

// TypeError is the base protocol's error message (host → agent): a host
// uses it for what answers no request, such as a session it closes.
const TypeError = "error"

// seenIDs bounds how many recent chain/req ids a session remembers, so a
// resent message (the SDK's HTTP transport retries a failed send) does not
// run twice.
const seenIDs = 1024

// HandshakeRequest is the agent's handshake/req.
type HandshakeRequest struct {
	Type      string   `json:"type"`
	ID        string   `json:"id"`
	Version   string   `json:"version"`
	Ts        float64  `json:"ts"`
	AgentID   string   `json:"agent_id"`
	AgentCaps []string `json:"agent_caps"`
	AuthToken string   `json:"auth_token"`
}

// Capability is one negotiated capability of a handshake/resp.
type Capability struct {
	Capability string         `json:"capability"`
	Enabled    bool           `json:"enabled"`
	Metadata   map[string]any `json:"metadata"`
}

// HandshakeResponse is the host's handshake/resp.
type HandshakeResponse struct {
	Type         string       `json:"type"`
	ID           string       `json:"id"`
	Version      string       `json:"version"`
	Ts           float64      `json:"ts"`
	ReqID        string       `json:"req_id"`
	SessionID    string       `json:"session_id"`
	AcceptedCaps []Capability `json:"accepted_caps"`
	MaxParallel  int          `json:"max_parallel"`
	OK           bool         `json:"ok"`
	Reason       string       `json:"reason"`
}

// Pong answers a ping.
type Pong struct {
	Type          string  `json:"type"`
	ID            string  `json:"id"`
	Version       string  `json:"version"`
	Ts            float64 `json:"ts"`
	ReqID         string  `json:"req_id"`
	UptimeSeconds float64 `json:"uptime_seconds"`
}

// SessionOptions configure a Session.
type SessionOptions struct {
	// ID is the session id (handshake/resp's session_id); a new one when empty.
	ID string
	// IDIssued says the agent was already given ID (the HTTP transport's
	// POST …/session): a chain/req naming another session_id is refused
	// from the start, not only after a handshake.
	IDIssued bool
	// MaxParallel bounds the chain/req messages running at once
	// (DefaultMaxParallel when ≤ 0); the others wait for a free slot.
	MaxParallel int
	// MaxQueued and MaxQueuedBytes bound the chain/req messages waiting
	// for a slot (DefaultMaxQueued, DefaultMaxQueuedBytes when ≤ 0): one
	// past either is refused at once with host_busy, unless WaitForRoom.
	MaxQueued      int
	MaxQueuedBytes int
	// WaitForRoom makes Handle wait, for a chain/req past those bounds,
	// until one waiting starts (or Handle's ctx ends: host_busy) instead of
	// refusing it: a reader of a pipe stops reading, and a file of many
	// requests runs them all. Only with the queue full does a control
	// message wait.
	WaitForRoom bool
	Limits      chain.Limits
	// Run runs a decoded request's chain, sending events to sink (nil when
	// the request is not streaming). A nil result with an error is a host
	// failure; RunCode turns that error into chain/resp's error.
	Run func(ctx context.Context, req *chain.Request, c *chain.Chain, sink engine.EventSink) (*engine.Result, error)
	// Check, when set, validates a chain before it runs; issues with errors
	// refuse it with chain_invalid (chain_cycle for a cycle), nothing run.
	Check func(c *chain.Chain) []chain.Issue
	// RunCode names a host failure (nil: host_error and the error's text).
	RunCode func(err error) *WireError
	// Send writes one message to the agent (unless HandleReply was given
	// another). The session calls it from one goroutine at a time.
	Send func(msg any)
}

// Reply is where the answers to one message go (HandleReply).
type Reply struct {
	// Send writes the answers (handshake/resp, pong, chain/event,
	// chain/resp); nil: SessionOptions.Send.
	Send func(msg any)
	// Done, when set, is called once after the last answer to the message
	// was sent, or at once when none will be (shutdown, a resent chain/req).
	Done func()
}

// ErrorMessage is the base protocol's error message.
type ErrorMessage struct {
	Type      string         `json:"type"`
	ID        string         `json:"id"`
	Version   string         `json:"version"`
	Ts        float64        `json:"ts"`
	ReqID     string         `json:"req_id"`
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Detail    map[string]any `json:"detail,omitempty"`
}

// NewErrorMessage builds an error message answering no request.
func NewErrorMessage(code, message string, retryable bool) ErrorMessage {
	return ErrorMessage{Type: TypeError, ID: hexID(), Version: chain.WireVersion, Ts: unixSeconds(time.Now()),
		Code: code, Message: message, Retryable: retryable}
}

// Session is one agent's A2E session.
type Session struct {
	opts    SessionOptions
	started time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	slots   chan struct{}
	room    chan struct{} // a waiting request left the queue
	wg      sync.WaitGroup
	sendMu  sync.Mutex

	mu          sync.Mutex
	closed      bool
	issued      bool // the agent knows the session id: chain/req's session_id must match
	seen        map[string]struct{}
	order       []string // seen ids, oldest first
	queued      int      // chain/req messages accepted, waiting for a slot
	queuedBytes int      // their bytes
}

// NewSession starts a session; its runs stop when ctx ends or Close is called.
func NewSession(ctx context.Context, opts SessionOptions) *Session {
	if opts.ID == "" {
		opts.ID = NewSessionID()
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = DefaultMaxQueued
	}
	if opts.MaxQueuedBytes <= 0 {
		opts.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Session{opts: opts, started: time.Now(), ctx: ctx, cancel: cancel, issued: opts.IDIssued,
		slots: make(chan struct{}, opts.MaxParallel), room: make(chan struct{}, 1), seen: map[string]struct{}{}}
}

// NewSessionID returns a fresh session id (32 hex digits, as the SDK's).
func NewSessionID() string { return hexID() }

func hexID() string { return strings.ReplaceAll(uuid.NewString(), "-", "") }

// ID returns the session id.
func (s *Session) ID() string { return s.opts.ID }

func (s *Session) send(r Reply, msg any) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if r.Send != nil {
		r.Send(msg)
		return
	}
	s.opts.Send(msg)
}

// Handle answers one message. A chain/req is accepted into the session's
// bounded queue and runs in the background once a run slot is free, so
// Handle never waits behind running chains: handshake/req and ping are
// answered, and shutdown reported, before it returns. It reports a
// shutdown message with the time the agent gives the host to drain.
func (s *Session) Handle(ctx context.Context, msg []byte) (shutdown bool, drain time.Duration) {
	return s.HandleReply(ctx, msg, Reply{})
}

// HandleReply is Handle with the message's answers sent to r.
func (s *Session) HandleReply(ctx context.Context, msg []byte, r Reply) (shutdown bool, drain time.Duration) {
	done := r.Done
	if done == nil {
		done = func() {}
	}
	var env struct {
		Type    json.RawMessage `json:"type"`
		ID      string          `json:"id"`
		ChainID string          `json:"chain_id"`
		Timeout *float64        `json:"timeout"`
	}
	_ = json.Unmarshal(msg, &env)
	var typ string
	_ = json.Unmarshal(env.Type, &typ)
	switch typ {
	case TypeHandshakeReq:
		resp := s.handshake(msg)
		if resp.OK {
			s.mu.Lock()
			s.issued = true
			s.mu.Unlock()
		}
		s.send(r, resp)
	case TypePing:
		s.send(r, Pong{Type: TypePong, ID: hexID(), Version: chain.WireVersion, Ts: unixSeconds(time.Now()),
			ReqID: env.ID, UptimeSeconds: time.Since(s.started).Seconds()})
	case TypeShutdown:
		drain = 10 * time.Second // the base protocol's default
		if env.Timeout != nil && *env.Timeout >= 0 {
			drain = time.Duration(min(*env.Timeout, 3600) * float64(time.Second))
		}
		done()
		return true, drain
	default:
		if s.chainRequest(ctx, msg, env.ID, env.ChainID, r) {
			return false, 0 // the run calls done after its chain/resp
		}
	}
	done()
	return false, 0
}

// handshake answers a handshake/req: the session id and, of the agent's
// capabilities, the one this host has (chains).
func (s *Session) handshake(msg []byte) HandshakeResponse {
	var req HandshakeRequest
	err := json.Unmarshal(msg, &req)
	resp := HandshakeResponse{Type: TypeHandshakeResp, ID: hexID(), Version: chain.WireVersion, Ts: unixSeconds(time.Now()),
		ReqID: req.ID, SessionID: s.opts.ID, AcceptedCaps: []Capability{}, MaxParallel: s.opts.MaxParallel, OK: true}
	switch {
	case err != nil:
		resp.OK, resp.Reason = false, "handshake/req does not decode: "+err.Error()
	case req.Version != "" && req.Version != chain.WireVersion:
		resp.OK, resp.Reason = false, fmt.Sprintf("unsupported protocol version %q (this host speaks %q)", req.Version, chain.WireVersion)
	default:
		for _, c := range req.AgentCaps {
			if c == CapabilityChains {
				resp.AcceptedCaps = append(resp.AcceptedCaps, Capability{Capability: CapabilityChains, Enabled: true, Metadata: map[string]any{}})
				break
			}
		}
	}
	return resp
}

// refuse sends the chain/resp refusing a request before it ran.
func (s *Session) refuse(r Reply, reqID, chainID string, we *WireError) {
	resp := NewResponseMessage(&chain.Request{ID: reqID, ChainID: chainID}, nil)
	resp.Error = we
	s.send(r, resp)
}

// firstSeen records a chain/req id; false when it was seen recently.
func (s *Session) firstSeen(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.seen[id]; dup {
		return false
	}
	s.seen[id] = struct{}{}
	s.order = append(s.order, id)
	if len(s.order) > seenIDs {
		delete(s.seen, s.order[0])
		s.order = s.order[1:]
	}
	return true
}

// chainRequest answers a chain/req that is refused at once, or accepts it:
// it waits for a run slot in the background, so the door that read it is
// free for the next message (with the queue full and WaitForRoom, it first
// waits for room, up to ctx). It reports whether the request was accepted
// (its run then calls r.Done).
func (s *Session) chainRequest(ctx context.Context, msg []byte, id, chainID string, r Reply) (accepted bool) {
	c, req, err := chain.DecodeDocument(msg, s.opts.Limits)
	if err == nil && req == nil {
		err = &chain.DecodeError{Path: "type", Msg: `not an A2E message: send handshake/req, ping, shutdown or chain/req (a chain/req has "type": "chain/req")`}
	}
	if err != nil {
		s.refuse(r, id, chainID, &WireError{Code: chain.CodeDecode, Message: err.Error()})
		return false
	}
	s.mu.Lock()
	issued := s.issued
	s.mu.Unlock()
	// Before a handshake (a bare chain/req on stdio) any session_id is the
	// agent's own label; after it, it must be the one the host gave.
	if issued && req.SessionID != "" && req.SessionID != s.opts.ID {
		s.refuse(r, req.ID, req.ChainID, &WireError{Code: chain.CodeDecode,
			Message: fmt.Sprintf("session_id: %q is not this session (%q, from handshake/resp)", req.SessionID, s.opts.ID)})
		return false
	}
	if id != "" && !s.firstSeen(id) {
		return false // a resent message: it is running or was answered already
	}
	if s.opts.Check != nil {
		if issues := s.opts.Check(c); chain.HasErrors(issues) {
			s.send(r, NewInvalidResponse(req, issues))
			return false
		}
	}
	size := len(msg)
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.refuse(r, req.ID, req.ChainID, &WireError{Code: "host_error", Message: "the session is closing"})
			return false
		}
		// A request that finds a slot free does not count as waiting; the
		// queue bounds only those that would wait.
		select {
		case s.slots <- struct{}{}:
			s.wg.Add(1)
			s.mu.Unlock()
			go s.runInSlot(req, c, r)
			return true
		default:
		}
		full := s.queued >= s.opts.MaxQueued || s.queuedBytes+size > s.opts.MaxQueuedBytes
		if !full {
			break // s.mu held
		}
		queued, bytes := s.queued, s.queuedBytes
		s.mu.Unlock()
		busy := &WireError{Code: "host_busy",
			Message: fmt.Sprintf("the session runs %d chains (max_parallel) and %d wait (%d bytes; at most %d, %d bytes); send again when one has answered",
				s.opts.MaxParallel, queued, bytes, s.opts.MaxQueued, s.opts.MaxQueuedBytes),
			Details: map[string]any{"max_parallel": s.opts.MaxParallel, "max_queued": s.opts.MaxQueued, "max_queued_bytes": s.opts.MaxQueuedBytes}}
		if !s.opts.WaitForRoom || size > s.opts.MaxQueuedBytes {
			s.refuse(r, req.ID, req.ChainID, busy)
			return false
		}
		select {
		case <-s.room:
		case <-ctx.Done():
			s.refuse(r, req.ID, req.ChainID, busy)
			return false
		case <-s.ctx.Done():
			s.refuse(r, req.ID, req.ChainID, &WireError{Code: "host_error", Message: "the session is closing"})
			return false
		}
	}
	s.queued++
	s.queuedBytes += size
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		unqueue := func() {
			s.mu.Lock()
			s.queued--
			s.queuedBytes -= size
			s.mu.Unlock()
			select {
			case s.room <- struct{}{}:
			default:
			}
		}
		select {
		case s.slots <- struct{}{}:
			unqueue()
			s.runInSlot(req, c, r)
		case <-s.ctx.Done():
			unqueue()
			s.refuse(r, req.ID, req.ChainID, &WireError{Code: "host_error", Message: "the session closed before a run slot was free"})
			s.finish(r)
		}
	}()
	return true
}

// Queued reports the chain/req messages waiting for a run slot and their bytes.
func (s *Session) Queued() (n, bytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued, s.queuedBytes
}

// runInSlot runs an accepted request in the slot it holds, then frees it.
func (s *Session) runInSlot(req *chain.Request, c *chain.Chain, r Reply) {
	defer func() { <-s.slots; s.finish(r) }()
	s.run(req, c, r)
}

// finish ends an accepted request: its answers are all sent.
func (s *Session) finish(r Reply) {
	if r.Done != nil {
		r.Done()
	}
	s.wg.Done()
}

func (s *Session) run(req *chain.Request, c *chain.Chain, r Reply) {
	var sink engine.EventSink
	if req.IsStreaming() {
		sink = engine.SinkFunc(func(ev engine.Event) { s.send(r, NewEventMessage(req.ID, ev)) })
	}
	res, err := s.opts.Run(s.ctx, req, c, sink)
	resp := NewResponseMessage(req, res)
	if res == nil {
		if err == nil {
			err = fmt.Errorf("the run did not start")
		}
		we := &WireError{Code: "host_error", Message: err.Error()}
		if s.opts.RunCode != nil {
			if w := s.opts.RunCode(err); w != nil {
				we = w
			}
		}
		resp.Error = we
	}
	s.send(r, resp)
}

// Drain waits up to d for the running chains to answer, then stops the
// rest (each still answers, cancelled) and waits for them.
func (s *Session) Drain(d time.Duration) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	s.cancel()
	<-done
}

// Close stops every running chain and waits for their answers.
func (s *Session) Close() { s.Drain(0) }
