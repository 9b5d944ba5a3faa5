package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/a-h/templ"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// pageRoutes registers the designer's pages and their htmx fragments. Pages
// and fragments render HTML on the server (views/); the editor and the
// versions page read chains from /v1, the run pages from their …/data
// routes. Fragments answer 200 even when they show an error,
// so the browser console stays clean; the error is in the fragment.
func (s *Server) pageRoutes(e *echo.Echo) {
	e.GET("/static/*", s.serveStatic)

	e.GET("/", s.pageChains)
	e.GET("/fragments/chains", s.fragChainRows)
	e.POST("/chains/new", s.pageNewChain)
	e.POST("/chains/import", s.pageImport)
	e.POST("/chains/:id/delete", s.pageDeleteChain)

	e.GET("/chains/:id", s.pageEditor)
	e.POST("/chains/:id/save", s.pageSave)
	e.POST("/chains/:id/run", s.pageStartRun)
	e.GET("/chains/:id/nodes/:node/runnode", s.fragRunNodeDialog)
	e.POST("/fragments/props", s.fragProps)
	e.POST("/fragments/expr", s.fragExpr)

	e.GET("/chains/:id/runs", s.pageRuns)
	e.GET("/runs", s.pageAllRuns)
	e.GET("/inbox", s.pageInbox) // the approval inbox
	e.GET("/runs/:id", s.pageRun)
	e.GET("/runs/:id/timeline", s.fragTimeline)
	e.GET("/runs/:id/controls", s.fragRunControls)
	e.GET("/runs/:id/nodes/:node", s.fragNodeDrawer)
	e.POST("/runs/:id/resume", s.pageResume)
	e.POST("/runs/:id/rerun", s.pageRerun)
	e.POST("/runs/:id/cancel", s.pageCancel)

	e.GET("/chains/:id/versions", s.pageVersions)
	e.POST("/chains/:id/versions/:v/restore", s.pageRestore)
	e.POST("/chains/:id/versions/:v/publish", s.pagePublishVersion)
}

// render writes a templ component as an HTML response.
func renderPage(c echo.Context, status int, comp templ.Component) error {
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
func (s *Server) formError(c echo.Context, title string, err error) error {
	ae := s.errorFor(err)
	s.logAPIError(c, ae, err)
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", retryAfter(ae.RetryAfter))
	}
	return renderPage(c, ae.Status(), views.FormError(title, ae.Message))
}

// formRefusal is formError for a refusal the handler itself finds.
func (s *Server) formRefusal(c echo.Context, title, kind, code, msg string) error {
	return s.formError(c, title, apiError(kind, code, msg, nil))
}

// notFound maps a store "not found" to a 404 (an HTML page for browsers).
func pageNotFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return apiError(ENOTFOUND, "not_found", what+" not found", nil)
	}
	return err
}

func pageParam(c echo.Context, name string) string {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return c.Param(name)
	}
	return v
}
