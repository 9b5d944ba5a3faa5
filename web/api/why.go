package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// whyJSON is the answer of GET /v1/runs/{id}/nodes/{node}/why: the engine's
// answer (engine/inspect/why.go) with the run it is about.
type whyJSON struct {
	RunID     string          `json:"run_id"`
	RunStatus chain.RunStatus `json:"run_status"`
	*inspect.WhyAnswer
}

// GET /v1/runs/{id}/nodes/{node}/why: why a node of a run went the way it
// did, read from the run's checkpoint log (docs/api.md).
func (s *Runs) RunNodeWhy(c echo.Context) error {
	ctx := c.Request().Context()
	id, node := ops.PageParam(c, "id"), ops.PageParam(c, "node")
	r, err := s.DB.GetRunInfo(ctx, id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	log, err := s.DB.Load(ctx, id)
	var cpErr *engine.ChainCheckpointError
	if errors.As(err, &cpErr) && cpErr.Msg == "no such run" || err == nil && len(log) == 0 {
		// Queued: nothing ran and nothing was decided yet. The chain it
		// will run says whether the node exists.
		doc := s.PageRunDoc(c, r)
		if doc == nil || doc.Node(node) == nil {
			return &inspect.UnknownNodeError{RunID: id, NodeID: node}
		}
		return c.JSON(http.StatusOK, whyJSON{RunID: id, RunStatus: r.Status,
			WhyAnswer: &inspect.WhyAnswer{Node: node, Status: inspect.StatusNotReached, Note: "the run has not started yet"}})
	}
	if err != nil {
		return fmt.Errorf("why of node %q of run %q: %w", node, id, err)
	}
	a, err := inspect.Why(log, node)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, whyJSON{RunID: id, RunStatus: r.Status, WhyAnswer: a})
}
