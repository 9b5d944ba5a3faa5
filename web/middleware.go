package web

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	e.HTTPErrorHandler = s.errorHandler
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{}))
	e.Use(s.recoverer)
	e.Use(s.accessLog)
	e.Use(s.metrics.middleware(func(err error) int { return s.errorFor(err).Status() }))
	e.Use(securityHeaders)
	e.Use(s.checkHost)
	e.Use(middleware.BodyLimit(fmt.Sprintf("%dB", s.cfg.BodyLimit)))
	e.Use(s.sameOrigin)
	e.Use(s.authenticate)
	e.Use(jsonBodies)
	s.routes(e)
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
			return apiError(EMISDIRECTED, "misdirected_request",
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
				return apiError(EFORBIDDEN, "cross_site", fmt.Sprintf("cross-site request refused: Origin %q is not this studio (%s)", origin, req.Host), nil)
			}
			return next(c)
		}
		if site := req.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
			return apiError(EFORBIDDEN, "cross_site", "cross-site request refused", nil)
		}
		return next(c)
	}
}

// publicPaths need no token: the health check, the login page, and the
// static assets the login page uses.
func publicPath(p string) bool {
	return p == "/healthz" || p == "/login" || strings.HasPrefix(p, "/static/")
}

// authenticate requires the token on every other route when one is set:
// `Authorization: Bearer <token>` for programs, the sign-in session cookie
// for browsers. A client that has sent too many wrong tokens is refused
// (429) before its next one is compared.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Token == "" || publicPath(c.Path()) || publicPath(c.Request().URL.Path) {
			return next(c)
		}
		req := c.Request()
		if bearer, ok := bearerToken(req); ok {
			client := clientKey(req)
			if wait := s.auth.fails.blocked(client); wait > 0 {
				c.Response().Header().Set("Retry-After", retryAfter(wait))
				return apiError(ETOOMANY, "too_many_requests",
					"too many wrong tokens from this address: retry in "+inSeconds(wait), nil)
			}
			if s.tokenMatches(bearer) {
				return next(c)
			}
			s.auth.fails.fail(client)
			s.log.Warn("wrong bearer token", "client", client, "method", req.Method, "path", req.URL.Path,
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		} else if s.signedIn(req) {
			return next(c)
		}
		if wantsHTML(req) {
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(req.URL.RequestURI()))
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="studio"`)
		return apiError(EUNAUTHORIZED, "unauthorized", "this studio needs a token: send Authorization: Bearer <token>", nil)
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
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// signedIn reports whether the request carries a live session cookie.
func (s *Server) signedIn(req *http.Request) bool {
	ck, err := req.Cookie(cookieName)
	return err == nil && s.auth.sessions.valid(ck.Value)
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
				s.log.Error("panic in handler", "path", c.Request().URL.Path, "panic", fmt.Sprint(v),
					"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
				err = apiError(EINTERNAL, "internal", "internal error (logged with the request id)", nil)
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
		s.log.Log(c.Request().Context(), level, "request",
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

// jsonBodies refuses an API request body that says it is not JSON with 415
// (a form post or text sent by mistake, e.g. curl -d without -H): a clear
// answer instead of a decode error. A body without a Content-Type is read
// as JSON.
func jsonBodies(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength == 0 || !strings.HasPrefix(req.URL.Path, "/v1/") ||
			req.Method == http.MethodGet || req.Method == http.MethodHead {
			return next(c)
		}
		ct := req.Header.Get(echo.HeaderContentType)
		if ct == "" {
			return next(c)
		}
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != echo.MIMEApplicationJSON && !strings.HasSuffix(mt, "+json") {
			return apiError(EMEDIATYPE, "unsupported_media_type",
				fmt.Sprintf("the body must be JSON (Content-Type: application/json), not %q", ct),
				map[string]any{"content_type": ct})
		}
		return next(c)
	}
}
