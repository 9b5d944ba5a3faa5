package api

import (
	"fmt"
	"net/http"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// setChainMCP is PUT /v1/chains/{id}/mcp {"exposed": bool} (admins): offer
// the chain as a tool of the studio's MCP server (web/mcpserver), or stop.
// It answers the chain; sessions hear notifications/tools/list_changed.
func (s *Chains) SetChainMCP(c echo.Context) error {
	var body struct {
		Exposed *bool `json:"exposed"`
	}
	if err := httpcore.BindJSON(c, &body); err != nil {
		return err
	}
	if body.Exposed == nil {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_request", `the body must be {"exposed": true} or {"exposed": false}`, map[string]any{"field": "exposed"})
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	if *body.Exposed {
		if err := s.mcp.RoomFor(ctx, id); err != nil {
			return err
		}
	}
	if err := s.DB.SetChainMCP(ctx, id, *body.Exposed); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	s.Log.Info("chain exposure as an MCP tool changed", "chain_id", id, "exposed", *body.Exposed, "user", httpcore.CallerOf(c).Name)
	s.Changes.Publish(ctx, httpcore.ChainChange{ChainID: id, Kind: httpcore.ChainExposure, MCPExposed: *body.Exposed})
	ch, err := s.DB.GetChain(ctx, id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("chain %q", id))
	}
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}
