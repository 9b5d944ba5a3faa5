package agent

import (
	"fmt"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm"
)

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

// DefinedConfigSchema is the JSON Schema of the config of an agent node that
// defines its agent (Defined), from which the designer draws its form:
// providers among kinds (nil: any name), and for model.credential the
// credential types each provider takes (x-credential-types, keyed by
// provider), so the picker offers only those that fit.
func DefinedConfigSchema(kinds llm.Kinds) map[string]any {
	provider := map[string]any{"type": "string", "description": "who serves the model (default openai: OpenAI and every OpenAI-compatible server)", "default": "openai"}
	credTypes := map[string]any{}
	if len(kinds) > 0 {
		names := make([]any, len(kinds))
		for i, k := range kinds {
			names[i] = k.Name
			credTypes[k.Name] = stringsAny(k.CredentialTypes)
		}
		provider["enum"] = names
	}
	integer := func(desc string, lo, hi int, def any) map[string]any {
		s := map[string]any{"type": "integer", "minimum": lo, "maximum": hi, "description": desc}
		if def != nil {
			s["default"] = def
		}
		return s
	}
	model := map[string]any{
		"type":        "object",
		"description": "the model the agent calls",
		"properties": map[string]any{
			"provider":          provider,
			"credential":        map[string]any{"type": "string", "x-credential": true, "x-credential-types": credTypes, "description": "the stored credential whose API key the calls send"},
			"name":              map[string]any{"type": "string", "description": "the model, as its server names it (gpt-4o-mini, claude-sonnet-4-5, llama3.1)", "x-models": true},
			"url":               map[string]any{"type": "string", "description": "the server's base URL; empty: the provider's public API, or the base URL of an openai_compatible credential"},
			"temperature":       map[string]any{"type": "number", "minimum": 0, "maximum": 2},
			"max_tokens":        integer("caps each reply (empty: the provider's default)", 0, 1<<20, nil),
			"stream":            map[string]any{"type": "boolean", "default": true, "description": "show the reply on the run page as it is written"},
			"structured_output": map[string]any{"type": "string", "enum": []any{OutputNative, OutputPrompt}, "description": "how output_schema is asked for (default: native where the provider enforces it)"},
			"api":               map[string]any{"type": "string", "enum": []any{APIChatCompletions, APIResponses}, "description": "openai only: the wire (default chat_completions)"},
		},
		"required": []any{"name"},
		"x-order":  []any{"provider", "credential", "name", "url", "temperature", "max_tokens", "stream", "structured_output", "api"},
	}
	tool := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tool":            map[string]any{"type": "string", "x-tools": true, "description": "a studio tool, built-in or MCP (mcp:server/tool); or set chain"},
			"chain":           map[string]any{"type": "string", "x-chains": true, "description": "a saved chain the model may run; or set tool"},
			"name":            map[string]any{"type": "string", "description": "the name the model calls it by (default: the tool's or the chain's)"},
			"description":     map[string]any{"type": "string", "description": "what the model reads to decide when to call it"},
			"input":           map[string]any{"type": "object", "x-format": "json", "description": "fixed input, a JSON object: hidden from the model and merged over its arguments, e.g. {\"method\": \"GET\"}"},
			"approval":        map[string]any{"type": "string", "enum": []any{"required"}, "description": "required: a person approves each call in the inbox"},
			"timeout_seconds": map[string]any{"type": "number", "minimum": 0},
		},
		"x-order": []any{"tool", "chain", "name", "description", "input", "approval", "timeout_seconds"},
	}
	memory := map[string]any{
		"type":        "object",
		"description": "keep the conversation: earlier turns with the same session key are sent before the user message",
		"properties": map[string]any{
			"session_key":  map[string]any{"type": "string", "description": "an expression over the node's input naming the conversation, e.g. input.user_id (empty or null: no memory for that call)"},
			"max_messages": integer("earlier messages sent at most, the newest", 1, MaxMemoryMessages, DefaultMemoryMessages),
			"max_tokens":   integer("earlier turns sent at most, in estimated tokens (empty: no limit)", 1, MaxMemoryTokens, nil),
		},
		"required": []any{"session_key"},
		"x-order":  []any{"session_key", "max_messages", "max_tokens"},
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"memory":           memory,
			configModel:        model,
			"system_prompt":    map[string]any{"type": "string", "description": "instructions sent before every turn (a template over the node's input: {{ query }}, {{ context.name }})"},
			"prompt":           map[string]any{"type": "string", "description": "the user message, a template (empty: the query itself)"},
			configOutputSchema: map[string]any{"type": "object", "x-format": "json", "description": "a JSON Schema the reply must meet, e.g. {\"type\": \"object\", \"properties\": {\"category\": {\"enum\": [\"refund\", \"bug\"]}}}; its data lands in output.data"},
			"repair":           integer("asks again this many times for a reply that fails output_schema", 0, MaxRepair, 0),
			"max_steps":        integer("model turns at most", 1, MaxMaxSteps, DefaultMaxSteps),
			"max_tool_calls":   integer("tool calls at most in one run of the agent", 0, MaxMaxToolCalls, DefaultMaxToolCalls),
			"tools":            map[string]any{"type": "array", "maxItems": MaxTools, "items": tool, "description": "what the model may call"},
		},
		"required": []any{configModel},
		"x-order":  []any{configModel, "system_prompt", "prompt", configOutputSchema, "repair", "max_steps", "max_tool_calls", "tools", "memory"},
	}
}

func stringsAny(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// NodeSchemas returns the input and config schemas of agent node nd, for
// engine.Registry.NodeSchemas: of the agent it defines, or of the agent it
// names (nil, nil: no such agent).
func (s *Set) NodeSchemas(nd *chain.Node) (input, config map[string]any) {
	if Defined(nd) {
		var kinds llm.Kinds
		if s != nil {
			kinds = s.providers
		}
		def, probs := DefinedAgent(nd, kinds)
		if len(probs) > 0 {
			// what the config check reports; the input is any object
			return map[string]any{"type": "object"}, DefinedConfigSchema(kinds)
		}
		return def.InputSchema(), DefinedConfigSchema(kinds)
	}
	name := nd.Name
	if name == "" {
		name, _ = nd.Config[configAgent].(string)
	}
	return s.Schemas(name)
}
