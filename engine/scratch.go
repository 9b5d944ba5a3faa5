package engine

import "github.com/chainstudio/studio/engine/expr"

// scratch is what the coordinator reuses from one decision to the next, so
// routing and tracing a condition allocate nothing once warm. Only the
// coordinator goroutine touches it, and a decision is consumed before the
// next one is taken.
type scratch struct {
	fired, pruned []int      // a routing's lists (routing, recycle)
	trace         expr.Trace // the paths a traced condition read (decision.go)
	scope         scope      // the scope a traced condition is evaluated in
	json          []byte     // a value read, as JSON
}

// routing returns a routing whose lists reuse the scratch buffers.
func (s *scratch) routing() routing {
	return routing{fired: s.fired[:0], pruned: s.pruned[:0], deferred: noEdge}
}

// recycle keeps a consumed routing's buffers for the next decision (only
// for a routing from route: others may share the graph's lists).
func (s *scratch) recycle(rt routing) {
	if rt.err == nil {
		s.fired, s.pruned = rt.fired[:0], rt.pruned[:0]
	}
}

// test evaluates a condition, tracing what it reads (strict: a missing
// value is an error). The evaluation sees a copy of sc held here, so the
// caller's scope stays on its stack (the trace keeps a pointer to what it
// evaluates in).
func (s *scratch) test(e *expr.Expr, sc *scope, strict bool) (bool, []Read, error) {
	s.scope = *sc
	ok, err := e.TestTraced(&s.scope, strict, &s.trace)
	out := toReads(s.trace.Reads, &s.json)
	s.trace.Reset() // the scratch must not keep outputs alive
	s.scope = scope{}
	return ok, out, err
}
