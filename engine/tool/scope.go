package tool

import "context"

// Scope is what a node's expressions could read where it runs, handed to
// the tools that ask for it (engine.Registry.SetScoped), such as the code
// tool, whose script reads the run's data by name. It is a snapshot taken
// when the node starts: maps are shared, never to be mutated.
type Scope struct {
	Input       map[string]any // the run's input
	State       map[string]any // the run's state
	NodeResults map[string]any // node id → output of every finished node
	Output      any            // the data the node received from upstream (the item in a map body)
	Item        any            // inside a map body (InMap)
	Index       int
	InMap       bool
	// Session is the same for every call of one run's execution and
	// differs between executions (a resume is a new one): a tool may keep
	// per-run state under it, never across runs.
	Session string
}

type scopeKey struct{}

// WithScope returns a context carrying the node's scope.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the scope ctx carries, or nil.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// Problem is what a tool's own check found in a node's static input: the
// field (input.code), a 1-based line and column in it when the field is
// source text, and the message.
type Problem struct {
	Field   string
	Line    int
	Column  int
	Message string
	// Rule and Warning, when set, report the problem under its own rule
	// and as a warning (what the host will refuse at run time, say), not
	// as an input_check error.
	Rule    string
	Warning bool
}

// Check looks at a node's static input before any run (validation, save):
// a script's syntax, say. It must be quick and bounded, and never run
// anything.
type Check func(input map[string]any) []Problem
