package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// cookieName holds a browser's sign-in session id (never the token).
const cookieName = "studio_session"

// contentSecurityPolicy allows scripts, styles, images and connections only
// from the studio itself (front-end libraries are vendored, never a CDN).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) newEcho() *echo.Echo {
	s.auth = newAuthState(s.cfg)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// c.RealIP() (answers record it) is the socket's address, or the
	// forwarded client's behind a --trusted-proxy; never a header an
	// untrusted peer wrote.
	e.IPExtractor = func(req *http.Request) string {
		if ip, ok := s.auth.proxies.clientAddr(req); ok {
			return ip.String()
		}
		return req.RemoteAddr
	}
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{}))
	e.Use(s.recoverer)
	if s.prop != nil {
		e.Use(s.traceContext)
	}
	e.Use(s.accessLog)
	e.Use(s.metrics.middleware(func(err error) int { return s.ErrorFor(err).Status() }))
	e.Use(securityHeaders)
	e.Use(s.checkHost)
	e.Use(middleware.BodyLimit(fmt.Sprintf("%dB", s.cfg.BodyLimit)))
	e.Use(s.sameOrigin)
	e.Use(s.authenticate)
	e.Use(s.authorize)
	e.Use(jsonBodies)
	s.routes(e)
	s.registered = map[string]bool{}
	for _, rt := range e.Routes() {
		s.registered[routeKey(rt.Method, rt.Path)] = true
	}
	return e
}

// securityHeaders sets the headers every response carries.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		return next(c)
	}
}

// checkHost answers 421 to a request whose Host is not a name of this
// studio: a DNS-rebinding page sends its own name, and the same-origin check
// below would compare two values that page controls.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h := c.Request().Host; !s.auth.hosts.allows(h) {
			return httpcore.Error(httpcore.EMISDIRECTED, "misdirected_request",
				fmt.Sprintf("this studio does not answer to the host %q: use its listen address or a loopback name, or start it with --public-url naming this host", h), nil)
		}
		return next(c)
	}
}

// sameOrigin refuses state-changing requests a browser sends from another
// site (CSRF): the Origin (or, without it, Sec-Fetch-Site) must be ours.
// Requests without either header come from programs, which carry the token.
func (s *Server) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		req := c.Request()
		if origin := req.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || u.Host != req.Host {
				return httpcore.Error(httpcore.EFORBIDDEN, "cross_site", fmt.Sprintf("cross-site request refused: Origin %q is not this studio (%s)", origin, req.Host), nil)
			}
			return next(c)
		}
		if site := req.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			return httpcore.Error(httpcore.EFORBIDDEN, "cross_site", "cross-site request refused", nil)
		}
		return next(c)
	}
}

// publicPaths need no token: the health checks, the login page, the
// static assets the login page uses, and webhook calls (POST
// /v1/hooks/{hook_id}), which carry their hook's HMAC signature instead.
func publicPath(p string) bool {
	return p == "/healthz" || p == "/livez" || p == "/readyz" || p == "/login" || strings.HasPrefix(p, "/static/") || hookPath(p)
}

// hookPath: /v1/hooks/{one segment}, nothing under it.
func hookPath(p string) bool {
	id, ok := strings.CutPrefix(p, "/v1/hooks/")
	return ok && id != "" && !strings.ContainsAny(id, "/%.")
}

