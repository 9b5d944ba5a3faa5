package web

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// routes registers every route. Keep this the one table of routes: the
// access test walks it to prove none is left open when a token is set.
func (s *Server) routes(e *echo.Echo) {
	e.GET("/healthz", s.healthz)
	s.pageRoutes(e)
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"status": "ok"})
}
