package web

import "github.com/labstack/echo/v4"

// pageRoutes registers the designer's pages and their htmx fragments.
func (s *Server) pageRoutes(e *echo.Echo) {
}
