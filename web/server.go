// Package web is Chain Studio's HTTP face: the JSON API, the live run stream
// (SSE) and the designer's pages, and the route table, sign-in and roles
// the other doors are mounted behind: the A2E door (web/a2ehttp) and the
// MCP server (web/mcpserver), which share web/httpcore with it. It reads
// the store and asks the run service (runs.Service) to execute runs; it
// holds no chain logic and builds no engine of its own.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/a2ehttp"
	"github.com/chainstudio/studio/web/api"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/live"
	"github.com/chainstudio/studio/web/mcpserver"
	"github.com/chainstudio/studio/web/ops"
	"github.com/chainstudio/studio/web/pages"
	"github.com/labstack/echo/v4"
	"golang.org/x/sync/singleflight"
)

// Config configures a Server.
type Config struct {
	Addr     string // listen address; default 127.0.0.1:8080
	Token    string // bearer token / login secret; required off loopback unless Insecure
	Insecure bool   // allow serving off loopback without a token
	// ModelAllowPrivate: agents' model calls may reach loopback and private
	// addresses (--model-allow-private); without it, the Credentials page
	// warns of a model credential's base URL the guard will refuse.
	ModelAllowPrivate bool
	// ViewersSeeCredentialed: viewers and approvers see the outputs of
	// calls that carried a stored credential (withheld from them by
	// default; --viewers-see-credentialed-output).
	ViewersSeeCredentialed bool
	BodyLimit              int64 // request body limit in bytes; default 16 MiB
	Logger                 *slog.Logger
	Limits                 chain.Limits
	// PublicURL is the address people reach the studio at behind a proxy
	// (--public-url): its host is accepted in the Host header, and an https
	// URL makes the sign-in cookie Secure.
	PublicURL string
	// AllowedHosts are further Host names to accept (tests use httptest's
	// example.com); loopback names and the listen address always are.
	AllowedHosts []string
	// TrustedProxies are the reverse proxies (--trusted-proxy) whose
	// X-Forwarded-For names the client, for the failed-attempt limiter and
	// the address an answer records; from any other peer the header is
	// ignored.
	TrustedProxies []netip.Prefix
	// SSEHeartbeat is how often an idle event stream sends a comment line,
	// so proxies and browsers keep the connection open; default 15s.
	SSEHeartbeat time.Duration
	// A2EMaxSessions bounds the open A2E HTTP sessions (default 64), and
	// A2EMaxSessionsPerUser those one user opens (default 8);
	// A2ESessionIdle is how long one lives with no send, nothing delivered
	// and no chain in flight (default 10 minutes); A2ESessionBytes bounds
	// what one session holds for its agent: messages queued and being
	// written, and room reserved for the answers of messages in flight
	// (default 32 MiB).
	A2EMaxSessions        int
	A2EMaxSessionsPerUser int
	A2ESessionIdle        time.Duration
	A2ESessionBytes       int
	// MCPMaxSessions bounds the open MCP sessions of /v1/mcp (default 64),
	// MCPMaxSessionsPerUser those one caller opens (default 8), and
	// MCPSessionIdle how long one lives with no request (default 10
	// minutes; a tool call in progress keeps it alive);
	// MCPSessionIdleNoStream how long one lives with no request in flight
	// and no open stream (GET): what a client that never closes its
	// sessions leaves behind (default 1 minute).
	MCPMaxSessions         int
	MCPMaxSessionsPerUser  int
	MCPSessionIdle         time.Duration
	MCPSessionIdleNoStream time.Duration
	// Bounds of every streaming response (live.StreamPool): how long a client
	// may take to accept a write (default 30s), how many bytes one
	// connection buffers before writing (default 256 KiB), and how many all
	// of them hold at once (default 16 MiB).
	StreamWriteTimeout time.Duration
	StreamBufferBytes  int
	StreamBufferTotal  int64
}

// Store is the part of a storage backend the doors read and write (ops.Store).
type Store = ops.Store

