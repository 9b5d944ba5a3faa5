// Package web is Chain Studio's HTTP face: the JSON API, the live run stream
// (SSE), the A2E chain host endpoint and the designer's pages. It wires the
// engine to the store; it holds no chain logic of its own.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// Config configures a Server.
type Config struct {
	Addr      string // listen address; default 127.0.0.1:8080
	Token     string // bearer token / login secret; required off loopback unless Insecure
	Insecure  bool   // allow serving off loopback without a token
	BodyLimit int64  // request body limit in bytes; default 16 MiB
	Logger    *slog.Logger
	Limits    engine.Limits
	// PublicURL is the address people reach the studio at behind a proxy
	// (--public-url): its host is accepted in the Host header, and an https
	// URL makes the sign-in cookie Secure.
	PublicURL string
	// AllowedHosts are further Host names to accept (tests use httptest's
	// example.com); loopback names and the listen address always are.
	AllowedHosts []string
}

// Deps are what the server runs on. The engine is built by New so that its
// event sink and checkpointer are the store and the live hub.
type Deps struct {
	DB       store.Backend
	Registry *engine.Registry
	Agent    engine.AgentRunner
	Agents   *agent.Set // loaded agents (--agents); nil: no agent runtime unless Agent is set
}

// Server is the studio's HTTP server.
type Server struct {
	cfg     Config
	db      store.Backend
	eng     *engine.Engine
	hub     *Hub
	events  store.EventWriter
	runs    *Runner
	echo    *echo.Echo
	log     *slog.Logger
	http    *http.Server
	finals  sharedCalls // the final `run` event of event streams
	agents  *agent.Set  // loaded agents; nil when the host loaded none
	metrics *Metrics    // Prometheus metrics, served at /metrics
	auth    *authState  // sign-in sessions, failed-attempt limiter, accepted Host names
}

// New builds the server: engine, live hub, event writer, routes.
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
	if err := checkExposure(cfg); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, db: deps.DB, log: cfg.Logger, hub: NewHub(4096), agents: deps.Agents}
	s.events = deps.DB.NewEventWriter(store.EventWriterOptions{})
	s.metrics = newMetrics(s)
	agentRunner, chains := s.agentHooks(deps)
	s.eng = engine.New(engine.Options{
		Registry:     deps.Registry,
		Checkpointer: timedCheckpointer{deps.DB, s.metrics},
		Sink:         engine.MultiSink{s.events, s.hub, s.metrics},
		Chains:       chains,
		Agent:        agentRunner,
		Limits:       cfg.Limits,
	})
	s.runs = newRunner(s.eng, deps.DB, s.hub, s.events, cfg.Logger)
	s.runs.metrics = s.metrics
	s.echo = s.newEcho()
	return s, nil
}

// Handler returns the server's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// Engine returns the engine the server runs chains on.
func (s *Server) Engine() *engine.Engine { return s.eng }

// Metrics returns the server's Prometheus metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Runner returns the background run manager.
func (s *Server) Runner() *Runner { return s.runs }

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

// checkExposure refuses to serve off loopback without a token (unless the
// operator explicitly said --insecure).
func checkExposure(cfg Config) error {
	if isLoopback(cfg.Addr) || cfg.Token != "" || cfg.Insecure {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s without a token: set --token (or STUDIO_TOKEN), or pass --insecure to serve without authentication", cfg.Addr)
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

// Shutdown stops accepting requests, cancels running runs (they end
// `cancelled`, resumable), and flushes every event to the store.
func (s *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var errs []error
	if err := s.runs.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.http != nil {
		if err := s.http.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if err := s.events.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
