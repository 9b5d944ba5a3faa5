package agent

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/tool"
)

// MaxChainNesting bounds chain: agents running chains that run chain: agents.
const MaxChainNesting = 8

// Runtime executes agent nodes: plug RunNode into engine.Options.Agent.
type Runtime struct {
	Set      *Set
	Registry *engine.Registry // tools for tool: agents
	// RunChain runs a saved chain by name with the input and returns its
	// final output, for chain: agents (the host injects it; nil disables
	// chain: agents).
	RunChain func(ctx context.Context, name string, input map[string]any) (any, error)
	// ChainTool looks up a saved chain a model agent offers as a tool (its
	// description and argument schema); nil disables chain tools.
	ChainTool func(ctx context.Context, name string) (*chain.Chain, error)
	// Model calls model agents' models; without Providers it calls through
	// the set's.
	Model ModelClient
	// Conversations keeps the conversations of agents with memory; nil:
	// memory is off (a node asking for it runs without and warns).
	Conversations Conversations
}

// model is rt.Model with the providers it calls through.
func (rt *Runtime) model() *ModelClient {
	mc := rt.Model
	if mc.Providers == nil && rt.Set != nil {
		mc.Providers = rt.Set.providers
	}
	return &mc
}

var _ engine.AgentRunner = (*Runtime)(nil).RunNode

type nestingKey struct{}

// RunNode runs one attempt of an agent node: the agent named by node.name
// (or config.agent) with the node's input {query, context, session_id}.
func (rt *Runtime) RunNode(ctx context.Context, nd *chain.Node, input map[string]any, emit tool.Emitter) (any, error) {
	if v, _ := nd.Config[configContinu].(bool); v {
		return nil, nil // the no-op handler behind on_error: continue
	}
	def, err := rt.nodeAgent(nd)
	if err != nil {
		return nil, err
	}
	if def.Model != nil && nd.Timeout <= 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, DefaultModelTimeout,
			fmt.Errorf("timed out after %gs (the default model timeout; set timeout_seconds on the link)", DefaultModelTimeout.Seconds()))
		defer cancel()
	}
	out, err := rt.Invoke(ctx, def, input, emit)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// nodeAgent is the agent node nd runs: the one it defines (decoded and
// checked at each call: microseconds next to a model call), or the loaded
// one it names.
func (rt *Runtime) nodeAgent(nd *chain.Node) (*Definition, error) {
	if Defined(nd) {
		var kinds llm.Kinds
		if rt.Set != nil {
			kinds = rt.Set.providers
		}
		def, probs := DefinedAgent(nd, kinds)
		if len(probs) > 0 {
			msgs := make([]string, len(probs))
			for i, p := range probs {
				msgs[i] = p.Message
			}
			return nil, fmt.Errorf("agent node %q: %s", nd.ID, strings.Join(msgs, "; "))
		}
		return def, nil
	}
	name := nd.Name
	if name == "" {
		name, _ = nd.Config[configAgent].(string)
	}
	if name == "" {
		return nil, fmt.Errorf("agent node %q names no agent and defines none (set name to an agent, or config.model to define one here)", nd.ID)
	}
	def, ok := rt.Set.Get(name)
	if !ok {
		return nil, fmt.Errorf("agent %q is not loaded (agents: %s)", name, strings.Join(rt.Set.Names(), ", "))
	}
	return def, nil
}

// Invoke runs an agent once and returns its result: {answer} for a model
// agent without an output_schema, {answer, data, data_error} with one; tool:
// and chain: agents add data when their output is not a string.
func (rt *Runtime) Invoke(ctx context.Context, def *Definition, input map[string]any, emit tool.Emitter) (map[string]any, error) {
	if input == nil {
		input = map[string]any{}
	}
	if emit == nil {
		emit = func(any) {}
	}
	switch def.Kind() {
	case "tool":
		if rt.Registry == nil {
			return nil, fmt.Errorf("agent %q: this host has no tool registry", def.Name)
		}
		fn, ok := rt.Registry.Get(def.Tool)
		if !ok {
			return nil, fmt.Errorf("agent %q: unknown tool %q (this host has: %v)", def.Name, def.Tool, rt.Registry.Names())
		}
		out, err := fn(ctx, staticInput(def, input), emit)
		if err != nil {
			return nil, fmt.Errorf("agent %q: tool %s: %w", def.Name, def.Tool, err)
		}
		return rt.valueResult(def, out)
	case "chain":
		if rt.RunChain == nil {
			return nil, fmt.Errorf("agent %q: this host cannot run saved chains", def.Name)
		}
		out, err := rt.runChainNested(ctx, def.Chain, staticInput(def, input))
		if err != nil {
			return nil, fmt.Errorf("agent %q: chain %s: %w", def.Name, def.Chain, err)
		}
		return rt.valueResult(def, out)
	}
	return rt.runModel(ctx, def, input, emit)
}

