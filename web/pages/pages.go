package pages

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// render writes a templ component as an HTML response.
func RenderPage(c echo.Context, status int, comp templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set("Cache-Control", "no-store")
	c.Response().WriteHeader(status)
	return comp.Render(c.Request().Context(), c.Response())
}

// hxRedirect tells htmx to navigate to target (a full page load).
func pageRedirect(c echo.Context, target string) error {
	c.Response().Header().Set("HX-Redirect", target)
	return c.NoContent(http.StatusOK)
}

// formError answers a form's refusal through the error table: the status
// the API answers err with, and its message in the form's error fragment
// under title (htmx swaps an answer of any status but 204 and 304 into
// the form's target). An internal error is logged and not shown.
func (s *page) formError(c echo.Context, title string, err error) error {
	ae := s.ErrorFor(err)
	s.LogAPIError(c, ae, err)
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", httpcore.RetryAfter(ae.RetryAfter))
	}
	return RenderPage(c, ae.Status(), views.FormError(title, ae.Message))
}

// formRefusal is formError for a refusal the handler itself finds.
func (s *page) formRefusal(c echo.Context, title, kind, code, msg string) error {
	return s.formError(c, title, httpcore.Error(kind, code, msg, nil))
}