// Deps are what the server runs on, built by the host (cmd/studio).
type Deps struct {
	DB Store
	// Runs is the run service every run starts, steers and is watched
	// through (runs.Service); reads of finished runs go to the store.
	Runs     *runs.Service
	Registry *engine.Registry // the tools chains are validated against
	Agents   *agent.Set       // loaded agents (--agents); nil: none
	// Providers are the model provider kinds the host offers (the agents'
	// LoadOptions.Providers): GET /v1/providers lists them, and agents'
	// model lists are asked through them.
	Providers llm.Kinds
	// Metrics are served at /metrics; pass the same value to the run
	// service as its observer so run and node metrics are counted. Nil: the
	// server makes its own, with HTTP metrics only.
	Metrics *Metrics
	// Scheduler, when set, is woken when a schedule is saved, so that it
	// sees the change before its next look (runs.Scheduler).
	Scheduler interface{ Wake() }
	// Prices turn model tokens into cost (--prices); nil: tokens only.
	Prices *pricing.Prices
	// Propagator, when set (tracing on), reads the W3C trace context of
	// incoming requests: the runs they start continue the caller's trace,
	// and their log lines carry its ids.
	Propagator propagation.TextMapPropagator
	// Vault keeps the credentials chains use by name; nil: none (the
	// credentials routes list nothing and refuse to add).
	Vault *vault.Vault
	// ModelHTTP asks agents' model servers for their model lists: the
	// client the run service's model calls use (builtin.ModelHTTPClient).
	// Nil is http.DefaultClient, unguarded (tests).
	ModelHTTP *http.Client
	// MCP keeps the connections to the registered MCP servers (their status
	// on the admin routes; a change applies at once); nil: the MCP server
	// routes list records only and refuse changes.
	MCP *mcphost.Host
	// Templates are the chains "New chain…" and /v1/templates offer to
	// start from (examples.Templates); each must decode, or New fails.
	Templates []Template
}

// Template is a chain document to start from.
type Template struct {
	ID   string
	Data []byte
}

// Server is the studio's HTTP server: the route table, sign-in, roles and
// middleware, in front of the doors' handlers, which share its Env.
type Server struct {
	*ops.Env
	cfg     Config
	echo    *echo.Echo
	http    *http.Server
	pings   singleflight.Group   // readiness probes' store pings (health.go)
	pingLog *httpcore.LogSummary // failed readiness pings
	hookLog *httpcore.LogSummary // refused webhook calls (api.Triggers)
	streams *live.StreamPool     // the budget and counts of streaming responses
	live    *live.Streams        // the run event streams, API and page
	pages   *pages.Pages         // the designer's pages
	api     *api.API             // the JSON API
	a2e     *a2ehttp.Handler     // POST /v1/a2e and the A2E HTTP transport (doors.go)
	mcp     *mcpserver.Handler   // the MCP server of /v1/mcp (doors.go)
	metrics *Metrics             // Prometheus metrics, served at /metrics
	auth    *authState           // sign-in sessions, failed-attempt limiter, accepted Host names
	// registered holds "METHOD path" of every route, for authorize.
	registered map[string]bool
	// open caches isOpen's answer (openAt: when it was read; zero: ask).
	openMu sync.Mutex
	open   bool
	openAt time.Time
	prop   propagation.TextMapPropagator
}

