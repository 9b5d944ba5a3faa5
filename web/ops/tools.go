package ops

import (
	"sort"

	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
)

// ToolJSON is one entry of GET /v1/tools.
type ToolJSON struct {
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

// AgentToolJSON is an agent as a node of kind agent sees it.
type AgentToolJSON struct {
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	InputSchema  map[string]any `json:"input_schema"`
	ConfigSchema map[string]any `json:"config_schema"`
}

// ToolCatalog lists the registry's tools, described by what the host
// declared (falling back to the built-in catalog), then the built-in tools
// this studio has not enabled. Sorted by name within each part.
func (s *Env) ToolCatalog() []ToolJSON {
	builtins := map[string]builtin.Info{}
	for _, t := range builtin.Catalog() {
		builtins[t.Name] = t
	}
	names := s.Registry.Names()
	sort.Strings(names)
	out := make([]ToolJSON, 0, len(names)+len(builtins))
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
		t := ToolJSON{Name: n, Enabled: true, Inline: s.Registry.IsInline(n), Description: s.Registry.Description(n)}
		t.InputSchema, _ = s.Registry.InputSchema(n)
		t.OutputSchema, _ = s.Registry.OutputSchema(n)
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
	for _, t := range s.Registry.SourcedTools() {
		out = append(out, ToolJSON{Name: t.Name, Description: t.Description, Enabled: t.Unavailable == "", Unavailable: t.Unavailable,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema})
	}
	for _, b := range builtin.Catalog() {
		if !seen[b.Name] {
			out = append(out, ToolJSON{Name: b.Name, Description: b.Description, InputSchema: b.InputSchema})
		}
	}
	return out
}

func (s *Env) AgentTools() []AgentToolJSON {
	out := []AgentToolJSON{}
	for _, n := range s.Agents.Names() {
		d, ok := s.Agents.Get(n)
		if !ok {
			continue
		}
		out = append(out, AgentToolJSON{Name: n, Description: d.Description, InputSchema: d.InputSchema(), ConfigSchema: agent.ConfigSchema()})
	}
	return out
}
