package web

import (
	"net/http"

	"github.com/chainstudio/studio/web/a2ehttp"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/mcpserver"
	"github.com/labstack/echo/v4"
)

// The error codes, their statuses and the mapping of the layers' errors are
// httpcore's (one table for every door); here is how web answers with them.

// errorHandler renders every error as JSON (API) or a short page (browser),
// with the status from the error table; the A2E and MCP doors' errors in
// the shape their clients read. Internal errors and a full disk are
// logged with the request id.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := s.ErrorFor(err)
	s.LogAPIError(c, ae, err)
	status := ae.Status()
	if ae.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", httpcore.RetryAfter(ae.RetryAfter))
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	if a2ehttp.IsPath(c.Request().URL.Path) {
		_ = c.JSON(status, a2ehttp.ErrorResponse(c, ae))
		return
	}
	if c.Request().URL.Path == mcpserver.Path { // MCP clients read JSON-RPC errors
		_ = c.JSON(status, mcpserver.ErrorBody(ae))
		return
	}
	if wantsHTML(c.Request()) {
		_ = c.HTML(status, "<!doctype html><title>Error</title><link rel=\"icon\" href=\"data:,\"><p>"+htmlEscape(ae.Message)+"</p><p><a href=\"/\">Chains</a></p>")
		return
	}
	_ = c.JSON(status, map[string]any{"error": ae})
}
