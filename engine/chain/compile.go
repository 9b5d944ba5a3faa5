package chain

import "sync"

// Plan is a chain checked once against a host's environment and indexed,
// ready to run many times (as text/template parses a template once). The
// runtime takes only a Plan: it never checks a chain itself. A Plan must
// not be modified, nor its chain, while in use.
type Plan struct {
	chain  *Chain
	g      *Graph
	issues []Issue
	order  *Order // nil when the chain has errors

	mu    sync.Mutex
	memos map[any]any
}

// Compile checks c against env and indexes it for running. Its test cases
// and pinned outputs are not checked (a broken test fails `studio test`, a
// stale pin refuses the designer's runs that use it: neither stops the
// chain from running). The plan is returned even when c has errors, with a
// *ValidationError: running it records a run refused as invalid.
func Compile(c *Chain, env ValidateOptions) (*Plan, error) {
	env.SkipTests, env.SkipPins = true, true
	g := NewGraph(c)
	p := &Plan{chain: c, g: g, issues: validateGraph(g, env)}
	if HasErrors(p.issues) {
		return p, &ValidationError{Issues: p.issues}
	}
	p.order = newOrder(g)
	return p, nil
}

// Issues returns what Compile found (warnings too).
func (p *Plan) Issues() []Issue { return p.issues }

// Chain returns the plan's chain.
func (p *Plan) Chain() *Chain { return p.chain }

// Valid reports whether the chain has no validation errors.
func (p *Plan) Valid() bool { return p.order != nil }

// Graph returns the plan's indexed chain (read only).
func (p *Plan) Graph() *Graph { return p.g }

// Order returns what every run of the plan shares: roots, terminals,
// topological order. nil when the chain has errors.
func (p *Plan) Order() *Order { return p.order }

// Memo returns what build returns for key, building it once per plan: what
// a runtime derives from a plan and its own environment.
func (p *Plan) Memo(key any, build func() any) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.memos[key]; ok {
		return v
	}
	if p.memos == nil {
		p.memos = map[any]any{}
	}
	v := build()
	p.memos[key] = v
	return v
}
