package api

import (
	"net/http"

	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// GET /v1/runs/{id}/diff/{other}
func (s *Runs) DiffRuns(c echo.Context) error {
	cmp, err := s.CompareRuns(c.Request().Context(), ops.PageParam(c, "id"), ops.PageParam(c, "other"), !s.SeesCredentialed(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cmp.JSON)
}
