package api

import (
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// GET /v1/runs/{id}/usage: a run's model calls, tokens and cost, per node
// and in total.
func (s *Runs) GetRunUsage(c echo.Context) error {
	id := ops.PageParam(c, "id")
	if _, err := s.DB.GetRunInfo(c.Request().Context(), id); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	u, err := s.RunUsage(c, id)
	if err != nil {
		return fmt.Errorf("usage of run %q: %w", id, err)
	}
	return c.JSON(http.StatusOK, u)
}

// GET /v1/usage: tokens and cost per chain or agent over time.
func (s *Runs) GetUsage(c echo.Context) error {
	u, err := s.Usage(c, c.QueryParams())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}
