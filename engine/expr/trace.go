package expr

// Tracing: what an evaluation read. The engine records, for every routing
// decision, the value of each path the condition resolved ("output.score was
// 7"). Evaluations that do not ask pay one type assertion per path (tree
// spellings) or per evaluation (JMESPath), nothing else.

// Read is one path an evaluation resolved: the path as written and the
// value it found. Found is false for a path that does not exist.
type Read struct {
	Path  string
	Value any
	Found bool
}

// Trace collects what traced evaluations read. A caller that evaluates
// often keeps one and passes it to each EvalTraced, so tracing allocates
// nothing of its own. A Trace is not safe for concurrent use.
type Trace struct {
	Reads []Read // what the last EvalTraced read, in the order first read
	scope Scope
}

// Lookup implements Scope for the evaluation being traced.
func (t *Trace) Lookup(name string) (any, bool) { return t.scope.Lookup(name) }

func (t *Trace) note(path string, v any, found bool) {
	for i := range t.Reads { // a path read twice is listed once
		if t.Reads[i].Path == path {
			return
		}
	}
	t.Reads = append(t.Reads, Read{Path: path, Value: v, Found: found})
}

// Reset empties the trace, keeping its list for the next evaluation (and
// letting go of the values it pointed to).
func (t *Trace) Reset() {
	clear(t.Reads)
	t.Reads = t.Reads[:0]
	t.scope = nil
}

// EvalTraced is Eval that also records in t (after emptying it) each path
// the evaluation resolved, with its value. For JMESPath these are the
// static field chains the expression reads from the context (a.b of
// a.b[0].c), resolved whether or not evaluation reached them; for the other
// spellings, the paths evaluation actually resolved (the right side of an
// `and` whose left was false is not read). The reads are kept even when
// evaluation fails. t must not be used by another evaluation meanwhile.
func (e *Expr) EvalTraced(s Scope, strict bool, t *Trace) (any, error) {
	if s == nil {
		s = MapScope(nil)
	}
	t.Reset()
	t.scope = s
	defer func() { t.scope = nil }()
	if e.spelling == JMESPath {
		return e.evalJMESPath(contextOf(s), t, strict)
	}
	v, err := e.root.eval(t, strict)
	return v, withSrc(err, e.src)
}

// TestTraced is Test with the reads of EvalTraced.
func (e *Expr) TestTraced(s Scope, strict bool, t *Trace) (bool, error) {
	v, err := e.EvalTraced(s, strict, t)
	if err != nil {
		return false, err
	}
	return Truthy(v), nil
}

// traceChains notes the value of each field chain the expression reads from
// data (JMESPath).
func (e *Expr) traceChains(t *Trace, data map[string]any) {
	for i, ch := range e.readChains {
		v, ok := resolveChain(data, ch)
		t.note(e.readText[i], v, ok)
	}
}

func resolveChain(data map[string]any, names []string) (any, bool) {
	v, ok := data[names[0]]
	if !ok {
		return nil, false
	}
	for _, n := range names[1:] {
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[n]
		case MapScope:
			v, ok = m[n]
		case Scope:
			v, ok = m.Lookup(n)
		default:
			return nil, false
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}
