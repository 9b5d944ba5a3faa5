package agent

import "fmt"

// InputSchema derives the JSON Schema of what an agent node passes the
// agent: {query, context, session_id} (RunInput's shape). For tool: and
// chain: agents, fields the agent's own static input sets are left out: the
// static value wins, so a node could not change them. A model agent without
// a prompt sends query as the user message, so it needs one.
func (d *Definition) InputSchema() map[string]any {
	props := map[string]any{}
	var order, required []any
	add := func(name string, s map[string]any) {
		if d.Kind() != "model" {
			if _, fixed := d.Input[name]; fixed {
				return
			}
		}
		props[name] = s
		order = append(order, name)
	}
	queryDesc := "the question or task; the prompt reads it as {{ query }}"
	switch d.Kind() {
	case "tool":
		queryDesc = fmt.Sprintf("passed to tool %s as query", d.Tool)
	case "chain":
		queryDesc = fmt.Sprintf("passed to chain %s as query", d.Chain)
	default:
		if d.Prompt == "" {
			queryDesc = "the user message sent to the model"
			required = append(required, "query")
		}
	}
	add("query", map[string]any{"description": queryDesc})
	add("context", map[string]any{"type": "object", "description": "facts the agent may read (context.<name>)"})
	add("session_id", map[string]any{"type": "string", "description": "groups the calls of one conversation"})
	s := map[string]any{"type": "object", "description": d.Description, "properties": props, "x-order": order}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// ConfigSchema is the JSON Schema of an agent node's config. The compiler's
// internal continue_handler flag is left out: no one sets it by hand.
func ConfigSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			configAgent: map[string]any{"type": "string", "description": "the agent to run when the node has no name"},
		},
		"x-order": []any{configAgent},
	}
}

// Schemas returns the input and config schemas of the named agent, for
// engine.Registry.NodeSchemas (nil, nil: no such agent).
func (s *Set) Schemas(name string) (input, config map[string]any) {
	if s == nil {
		return nil, nil
	}
	d, ok := s.Get(name)
	if !ok {
		return nil, nil
	}
	return d.InputSchema(), ConfigSchema()
}
