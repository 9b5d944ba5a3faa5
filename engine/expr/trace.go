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

// traceScope wraps the caller's scope for one traced evaluation; paths note
// what they resolve into it.
type traceScope struct {
	Scope
	reads []Read
}

func (t *traceScope) note(path string, v any, found bool) {
	for i := range t.reads { // a path read twice is listed once
		if t.reads[i].Path == path {
			return
		}
	}
	t.reads = append(t.reads, Read{Path: path, Value: v, Found: found})
}

// EvalTraced is Eval that also appends to reads each path the evaluation
// resolved, with its value, in the order first read. For JMESPath these are
// the static field chains the expression reads from the context (a.b of
// a.b[0].c), resolved whether or not evaluation reached them; for the
// other spellings, the paths evaluation actually resolved (the right side
// of an `and` whose left was false is not read). The reads are returned
// even when evaluation fails.
func (e *Expr) EvalTraced(s Scope, strict bool, reads []Read) (any, []Read, error) {
	if s == nil {
		s = MapScope(nil)
	}
	t := &traceScope{Scope: s, reads: reads}
	var v any
	var err error
	if e.spelling == JMESPath {
		var ctx = contextOf(s)
		v, err = e.evalJMESPath(ctx, t, strict)
	} else {
		v, err = e.root.eval(t, strict)
		err = withSrc(err, e.src)
	}
	return v, t.reads, err
}

// TestTraced is Test with the reads of EvalTraced.
func (e *Expr) TestTraced(s Scope, strict bool, reads []Read) (bool, []Read, error) {
	v, reads, err := e.EvalTraced(s, strict, reads)
	if err != nil {
		return false, reads, err
	}
	return Truthy(v), reads, nil
}

// traceChains notes the value of each field chain the expression reads from
// data (JMESPath).
func (e *Expr) traceChains(t *traceScope, data map[string]any) {
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
