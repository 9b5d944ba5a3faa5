package web

import (
	"net/http"
	"sort"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/labstack/echo/v4"
)

// toolJSON is one entry of GET /v1/tools.
type toolJSON struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Enabled is false for a built-in tool this studio does not provide
	// (listed so a chain that names it can be understood).
	Enabled bool `json:"enabled"`
	Inline  bool `json:"inline,omitempty"`
	// Unavailable says why a tool of an MCP server cannot be called now
	// (its server is down, connecting or disabled); Enabled is false then.
	Unavailable  string         `json:"unavailable,omitempty"`
	InputSchema  map[string]any `json:"input_schema,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
}

// agentToolJSON is an agent as a node of kind agent sees it.
type agentToolJSON struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	ConfigSchema map[string]any `json:"config_schema"`
}

// toolCatalog lists the registry's tools, described by what the host
// declared (falling back to the built-in catalog), then the built-in tools
// this studio has not enabled. Sorted by name within each part.
func (s *Server) toolCatalog() []toolJSON {
	builtins := map[string]builtin.Info{}
	for _, t := range builtin.Catalog() {
		builtins[t.Name] = t
	}
	names := s.reg.Names()
	sort.Strings(names)
	out := make([]toolJSON, 0, len(names)+len(builtins))
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		t := toolJSON{Name: n, Enabled: true, Inline: s.reg.IsInline(n), Description: s.reg.Description(n)}
		t.InputSchema, _ = s.reg.InputSchema(n)
		t.OutputSchema, _ = s.reg.OutputSchema(n)
		if b, ok := builtins[n]; ok {
			if t.Description == "" {
				t.Description = b.Description
			}
			if t.InputSchema == nil {
				t.InputSchema = b.InputSchema
			}
		}
		out = append(out, t)
	}
	// The tools of MCP servers (mcp:<server>/<tool>), as last listed.
	for _, t := range s.reg.SourcedTools() {
		out = append(out, toolJSON{Name: t.Name, Description: t.Description, Enabled: t.Unavailable == "", Unavailable: t.Unavailable,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	for _, b := range builtin.Catalog() {
		if !seen[b.Name] {
			out = append(out, toolJSON{Name: b.Name, Description: b.Description, InputSchema: b.InputSchema})
		}
	}
	return out
}

func (s *Server) agentTools() []agentToolJSON {
	out := []agentToolJSON{}
	for _, n := range s.agents.Names() {
		d, ok := s.agents.Get(n)
		if !ok {
			continue
		}
		out = append(out, agentToolJSON{Name: n, Description: d.Description, InputSchema: d.InputSchema(), ConfigSchema: agent.ConfigSchema()})
	}
	return out
}

// GET /v1/tools: the tools a tool node can call and the agents an agent node
// can run, each with its input schema.
func (s *Server) listTools(c echo.Context) error {
	tools := s.toolCatalog()
	// kinds: the config schema of node kinds configured by the engine itself
	kinds := map[string]any{string(engine.KindInterrupt): map[string]any{"config_schema": engine.InterruptConfigSchema()}}
	return c.JSON(http.StatusOK, map[string]any{"tools": tools, "agents": s.agentTools(), "kinds": kinds, "total": len(tools)})
}
