package web

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// loginRoutes: the sign-in page that gives a browser the token cookie.
func (s *Server) loginRoutes(e *echo.Echo) {
	e.GET("/login", s.pageLogin)
	e.POST("/login", s.postLogin)
	e.POST("/logout", s.postLogout)
}

// safeNext keeps a post-login redirect on this studio: a local path only.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n") {
		return "/"
	}
	return next
}

func (s *Server) pageLogin(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if s.cfg.Token == "" || s.validToken(c.Request()) {
		return c.Redirect(http.StatusSeeOther, next)
	}
	return renderPage(c, http.StatusOK, views.Login(next, ""))
}

func (s *Server) postLogin(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if s.cfg.Token == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	got := c.FormValue("token")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
		time.Sleep(300 * time.Millisecond) // slows guessing; the token is the only secret
		// 200 with the form again: a browser form, and a 401 would only add console noise
		return renderPage(c, http.StatusOK, views.Login(next, "That token is not right."))
	}
	c.SetCookie(&http.Cookie{
		Name: cookieName, Value: s.cfg.Token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.IsTLS(),
		MaxAge: int((30 * 24 * time.Hour).Seconds()),
	})
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) postLogout(c echo.Context) error {
	c.SetCookie(&http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	return c.Redirect(http.StatusSeeOther, "/login")
}
