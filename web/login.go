package web

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/pages"
	"github.com/labstack/echo/v4"
)

// safeNext keeps a post-login redirect on this studio: a path of this site
// only. Browsers drop tabs and newlines and read a backslash as a slash, so
// "/\t/evil.example" or "/\evil.example" would be "//evil.example", another
// host; anything that is not plainly a local path becomes "/".
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return "/"
	}
	for _, r := range next {
		if r == '\\' || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	return next
}

func (s *Server) pageLogin(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	open, err := s.isOpen(c.Request().Context())
	if err != nil {
		return err
	}
	if _, in, _ := s.sessionIdentity(c.Request()); open || in {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return pages.RenderPage(c, http.StatusOK, views.Login(next, ""))
}

func (s *Server) postLogin(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if open, err := s.isOpen(c.Request().Context()); err != nil {
		return err
	} else if open {
		return c.Redirect(http.StatusSeeOther, next)
	}
	client := s.auth.clientKey(c.Request())
	token := c.FormValue("token")
	id, ok, err := s.identityOf(c.Request().Context(), token)
	if err != nil {
		return err
	}
	if !ok {
		if wait := s.auth.failed(client, token); wait > 0 {
			c.Response().Header().Set("Retry-After", httpcore.RetryAfter(wait))
			return pages.RenderPage(c, httpcore.ErrorStatusCode(httpcore.ETOOMANY), views.Login(next,
				"Too many failed sign-ins from your address or with this token. Try again in "+inSeconds(wait)+"."))
		}
		s.Log.Warn("failed sign-in", "client", client,
			"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		// 200 with the form again: a browser form, and a 401 would only add console noise
		return pages.RenderPage(c, http.StatusOK, views.Login(next, "That token is not right."))
	}
	c.SetCookie(&http.Cookie{
		Name: cookieName, Value: s.auth.sessions.create(id.Name, id.Created), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.auth.secure || c.IsTLS(),
		MaxAge: int(sessionTTL.Seconds()),
	})
	s.Log.Info("signed in", "user", id.Name, "role", id.Role, "client", client)
	return c.Redirect(http.StatusSeeOther, next)
}

// postLogout ends the session on the server (a copied cookie is worthless
// afterwards) and clears it in the browser.
func (s *Server) postLogout(c echo.Context) error {
	if ck, err := c.Request().Cookie(cookieName); err == nil {
		s.auth.sessions.end(ck.Value)
	}
	c.SetCookie(&http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.auth.secure || c.IsTLS(), MaxAge: -1})
	// A browser's form goes on to the sign-in page; a script that asks
	// for JSON (an API client) wants no page, only that it is done.
	if wantsJSON(c.Request()) {
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}

// wantsJSON reports whether a request's Accept names JSON and not HTML.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}
