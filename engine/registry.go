package engine

import (
	"sort"
	"sync"

	"github.com/chainstudio/studio/engine/tool"
)

// Registry holds the tools a host makes available to `tool` nodes (and the
// `proc` tool that `proc` nodes call). It is safe for concurrent use.
type Registry struct {
	mu     sync.RWMutex
	tools  map[string]tool.Func
	inline map[string]bool
	output map[string]map[string]any // SetOutputSchema
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]tool.Func{}, inline: map[string]bool{}, output: map[string]map[string]any{}}
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
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.output[name]
	return s, ok
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
	r.mu.RLock()
	fn, ok := r.tools[name]
	r.mu.RUnlock()
	return fn, ok
}

// Has reports whether a tool is registered.
func (r *Registry) Has(name string) bool { _, ok := r.Get(name); return ok }

// Names returns the registered tool names, sorted.
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