// authenticate finds who sent the request (callerOf): a user's or the
// --token's `Authorization: Bearer <token>` for programs, the sign-in
// session cookie for browsers, or, on an open studio (no users, no --token,
// loopback or --insecure), the local user. A token is always compared: a
// right one gets in; a wrong one from an address or of a credential that
// failed too often is 429 rather than 401 (authState.failed). What the
// caller may do is authorize's business.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if publicPath(c.Path()) || publicPath(c.Request().URL.Path) {
			return next(c)
		}
		req := c.Request()
		open, err := s.isOpen(req.Context())
		if err != nil {
			return err
		}
		if open {
			setCaller(c, localIdentity, false)
			return next(c)
		}
		if bearer, ok := bearerToken(req); ok {
			id, ok, err := s.identityOf(req.Context(), bearer)
			if err != nil {
				return err
			}
			if ok {
				setCaller(c, id, false)
				return next(c)
			}
			client := s.auth.clientKey(req)
			if wait := s.auth.failed(client, bearer); wait > 0 {
				c.Response().Header().Set("Retry-After", httpcore.RetryAfter(wait))
				return httpcore.Error(httpcore.ETOOMANY, "too_many_requests",
					"too many wrong tokens from this address or with this token: retry in "+inSeconds(wait)+" (a right token is let in at any time)", nil)
			}
			s.Log.Warn("wrong bearer token", "client", client, "method", req.Method, "path", req.URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		} else if id, ok, err := s.sessionIdentity(req); err != nil {
			return err
		} else if ok {
			setCaller(c, id, true)
			return next(c)
		}
		if wantsHTML(req) {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(req.URL.RequestURI()))
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="studio"`)
		return httpcore.Error(httpcore.EUNAUTHORIZED, "unauthorized", "this studio needs a token: send Authorization: Bearer <token>", nil)
	}
}

// bearerToken returns the request's `Authorization: Bearer` value, if any.
func bearerToken(req *http.Request) (string, bool) {
	h := req.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Bearer ") {
		return "", false
	}
	return strings.TrimPrefix(h, "Bearer "), true
}

func (s *Server) tokenMatches(got string) bool {
	return s.cfg.Token != "" && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// sessionIdentity is who the request's session cookie signed in, with the
// role the store holds now: a removed user's sessions end at once, and a
// new role applies to the next request.
func (s *Server) sessionIdentity(req *http.Request) (httpcore.Identity, bool, error) {
	ck, err := req.Cookie(cookieName)
	if err != nil {
		return httpcore.Identity{}, false, nil
	}
	ss, ok := s.auth.sessions.get(ck.Value)
	if !ok {
		return httpcore.Identity{}, false, nil
	}
	if ss.user == legacyTokenIdentity.Name && ss.userCreated.IsZero() {
		return legacyTokenIdentity, s.cfg.Token != "", nil
	}
	u, err := s.DB.GetUser(req.Context(), ss.user)
	if err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			s.auth.sessions.end(ck.Value)
			return httpcore.Identity{}, false, nil
		}
		return httpcore.Identity{}, false, err
	}
	if !u.Created.Equal(ss.userCreated) { // removed, and another user took the name
		s.auth.sessions.end(ck.Value)
		return httpcore.Identity{}, false, nil
	}
	return httpcore.Identity{Name: u.Name, Role: u.Role, Via: "user", Created: u.Created}, true, nil
}

// isOpen reports whether the studio lets anyone in as the local admin: no
// --token, no users, and listening on loopback (or --insecure). The answer
// is kept for a second, so that not every request asks the store; the users
// API forgets it at once (a user added with the CLI counts within a second).
func (s *Server) isOpen(ctx context.Context) (bool, error) {
	if s.cfg.Token != "" || !(isLoopback(s.cfg.Addr) || s.cfg.Insecure) {
		return false, nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	if !s.openAt.IsZero() && time.Since(s.openAt) < openRecheck {
		return s.open, nil
	}
	us, err := s.DB.ListUsers(ctx)
	if err != nil {
		return false, fmt.Errorf("read users: %w", err)
	}
	s.open, s.openAt = len(us) == 0, time.Now()
	return s.open, nil
}

// forgetOpen makes the next request ask the store whether users exist.
func (s *Server) forgetOpen() {
	s.openMu.Lock()
	s.openAt = time.Time{}
	s.openMu.Unlock()
}

// wantsHTML: a browser navigating to a page (not an API or htmx call).
func wantsHTML(req *http.Request) bool {
	return !strings.HasPrefix(req.URL.Path, "/v1/") && req.Header.Get("HX-Request") == "" &&
		strings.Contains(req.Header.Get("Accept"), "text/html")
}

// recoverer turns a panic into a 500 with no stack trace for the client.
func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if v := recover(); v != nil {
				s.Log.Error("panic in handler", "path", c.Request().URL.Path, "panic", fmt.Sprint(v),
					"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
				err = httpcore.Error(httpcore.EINTERNAL, "internal", "internal error (logged with the request id)", nil)
			}
		}()
		return next(c)
	}
}

// accessLog writes one structured line per request, with its request id.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		level := slog.LevelDebug
		if status >= 500 {
			level = slog.LevelError
		}
		s.Log.Log(c.Request().Context(), level, "request",
			"method", c.Request().Method, "path", c.Request().URL.Path, "status", status,
			"duration_ms", time.Since(start).Milliseconds(),
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		return nil
	}
}

func htmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(s)
}

// traceContext reads the W3C trace context (traceparent, tracestate) of a
// request into its context: a run it starts joins the caller's trace, and
// its log lines carry the trace's ids.
func (s *Server) traceContext(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Header.Get("traceparent") != "" {
			c.SetRequest(r.WithContext(s.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))))
		}
		return next(c)
	}
}

// anyBodyType: routes whose senders label JSON bodies as they like and
// whose handlers check the body themselves: the A2E SDK's HTTP transport
// (text/plain), and webhooks (signed bytes; a body that is not a JSON
// object is 400 there).
func anyBodyType(path string) bool {
	return path == "/v1/a2e/send" || strings.HasPrefix(path, "/v1/hooks/")
}

// jsonBodies refuses an API request body that says it is not JSON with 415
// (a form post or text sent by mistake, e.g. curl -d without -H): a clear
// answer instead of a decode error. A body without a Content-Type is read
// as JSON.
func jsonBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength == 0 || !strings.HasPrefix(req.URL.Path, "/v1/") || anyBodyType(req.URL.Path) ||
			req.Method == http.MethodGet || req.Method == http.MethodHead {
			return next(c)
		}
		ct := req.Header.Get(echo.HeaderContentType)
		if ct == "" {
			return next(c)
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != echo.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json") {
			return httpcore.Error(httpcore.EMEDIATYPE, "unsupported_media_type",
				fmt.Sprintf("the body must be JSON (Content-Type: application/json), not %q", ct),
				map[string]any{"content_type": ct})
		}
		return next(c)
	}
}
