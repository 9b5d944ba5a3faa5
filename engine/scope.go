package engine

import (
	"context"

	"github.com/chainstudio/studio/engine/expr"
)

// scope is what an expression sees. The run-level names (input, state,
// node_results, <id>) come from base; the rest are local to one evaluation.
//
// Evaluations on the run's coordinator goroutine use the live run (base is
// the run itself); workers that evaluate inside a map or parallel node use a
// frozen copy of just the names their expressions read.
type scope struct {
	base   baseScope
	output any
	hasOut bool
	steps  map[string]any
	whens  map[string]any
	item   any
	index  int
	inMap  bool
	resume any
	hasRes bool
	err    map[string]any
	ctx    context.Context // bounds the evaluation (the node's input under its timeout); nil: the run's
}

// baseScope resolves run-level names.
type baseScope interface {
	lookupBase(name string) (any, bool)
}

var (
	_ expr.Scope     = (*scope)(nil)
	_ expr.Contexter = (*scope)(nil)
)

// Context is what stops a long evaluation: the scope's own context, else
// the run's (cancel, chain timeout). A frozen scope has neither; the
// expression budget still bounds it.
func (s *scope) Context() context.Context {
	if s.ctx != nil {
		return s.ctx
	}
	if r, ok := s.base.(*run); ok {
		return r.ctx
	}
	return nil
}

func (s *scope) Lookup(name string) (any, bool) {
	switch name {
	case "output":
		if s.hasOut {
			return s.output, true
		}
		return nil, false
	case "steps":
		if s.steps == nil {
			return map[string]any{}, true
		}
		return s.steps, true
	case "when":
		if s.whens == nil {
			return map[string]any{}, true
		}
		return s.whens, true
	case "item":
		return s.item, s.inMap
	case "index":
		if s.inMap {
			return float64(s.index), true
		}
		return nil, false
	case "resume":
		return s.resume, s.hasRes
	case "error":
		if s.err != nil {
			return s.err, true
		}
		return nil, false
	}
	return s.base.lookupBase(name)
}

// Root builds the whole context, for expressions that read `@`.
func (s *scope) Root() map[string]any {
	m := map[string]any{}
	if r, ok := s.base.(interface{ rootNames() []string }); ok {
		for _, n := range r.rootNames() {
			if v, ok := s.base.lookupBase(n); ok {
				m[n] = v
			}
		}
	}
	for _, n := range []string{"output", "steps", "when", "item", "index", "resume", "error"} {
		if v, ok := s.Lookup(n); ok {
			m[n] = v
		}
	}
	return m
}

// frozenScope is a snapshot of run-level names for a worker goroutine.
type frozenScope map[string]any

func (f frozenScope) lookupBase(name string) (any, bool) {
	v, ok := f[name]
	return v, ok
}

func (f frozenScope) rootNames() []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	return out
}
