package api

import (
	"net/http"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/labstack/echo/v4"
)

// GET /v1/tools: the tools a tool node can call and the agents an agent node
// can run, each with its input schema.
func (s *Chains) ListTools(c echo.Context) error {
	tools := s.ToolCatalog()
	// kinds: the config schema of node kinds configured by the engine itself
	kinds := map[string]any{string(chain.KindInterrupt): map[string]any{"config_schema": chain.InterruptConfigSchema()}}
	return c.JSON(http.StatusOK, map[string]any{"tools": tools, "agents": s.AgentTools(), "kinds": kinds, "total": len(tools)})
}