// New builds the server's routes over its dependencies.
func New(cfg Config, deps Deps) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = 16 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SSEHeartbeat <= 0 {
		cfg.SSEHeartbeat = 15 * time.Second
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = live.DefaultStreamWriteTimeout
	}
	if cfg.StreamBufferBytes <= 0 {
		cfg.StreamBufferBytes = live.DefaultStreamBufferBytes
	}
	if cfg.StreamBufferTotal <= 0 {
		cfg.StreamBufferTotal = live.DefaultStreamBufferTotal
	}
	switch {
	case deps.DB == nil:
		return nil, errors.New("web: Deps.DB is required")
	case deps.Runs == nil:
		return nil, errors.New("web: Deps.Runs is required")
	case deps.Registry == nil:
		return nil, errors.New("web: Deps.Registry is required")
	}
	if err := checkExposure(context.Background(), cfg, deps.DB); err != nil {
		return nil, err
	}
	tmpls, err := decodeTemplates(deps.Templates, cfg.Limits)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, metrics: deps.Metrics, prop: deps.Propagator, Env: &ops.Env{
		DB: deps.DB, Registry: deps.Registry, Runs: deps.Runs, Log: cfg.Logger, Limits: cfg.Limits, BodyLimit: cfg.BodyLimit,
		Templates: tmpls, Agents: deps.Agents, Prices: deps.Prices, Vault: deps.Vault, MCP: deps.MCP,
		ModelHTTP: deps.ModelHTTP, ModelListWait: api.ModelListTimeout, Providers: deps.Providers,
		Changes: &httpcore.Changes{}, Scheduler: deps.Scheduler,
		ModelAllowPrivate: cfg.ModelAllowPrivate, ViewersSeeCredentialed: cfg.ViewersSeeCredentialed,
	}}
	s.pingLog = httpcore.NewLogSummary(s.Log, "readiness: the store does not answer")
	s.hookLog = httpcore.NewLogSummary(s.Log, "webhook call refused")
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if err := s.metrics.watch(deps.Runs); err != nil {
		return nil, err
	}
	s.streams = live.NewStreamPool(cfg.StreamWriteTimeout, cfg.StreamBufferBytes, cfg.StreamBufferTotal,
		live.StreamRunEvents, a2ehttp.StreamRun, a2ehttp.StreamSession)
	for _, c := range s.streams.Collectors() {
		if err := s.metrics.reg.Register(c); err != nil {
			return nil, err
		}
	}
	s.UsersChanged = s.forgetOpen
	s.pages = pages.New(s.Env)
	s.live = live.New(s.Env, s.streams, cfg.SSEHeartbeat)
	s.buildDoors()
	s.api = api.New(s.Env, s.mcp, s.hookLog)
	s.echo = s.newEcho()
	return s, nil
}

// Handler returns the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Metrics returns the server's Prometheus metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// isLoopback reports whether addr only listens on the loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// openRecheck is how long isOpen's answer is kept.
const openRecheck = time.Second

// checkExposure refuses to serve off loopback without an admin: the
// --token, or a user whose role is admin (unless the operator explicitly
// said --insecure, which serves an open studio while no user exists).
func checkExposure(ctx context.Context, cfg Config, db store.UserStore) error {
	if isLoopback(cfg.Addr) || cfg.Token != "" || cfg.Insecure {
		return nil
	}
	us, err := db.ListUsers(ctx)
	if err != nil {
		return fmt.Errorf("read users: %w", err)
	}
	for _, u := range us {
		if u.Role == store.RoleAdmin {
			return nil
		}
	}
	return fmt.Errorf("refusing to listen on %s without an admin: add one with `studio users add NAME --role admin` (it prints the admin's token), or set --token (or STUDIO_TOKEN); --insecure serves without authentication", cfg.Addr)
}

// ListenAndServe serves until ctx is cancelled, then shuts down gracefully:
// in-flight runs are checkpointed and left resumable.
func (s *Server) ListenAndServe(ctx context.Context, ready func(url string)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	s.http = &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		// No WriteTimeout: event streams stay open for as long as a run lasts.
	}
	if ready != nil {
		ready("http://" + ln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return s.Shutdown(context.Background())
}

// Shutdown cancels running runs (they end `cancelled`, resumable) and stops
// serving. The run service's event log stays open for the host to close
// after this returns, before the store closes.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var errs []error
	s.a2e.Stop() // A2E sessions' runs stop with the rest
	s.mcp.Stop() // MCP sessions close; their tool calls' runs stop with the rest
	s.pingLog.Stop()
	s.hookLog.Stop()
	if err := s.Runs.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// decodeTemplates decodes the templates once, at start: a template that
// does not decode is the build's mistake, not a user's.
func decodeTemplates(in []Template, lim chain.Limits) ([]ops.ChainTemplate, error) {
	out := make([]ops.ChainTemplate, 0, len(in))
	for _, t := range in {
		doc, _, err := chain.DecodeDocument(t.Data, lim)
		if err != nil {
			return nil, fmt.Errorf("web: template %q: %w", t.ID, err)
		}
		out = append(out, ops.ChainTemplate{ID: t.ID, Doc: doc})
	}
	return out, nil
}
