// Package a2ehttp is the studio's A2E door: POST /v1/a2e, which runs one
// chain/req and answers with its messages (SSE, NDJSON or one chain/resp),
// and the A2E SDK's HTTP transport, under the base URL /v1/a2e:
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
//
// Every answer, a refusal too, is an A2E message (ErrorResponse). Package
// web mounts the handler behind its sign-in and roles and gives it its
// streams' budget; this package does not import web.
package a2ehttp

import (
	"context"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// MIMENDJSON is newline-delimited JSON, one A2E message per line.
const MIMENDJSON = "application/x-ndjson"

// HeaderSessionID carries the session id on send and stream.
const HeaderSessionID = "X-Session-Id"

// Bounds of the HTTP sessions (Config fields override the defaults).
const (
	defaultSessions        = 64
	defaultSessionsPerUser = 8
	defaultSessionIdle     = 10 * time.Minute
	// DefaultSessionBytes is what one session may hold when
	// Config.SessionBytes does not say.
	DefaultSessionBytes = 32 << 20
	queueMessages       = 4096
	// answerReserve is what a send reserves beyond its own size: room
	// for its answer when that is an error (a pong, a handshake/resp, a
	// refusal, the chain/resp saying an answer was too large).
	answerReserve = 4 << 10
)

// CodeResponseTooLarge is the chain/resp error of an answer that did not
// fit in what its session may hold: the run ran, its outputs are not kept.
const CodeResponseTooLarge = "response_too_large"

// CodeSessionExpired is the error message that ends the stream of a session
// closed for being idle.
const CodeSessionExpired = "session_expired"

// sessionTable is the server's table of HTTP sessions. Its context, made on
// first use, is every session's: Stop cancels it.
type sessionTable struct {
	mu     sync.Mutex
	m      map[string]*httpSession
	ctx    context.Context
	cancel context.CancelFunc
}

// base returns the sessions' context.
func (t *sessionTable) base() context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	return t.ctx
}

// stop cancels every session's runs (Stop); sessions opened
// after it start cancelled.
func (t *sessionTable) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil {
		t.ctx, t.cancel = context.WithCancel(context.Background())
	}
	t.cancel()
}

// Stream kinds, as the streams' budget counts them (its metrics' label).
const (
	StreamRun     = "a2e_run"    // POST /v1/a2e answered as SSE or NDJSON
	StreamSession = "a2e_stream" // GET /v1/a2e/stream
)

// StreamWriter writes one streaming answer's frames within the server's
// budget of streams: each write under a deadline, the bytes buffered out of
// one server-wide budget (web's stream pool).
type StreamWriter interface {
	// Start sends the status line and the headers set so far.
	Start(status int) error
	// Append buffers a frame (not to be changed until the next Flush),
	// waiting for room in the budget, and writes the buffer once full.
	Append(ctx context.Context, frame []byte) error
	// Flush writes what is buffered and flushes the connection.
	Flush() error
	// Err is the stream's first failure; every later call answers it.
	Err() error
	// Close gives back what the stream holds.
	Close()
}

// Config bounds the A2E door; zero values take the defaults.
type Config struct {
	// MaxSessions bounds the open sessions (default 64),
	// MaxSessionsPerUser those one user opens (default 8); SessionIdle is
	// how long one lives with no send, nothing delivered and no chain in
	// flight (default 10 minutes); SessionBytes bounds what one session
	// holds for its agent (default 32 MiB).
	MaxSessions        int
	MaxSessionsPerUser int
	SessionIdle        time.Duration
	SessionBytes       int
	// Heartbeat is how often an idle session stream sends a comment line
	// (default 15s).
	Heartbeat time.Duration
	// Limits bound the chain documents a request carries.
	Limits chain.Limits
	// BodyLimit is the API's request body limit, as the API's error table
	// words a refusal (httpcore.ErrorFor).
	BodyLimit int64
}

// Runs is the part of the run service (runs.Service) the A2E door uses:
// ad-hoc runs of the chains A2E messages carry, checked first as a saved
// chain is.
type Runs interface {
	RunAdHoc(ctx context.Context, doc *chain.Chain, input map[string]any, kind string, sink engine.EventSink) (*engine.Result, error)
	RunAdHocTriggered(ctx context.Context, doc *chain.Chain, input map[string]any, kind string, trig runs.Trigger, sink engine.EventSink) (*engine.Result, error)
	CheckAdHoc(ctx context.Context, doc *chain.Chain) []chain.Issue
}

// Handler is the A2E door: POST /v1/a2e and the sessions of the HTTP
// transport.
type Handler struct {
	cfg        Config
	runs       Runs
	openStream func(c echo.Context, kind string) StreamWriter
	sessions   sessionTable
}

// New builds the A2E door over the run service; openStream opens a
// streaming answer of a kind (StreamRun, StreamSession) in the server's
// budget of streams.
func New(cfg Config, rs Runs, openStream func(c echo.Context, kind string) StreamWriter) *Handler {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = defaultSessions
	}
	if cfg.MaxSessionsPerUser <= 0 {
		cfg.MaxSessionsPerUser = defaultSessionsPerUser
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = defaultSessionIdle
	}
	if cfg.SessionBytes <= 0 {
		cfg.SessionBytes = DefaultSessionBytes
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	return &Handler{cfg: cfg, runs: rs, openStream: openStream}
}

// Stop cancels every session's runs (server shutdown); sessions opened
// after it start cancelled.
func (s *Handler) Stop() { s.sessions.stop() }

// errorFor words an error as the API's table does.
func (s *Handler) errorFor(err error) *httpcore.APIError {
	return httpcore.ErrorFor(err, s.cfg.BodyLimit)
}
