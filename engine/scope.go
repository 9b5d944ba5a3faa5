package engine

import (
	"context"
	"maps"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
)

// scope is what an expression sees. The run-level names (input, state,
// node_results, <id>) come from base; the rest are local to one evaluation.
//
// Evaluations on the run's coordinator goroutine use the live run-level
// names (base is the run's runScope); workers that evaluate inside a map or
// parallel node use a frozen copy of just the names their expressions read.
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
	if rs, ok := s.base.(*runScope); ok {
		return rs.ctx
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

// toolScope is the snapshot a scoped tool reads (tool.ScopeFrom).
func (s *scope) toolScope() *tool.Scope {
	ts := &tool.Scope{Output: s.output, Item: s.item, Index: s.index, InMap: s.inMap}
	ts.Input, _ = s.lookupMap("input")
	ts.State, _ = s.lookupMap("state")
	ts.NodeResults, _ = s.lookupMap("node_results")
	return ts
}

func (s *scope) lookupMap(name string) (map[string]any, bool) {
	v, ok := s.base.lookupBase(name)
	m, _ := v.(map[string]any)
	return m, ok
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

// runScope is the run's part of what expressions read: the run's input, its
// state and the nodes' outputs. Only the coordinator goroutine touches it;
// a worker evaluates against a frozenScope copied from it (freeze), and the
// maps it hands out are never mutated once handed (state is replaced on
// write), so a worker that holds one reads a stable value.
type runScope struct {
	ctx         context.Context // the run's: cancel and the chain timeout stop an evaluation
	g           *chain.Graph
	input       map[string]any
	state       map[string]any // replaced on write, never mutated: workers may hold the old one
	nodeResults map[string]any
	hasOutput   []bool // per node: it has an output expressions can read as <id>.output
}

var _ baseScope = (*runScope)(nil)

// lookupBase resolves run-level names for expressions evaluated on the
// coordinator.
func (rs *runScope) lookupBase(name string) (any, bool) {
	switch name {
	case "input", "trigger": // agent chains call the run's original payload `trigger`
		return rs.input, true
	case "state":
		return rs.state, true
	case "node_results":
		return rs.nodeResults, true
	}
	if i, ok := rs.g.Idx[name]; ok {
		if rs.hasOutput[i] { // built on demand: few expressions read <id>.output, every node has one
			return map[string]any{"output": rs.nodeResults[name]}, true
		}
	}
	return nil, false
}

func (rs *runScope) rootNames() []string {
	names := []string{"input", "state", "node_results"}
	for i, ok := range rs.hasOutput {
		if ok {
			names = append(names, rs.g.C.Nodes[i].ID)
		}
	}
	return names
}

// freeze snapshots the given run-level names (every name when all) for a
// worker goroutine.
func (rs *runScope) freeze(names []string, all bool) frozenScope {
	if all {
		names = rs.rootNames()
	}
	f := make(frozenScope, len(names)+2)
	for _, n := range names {
		if n == "node_results" {
			f[n] = maps.Clone(rs.nodeResults)
			continue
		}
		if v, ok := rs.lookupBase(n); ok {
			f[n] = v
		}
	}
	return f
}

// writeState replaces the state with a copy that has writes applied: the
// old map stays as it was for whoever holds it.
func (rs *runScope) writeState(writes map[string]any) {
	next := make(map[string]any, len(rs.state)+len(writes))
	maps.Copy(next, rs.state)
	maps.Copy(next, writes)
	rs.state = next
}

// setOutput makes out node i's output, readable as <id>.output and in
// node_results.
func (rs *runScope) setOutput(i int, out any) {
	rs.nodeResults[rs.g.C.Nodes[i].ID] = out
	rs.hasOutput[i] = true
}

// clearOutput leaves node i without an output: <id>.output reads null and
// node_results has no entry for it.
func (rs *runScope) clearOutput(i int) {
	delete(rs.nodeResults, rs.g.C.Nodes[i].ID)
	rs.hasOutput[i] = true
}