// runChainNested runs a saved chain for an agent (a chain: agent, or a
// chain an agent's model calls as a tool), one level deeper: chains that
// run agents that run chains stop at MaxChainNesting.
func (rt *Runtime) runChainNested(ctx context.Context, name string, input map[string]any) (any, error) {
	n, _ := ctx.Value(nestingKey{}).(int)
	if n >= MaxChainNesting {
		return nil, fmt.Errorf("chains run by agents nest more than %d deep (a chain that runs itself?)", MaxChainNesting)
	}
	return rt.RunChain(context.WithValue(ctx, nestingKey{}, n+1), name, input)
}

// staticInput is the agent's static input plus query, context and
// session_id (the static keys win).
func staticInput(def *Definition, input map[string]any) map[string]any {
	in := maps.Clone(def.Input)
	if in == nil {
		in = map[string]any{}
	}
	for _, k := range []string{"query", "context", "session_id"} {
		if _, set := in[k]; !set {
			if v, ok := input[k]; ok {
				in[k] = v
			}
		}
	}
	return in
}

// SchemaInstruction is appended to the user message of a model agent that
// declares an output_schema.
const SchemaInstruction = "\n\nAnswer in prose first. Then close your reply with a fenced ```json code block " +
	"holding one JSON value that matches this JSON Schema:\n"

// renderPrompt renders the prompt template over {query, context,
// session_id, input}; without a prompt the user message is the query.
func renderPrompt(def *Definition, input map[string]any) (string, error) {
	if def.Prompt == "" {
		return asText(input["query"]), nil
	}
	t, err := parseTemplate(def.Prompt)
	if err != nil {
		return "", fmt.Errorf("agent %q: prompt: %w", def.Name, err)
	}
	sc := expr.MapScope{"query": input["query"], "context": input["context"], "session_id": input["session_id"], "input": input}
	v, err := t.Render(sc, false)
	if err != nil {
		return "", fmt.Errorf("agent %q: prompt: %w", def.Name, err)
	}
	return asText(v), nil
}

func asText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	return compactJSON(v)
}

// textResult is the result of a prose answer: the answer untouched, and with
// an output_schema the extracted, validated data (or data: null and
// data_error saying why).
func textResult(def *Definition, answer string) map[string]any {
	out := map[string]any{"answer": answer}
	s := def.Schema()
	if s == nil {
		return out
	}
	data, err := ExtractJSON(answer)
	if err != nil {
		out["data"], out["data_error"] = nil, err.Error()
		return out
	}
	return withData(out, s, data)
}

func withData(out map[string]any, s *Schema, data any) map[string]any {
	if s == nil {
		out["data"] = data
		return out
	}
	if err := s.Check(data); err != nil {
		out["data"], out["data_error"] = nil, "data does not match output_schema: "+err.Error()
		return out
	}
	out["data"], out["data_error"] = data, nil
	return out
}

// valueResult is the result of a tool: or chain: agent: a string output is
// the answer (handled like a model's); anything else is data, with its JSON
// text as the answer.
func (rt *Runtime) valueResult(def *Definition, v any) (map[string]any, error) {
	v, err := jsonValue(v)
	if err != nil {
		return nil, fmt.Errorf("agent %q: the output is not JSON: %w", def.Name, err)
	}
	if s, ok := v.(string); ok {
		return textResult(def, s), nil
	}
	return withData(map[string]any{"answer": compactJSON(v)}, def.Schema(), v), nil
}

// RunInput is the run input of an agent run (the engine's `trigger`):
// {query, session_id, context}, context defaulting to {}.
func RunInput(query any, sessionID string, context any) map[string]any {
	if context == nil {
		context = map[string]any{}
	}
	return map[string]any{"query": query, "session_id": sessionID, "context": context}
}
