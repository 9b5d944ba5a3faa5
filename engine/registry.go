package engine

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
)

// Registry holds the tools a host makes available to `tool` nodes (and the
// `proc` tool that `proc` nodes call). It is safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	tools     map[string]tool.Func
	inline    map[string]bool
	scoped    map[string]bool
	contained map[string]bool
	checks    map[string]tool.Check
	output    map[string]map[string]any // SetOutputSchema
	input     map[string]map[string]any // SetInputSchema
	desc      map[string]string         // SetDescription

	// sources resolve the names that start with their prefix (AddSource).
	sources []prefixed
}

// ToolSource supplies tools a host learns while it runs rather than at
// start (the tools of MCP servers, which come and go with their servers).
// The registry asks it about every name that starts with its prefix, at the
// moment it needs to know: validation, a node's call, GET /v1/tools. A
// source answers from what it last knew and never waits on the network.
type ToolSource interface {
	// Tool describes the tool called name. ok is false when the source
	// knows no such tool: the name is then unknown, as any other would be.
	// A tool it may have but cannot reach now (its server is down) is ok
	// with Unavailable set.
	Tool(name string) (t SourcedTool, ok bool)
	// Tools lists the tools the source knows now, sorted by name.
	Tools() []SourcedTool
	// Call runs the tool; a tool that is unavailable fails with the reason.
	Call(ctx context.Context, name string, input map[string]any, emit tool.Emitter) (any, error)
}

// SourcedTool is what a ToolSource knows of one of its tools.
type SourcedTool struct {
	Name         string
	Description  string
	InputSchema  map[string]any // nil: not known (its server was never reached)
	OutputSchema map[string]any
	// Unavailable says why the tool cannot be called now ("" when it can).
	// Validation warns of it and a run's node fails with it; neither blocks
	// saving a chain.
	Unavailable string
}

type prefixed struct {
	prefix string
	src    ToolSource
}

// AddSource makes src answer for every tool name that starts with prefix
// (such as "mcp:"). Names a source answers for are never looked up among
// the registered tools.
func (r *Registry) AddSource(prefix string, src ToolSource) {
	r.mu.Lock()
	r.sources = append(r.sources, prefixed{prefix: prefix, src: src})
	r.mu.Unlock()
}

// source returns the source answering for name, or nil.
func (r *Registry) source(name string) ToolSource {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, p := range r.sources {
		if strings.HasPrefix(name, p.prefix) {
			return p.src
		}
	}
	return nil
}

// Sourced returns what a source knows of name (ok false: no source answers
// for it, or the source knows no such tool).
func (r *Registry) Sourced(name string) (SourcedTool, bool) {
	if r == nil {
		return SourcedTool{}, false
	}
	if src := r.source(name); src != nil {
		return src.Tool(name)
	}
	return SourcedTool{}, false
}

