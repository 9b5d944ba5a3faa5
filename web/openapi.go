package web

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPISpec is the OpenAPI 3 description of every route (web/openapi.json);
// a test proves it names each /v1 route of routes().
//
//go:embed openapi.json
var openAPISpec []byte

// GET /v1/openapi.json
func (s *Server) openAPI(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSONCharsetUTF8, openAPISpec)
}
