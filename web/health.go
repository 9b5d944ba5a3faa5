package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// readyTimeout bounds the readiness probe's ping of the store: a database
// that does not answer within it is as good as down for the API.
const readyTimeout = 2 * time.Second

// GET /livez: the process serves HTTP. It asks nothing else, so an
// orchestrator restarts the studio only when restarting can help.
func (s *Server) livez(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"status": "ok"})
}

// GET /readyz (and /healthz): the store answers a ping within
// readyTimeout; else 503 store_unavailable with the reason. Probes arriving
// together share one ping, which runs apart from any one request (a probe
// that hangs up does not fail the others' ping), so a flood of probes is one
// query at a time.
func (s *Server) readyz(c echo.Context) error {
	_, err, _ := s.pings.Do("ping", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		return nil, s.DB.Ping(ctx)
	})
	if err == nil {
		return c.JSON(http.StatusOK, map[string]any{"status": "ok"})
	}
	reason := "error"
	msg := "not ready: the store's ping failed (the studio's log has the error)"
	if errors.Is(err, context.DeadlineExceeded) {
		reason = "timeout"
		msg = fmt.Sprintf("not ready: the store did not answer a ping within %s", readyTimeout)
	} else if store.ErrorCode(err) != store.EINTERNAL {
		msg = "not ready: " + store.ErrorMessage(err)
	}
	s.pingLog.Warn(reason, "err", err)
	c.Response().Header().Set("Retry-After", "5")
	return httpcore.Error(httpcore.EUNAVAILABLE, "store_unavailable", msg, map[string]any{"reason": reason})
}