// SourcedTools lists every source's tools, sorted by name.
func (r *Registry) SourcedTools() []SourcedTool {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	srcs := make([]ToolSource, len(r.sources))
	for i, p := range r.sources {
		srcs[i] = p.src
	}
	r.mu.RUnlock()
	var out []SourcedTool
	for _, s := range srcs {
		out = append(out, s.Tools()...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Unavailable says why a tool a source answers for cannot be called now
// ("" when it can, or when the tool is not a source's).
func (r *Registry) Unavailable(name string) string {
	t, ok := r.Sourced(name)
	if !ok {
		return ""
	}
	return t.Unavailable
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]tool.Func{}, inline: map[string]bool{}, scoped: map[string]bool{}, contained: map[string]bool{}, checks: map[string]tool.Check{}, output: map[string]map[string]any{}, input: map[string]map[string]any{}, desc: map[string]string{}}
}

// SetInline marks tools as pure and quick (no I/O, no blocking, bounded CPU,
// like echo or transform). The scheduler calls them on its own goroutine
// instead of starting one per call, which is most of a trivial node's cost.
// Never mark a tool that can block: it would stall the whole run.
func (r *Registry) SetInline(names ...string) {
	r.mu.Lock()
	for _, n := range names {
		r.inline[n] = true
	}
	r.mu.Unlock()
}

// IsInline reports whether a tool was marked with SetInline.
func (r *Registry) IsInline(name string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.inline[name]
}

// SetScoped marks tools that read the run's data where their node runs
// (tool.ScopeFrom: the run's input, state, node results, the upstream data,
// a map's item and index), like the code tool. The engine snapshots that
// scope for them only: other tools do not pay for it.
func (r *Registry) SetScoped(names ...string) {
	r.mu.Lock()
	for _, n := range names {
		r.scoped[n] = true
	}
	r.mu.Unlock()
}

// IsScoped reports whether a tool was marked with SetScoped.
func (r *Registry) IsScoped(name string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.scoped[name]
}

// SetContained marks tools that cannot reach outside the studio (no
// network, files, programs or the host's memory) though they are not
// inline, like the code tool, whose script runs in a sandbox. Chain tests
// run them for real, as they run inline tools.
func (r *Registry) SetContained(names ...string) {
	r.mu.Lock()
	for _, n := range names {
		r.contained[n] = true
	}
	r.mu.Unlock()
}

// IsContained reports whether a tool was marked with SetContained.
func (r *Registry) IsContained(name string) bool {
	if r == nil {
		return false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.contained[name]
}

// SetCheck gives a tool a check of its nodes' static input, which
// validation's input_check rule runs (a code node's script syntax).
func (r *Registry) SetCheck(name string, c tool.Check) {
	r.mu.Lock()
	r.checks[name] = c
	r.mu.Unlock()
}

// NodeCheck returns the check for a node (tool nodes only), or nil; for
// ValidateOptions.Check.
func (r *Registry) NodeCheck(nd *chain.Node) tool.Check {
	if r == nil || nd.Kind != chain.KindTool {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.checks[nd.Name]
}

// SetOutputSchema declares the shape of a tool's output (a small JSON
// Schema: type, properties, required, items; see CheckShape). Validation
// checks the chain tests' mocks of the tool against it.
func (r *Registry) SetOutputSchema(name string, schema map[string]any) {
	r.mu.Lock()
	r.output[name] = schema
	r.mu.Unlock()
}

// OutputSchema returns the shape declared with SetOutputSchema.
func (r *Registry) OutputSchema(name string) (map[string]any, bool) {
	if r == nil {
		return nil, false
	}
	if src := r.source(name); src != nil {
		t, ok := src.Tool(name)
		return t.OutputSchema, ok && t.OutputSchema != nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.output[name]
	return s, ok
}

// SetInputSchema declares what a tool accepts, as JSON Schema (type,
// properties, required, enum, default, description, minimum/maximum, items;
// see CheckSchema). The designer renders its form from it and validation's
// input_schema rule checks a node's static input against it.
func (r *Registry) SetInputSchema(name string, schema map[string]any) {
	r.mu.Lock()
	r.input[name] = schema
	r.mu.Unlock()
}

// InputSchema returns the schema declared with SetInputSchema.
func (r *Registry) InputSchema(name string) (map[string]any, bool) {
	if r == nil {
		return nil, false
	}
	if src := r.source(name); src != nil {
		t, ok := src.Tool(name)
		return t.InputSchema, ok && t.InputSchema != nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.input[name]
	return s, ok
}

// SetDescription gives a tool its one-line description (the designer and
// GET /v1/tools show it).
func (r *Registry) SetDescription(name, desc string) {
	r.mu.Lock()
	r.desc[name] = desc
	r.mu.Unlock()
}

// Description returns the text given with SetDescription.
func (r *Registry) Description(name string) string {
	if r == nil {
		return ""
	}
	if src := r.source(name); src != nil {
		t, _ := src.Tool(name)
		return t.Description
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.desc[name]
}

// NodeSchemas returns the input_schema rule's schemas for tool and proc
// nodes from the registry (ValidateOptions.Schemas); agent is consulted for
// agent nodes (nil: none).
func (r *Registry) NodeSchemas(agent func(nd *chain.Node) (input, config map[string]any)) chain.NodeSchemas {
	return func(nd *chain.Node) (map[string]any, map[string]any) {
		switch nd.Kind {
		case chain.KindTool:
			in, _ := r.InputSchema(nd.Name)
			return in, nil
		case chain.KindProc:
			// config and input both feed the proc tool's fields
			in, _ := r.InputSchema("proc")
			return in, in
		case chain.KindAgent:
			if agent != nil {
				return agent(nd)
			}
		}
		return nil, nil
	}
}

// Register adds or replaces a tool.
func (r *Registry) Register(name string, fn tool.Func) {
	r.mu.Lock()
	r.tools[name] = fn
	r.mu.Unlock()
}

// RegisterAll adds every tool of the map.
func (r *Registry) RegisterAll(tools map[string]tool.Func) {
	r.mu.Lock()
	for n, fn := range tools {
		r.tools[n] = fn
	}
	r.mu.Unlock()
}

// Get returns the tool with the given name.
func (r *Registry) Get(name string) (tool.Func, bool) {
	if r == nil {
		return nil, false
	}
	if src := r.source(name); src != nil {
		if _, ok := src.Tool(name); !ok {
			return nil, false
		}
		// Looked up again at the call: the tool's server may have gone or
		// come back since.
		return func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
			return src.Call(ctx, name, input, emit)
		}, true
	}
	r.mu.RLock()
	fn, ok := r.tools[name]
	r.mu.RUnlock()
	return fn, ok
}

// Has reports whether a tool is registered.
func (r *Registry) Has(name string) bool { _, ok := r.Get(name); return ok }

// Names returns the registered tool names, sorted (not the sources' tools:
// see SourcedTools).
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.tools))
	for n := range r.tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
