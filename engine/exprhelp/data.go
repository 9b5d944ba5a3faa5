// Package exprhelp holds the expression editor's services: what a field can
// read (its names, the nodes upstream, the shapes of their data) and a
// preview that evaluates an expression at the field over a run's data,
// under a budget far below a run's. The engine says what a field's context
// is (chain.ExprFieldContext); this package reads data through it.
package exprhelp

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
)

// RunData is what a run recorded that expressions can read.
type RunData struct {
	RunID   string // "" when the data is a chain test's in-memory run
	Test    string // the test's name, when it is
	Status  chain.RunStatus
	Input   map[string]any
	Outputs map[string]any // node id → output, for the nodes that produced one
}

// FromRun is the data of a run: its input and the outputs of the nodes
// that finished.
func FromRun(runID string, status chain.RunStatus, input map[string]any, nodes []engine.NodeResult) *RunData {
	d := &RunData{RunID: runID, Status: status, Input: input, Outputs: map[string]any{}}
	for _, n := range nodes {
		if n.Status == engine.PhaseDone {
			d.Outputs[n.NodeID] = n.Output
		}
	}
	return d
}

// TestRunTimeout bounds the in-memory run of a chain test a preview reads
// when the chain never ran (mocks stand in for anything outside).
const TestRunTimeout = 2 * time.Second

// FromTest is the data of c's first test run in memory: its input and the
// outputs its mocks give. opts.Timeout defaults to TestRunTimeout.
func FromTest(ctx context.Context, c *chain.Chain, opts chaintest.Options) (*RunData, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = TestRunTimeout
	}
	tr, err := chaintest.RunTrace(ctx, c, opts, 0)
	if err != nil {
		return nil, fmt.Errorf("run the chain's first test: %w", err)
	}
	return &RunData{Test: tr.Test, Status: tr.Status, Input: tr.Input, Outputs: tr.Outputs}, nil
}

// Note says where names read their data from when no run gives it: nothing
// (d is nil) or a test's in-memory run; "" for a run's data.
func Note(d *RunData) string {
	switch {
	case d == nil:
		return "the chain has not run yet: names read null"
	case d.Test != "":
		return fmt.Sprintf("the chain has not run yet: names read what its test %q gives (its input and mocks, run in memory)", d.Test)
	}
	return ""
}

// Scope is what an expression reads at a field, from a run's data: the
// field's names (`output` as the field sees it), node_results, and each
// node id as {output}. Lookups are lazy: one keystroke's preview reads a
// few names of a chain that may have thousands of nodes.
type Scope struct {
	f      *chain.ExprField
	d      *RunData
	out    any
	hasOut bool
}

// NewScope is the scope of field f over d (nil: nothing ran).
func NewScope(f *chain.ExprField, d *RunData) *Scope {
	s := &Scope{f: f, d: d}
	s.out, s.hasOut = output(f, d)
	return s
}

// output is `output` at the field: the node's own output, or what it
// received (one source's output, an object keyed by several sources' ids,
// the run's input for a root).
func output(f *chain.ExprField, d *RunData) (any, bool) {
	if d == nil {
		return nil, false
	}
	switch {
	case len(f.From) == 1:
		out, ok := d.Outputs[f.From[0]]
		return out, ok
	case len(f.From) == 0:
		return d.Input, true
	}
	m := map[string]any{}
	for _, id := range f.From {
		if out, ok := d.Outputs[id]; ok {
			m[id] = out
		}
	}
	return m, true
}

// Lookup reads one name, as a run would at the field.
func (s *Scope) Lookup(name string) (any, bool) {
	if chain.IsReserved(name) && name != "node_results" && !contains(s.f.Names, name) {
		return nil, false // not offered at this field: it reads nothing, as in a run
	}
	switch name {
	case "steps", "when":
		return map[string]any{}, true
	case "output":
		return s.out, s.hasOut
	}
	if s.d == nil {
		return nil, false
	}
	switch name {
	case "input", "trigger":
		return s.d.Input, true
	case "node_results":
		m := make(map[string]any, len(s.d.Outputs))
		for id, out := range s.d.Outputs {
			m[id] = out
		}
		return m, true
	}
	if out, ok := s.d.Outputs[name]; ok {
		return map[string]any{"output": out}, true
	}
	return nil, false
}

// Root builds the whole context, for expressions that read `@`.
func (s *Scope) Root() map[string]any {
	m := map[string]any{}
	names := append([]string{"node_results"}, s.f.Names...)
	if s.d != nil {
		for id := range s.d.Outputs {
			names = append(names, id)
		}
	}
	for _, n := range names {
		if v, ok := s.Lookup(n); ok {
			m[n] = v
		}
	}
	return m
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
