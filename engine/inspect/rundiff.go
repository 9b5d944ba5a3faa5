package inspect

import (
	"container/heap"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/internal/intheap"
	"github.com/chainstudio/studio/engine/internal/jsonlit"
)

// Comparing two runs (the run page's "Compare with…"). CompareRuns is pure:
// the caller reads both runs (their chains, node results, fired edges and
// final outputs) and gets back, per node, what differs. docs/design.md
// ("Comparing two runs") says why it is shaped this way.

// RunSide is one run as CompareRuns reads it.
type RunSide struct {
	// Chain is the document the run executed (nil: only its results are
	// known). Two runs of one version may share one *Chain: it is then read
	// once.
	Chain       *chain.Chain
	Input       map[string]any // what the run was started with
	Status      chain.RunStatus
	Error       *engine.RunError
	FinalOutput any
	DurationMS  int64
	Nodes       []engine.NodeResult
	// Fired lists, per node id, the outgoing edge ids the node fired in any
	// pass of the run (FiredEdges reads them from a checkpoint log).
	Fired map[string][]string
}

// RunDiffLimits bound what a comparison reports. Zero fields take the
// defaults; the comparison itself is linear in the two runs' records.
type RunDiffLimits struct {
	MaxPaths      int // changed paths listed per value (one node's output, the final output); default 20
	MaxTotalPaths int // changed paths listed in the whole comparison; default 1,000
	MaxValueBytes int // JSON bytes of one old or new value before it is cut; default 256
	MaxErrorBytes int // bytes of a node's error message; default 1,024
}

// Default comparison limits.
const (
	DefaultDiffPaths      = 20
	DefaultDiffTotalPaths = 1000
	DefaultDiffValueBytes = 256
	DefaultDiffErrorBytes = 1024
)

func (l RunDiffLimits) withDefaults() RunDiffLimits {
	if l.MaxPaths <= 0 {
		l.MaxPaths = DefaultDiffPaths
	}
	if l.MaxTotalPaths <= 0 {
		l.MaxTotalPaths = DefaultDiffTotalPaths
	}
	if l.MaxValueBytes <= 0 {
		l.MaxValueBytes = DefaultDiffValueBytes
	}
	if l.MaxErrorBytes <= 0 {
		l.MaxErrorBytes = DefaultDiffErrorBytes
	}
	return l
}

// What a node difference is about (NodeDiff.What, Divergence.What).
const (
	DiffStatus  = "status"  // phase or skip reason
	DiffError   = "error"   // the error message
	DiffRoute   = "route"   // which incoming or outgoing edges fired
	DiffOutput  = "output"  // the output, structurally
	DiffAdded   = "added"   // the node is only in b's chain, and ran there
	DiffRemoved = "removed" // the node is only in a's chain, and ran there
)

// Node changes (NodeDiff.Change).
const (
	ChangeSame    = "same"
	ChangeChanged = "changed"
	ChangeAdded   = "added"   // only in b's chain
	ChangeRemoved = "removed" // only in a's chain
)

// StatusNotReached is a node's status in a run that has no record of it:
// not reached (yet), or run inside a map or parallel node (those keep no
// record of their own).
const StatusNotReached = "not_reached"

// RunDiff is what differs between run a and run b.
type RunDiff struct {
	Same          bool             `json:"same"` // nothing differs but timings
	StatusA       chain.RunStatus  `json:"status_a"`
	StatusB       chain.RunStatus  `json:"status_b"`
	StatusChanged bool             `json:"status_changed"`
	ErrorA        *engine.RunError `json:"error_a,omitempty"`
	ErrorB        *engine.RunError `json:"error_b,omitempty"`
	DurationAMS   int64            `json:"duration_a_ms"`
	DurationBMS   int64            `json:"duration_b_ms"`
	// Input compares what the two runs were started with: a different
	// input often explains every other difference.
	Input        ValueDiff `json:"input"`
	FinalOutput  ValueDiff `json:"final_output"`
	NodesAdded   []string  `json:"nodes_added"`   // in b's chain only
	NodesRemoved []string  `json:"nodes_removed"` // in a's chain only
	// Divergence is the first node, in topological order (ties by id), whose
	// status, error, route or output differs; nil when none does.
	Divergence *Divergence `json:"divergence"`
	Differing  int         `json:"differing"` // nodes whose Change is not "same"
	Nodes      []NodeDiff  `json:"nodes"`     // every node of either chain, in the same order
	// Truncated: MaxTotalPaths was reached, so some values list fewer paths
	// than differ (each such value says so).
	Truncated bool `json:"truncated,omitempty"`
}

// Divergence names the first point where two runs went different ways.
type Divergence struct {
	NodeID string   `json:"node_id"`
	What   []string `json:"what"`
}

// NodeDiff compares one node across the two runs.
type NodeDiff struct {
	NodeID string     `json:"node_id"`
	Change string     `json:"change"`         // same | changed | added | removed
	What   []string   `json:"what,omitempty"` // status, error, route, output, added, removed
	A      *NodeSide  `json:"a"`              // nil: not in a's chain
	B      *NodeSide  `json:"b"`              // nil: not in b's chain
	Route  *RouteDiff `json:"route,omitempty"`
	Output *ValueDiff `json:"output,omitempty"`
	// DurationDeltaMS is b's duration less a's, when both ran to an end.
	DurationDeltaMS *float64 `json:"duration_delta_ms,omitempty"`
	// Edited lists the fields of the node's definition that differ between
	// the two chains (a move on the canvas left out).
	Edited []string `json:"edited,omitempty"`
}

// NodeSide is what one node did in one run.
type NodeSide struct {
	Status    string `json:"status"` // done | error | skip | paused | start | not_reached
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	Matched   string `json:"matched,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Reused    bool   `json:"reused,omitempty"`
	// DurationMS (to the microsecond) when the node ran to an end in this
	// run; absent for a skipped, reused, waiting or unfinished node.
	DurationMS *float64 `json:"duration_ms,omitempty"`
}

// RouteDiff lists, when they differ, the edges into and out of a node that
// fired in each run (sorted ids; a loop edge counts once).
type RouteDiff struct {
	InA  []string `json:"in_a"`
	InB  []string `json:"in_b"`
	OutA []string `json:"out_a"`
	OutB []string `json:"out_b"`
}

// ValueDiff is a structural difference of two JSON values.
type ValueDiff struct {
	Changed   bool         `json:"changed"`
	Paths     []PathChange `json:"paths,omitempty"`
	Truncated bool         `json:"truncated,omitempty"` // more paths differ than are listed
}

// PathChange is one changed place in a value. Path is written as a
// JMESPath expression relative to the value ("items[2].name"; "@" is the
// whole value). A value longer than the limit is cut: it is then a JSON
// string of its first bytes followed by "…", and OldCut or NewCut is set.
type PathChange struct {
	Path   string          `json:"path"`
	Op     string          `json:"op"` // added | removed | changed
	Old    json.RawMessage `json:"old,omitempty"`
	New    json.RawMessage `json:"new,omitempty"`
	OldCut bool            `json:"old_cut,omitempty"`
	NewCut bool            `json:"new_cut,omitempty"`
}

// FiredEdges reads from a run's checkpoint log the outgoing edges each node
// fired, in any pass (a loop's earlier passes included), sorted. It is the
// one place a run's route is taken from.
func FiredEdges(log []engine.Checkpoint) map[string][]string {
	sets := map[string]map[string]bool{}
	add := func(node string, ids []string) {
		if len(ids) == 0 {
			return
		}
		s := sets[node]
		if s == nil {
			s = map[string]bool{}
			sets[node] = s
		}
		for _, id := range ids {
			s[id] = true
		}
	}
	for k := range log {
		switch cp := &log[k]; {
		case cp.Kind == engine.CheckpointNode && cp.Node != nil:
			add(cp.Node.NodeID, cp.Node.Fired)
		case cp.Kind == engine.CheckpointEdges && cp.Edges != nil:
			add(cp.Edges.Source, cp.Edges.Fired)
		}
	}
	out := make(map[string][]string, len(sets))
	for node, s := range sets {
		out[node] = slices.Sorted(maps.Keys(s))
	}
	return out
}

// CompareRuns compares run a with run b, node by node. Nodes are matched by
// id, so runs of two versions of a chain compare too: a node only one chain
// has is added or removed.
func CompareRuns(a, b *RunSide, lim RunDiffLimits) *RunDiff {
	lim = lim.withDefaults()
	ca, cb := a.Chain, b.Chain
	if ca == nil {
		ca = &chain.Chain{}
	}
	if cb == nil {
		cb = &chain.Chain{}
	}
	d := &RunDiff{
		StatusA: a.Status, StatusB: b.Status, StatusChanged: a.Status != b.Status,
		DurationAMS: a.DurationMS, DurationBMS: b.DurationMS,
		NodesAdded: []string{}, NodesRemoved: []string{}, Nodes: []NodeDiff{},
	}
	if !runErrorsEqual(a.Error, b.Error) {
		d.ErrorA, d.ErrorB = a.Error, b.Error
	}
	vd := &valueDiffer{lim: lim, budget: lim.MaxTotalPaths}
	// the inputs first: the page shows them first, and the total budget of
	// paths must not leave them out
	d.Input = vd.diff(inputValue(a.Input), inputValue(b.Input))

	resA, resB := resultsByID(a.Nodes), resultsByID(b.Nodes)
	inA, inB := nodeSet(ca, resA), nodeSet(cb, resB)
	routeA, routeB := nodeRoutes(ca, a.Fired), nodeRoutes(cb, b.Fired)
	edited := editedNodes(ca, cb)

	for _, id := range compareOrder(ca, cb, inA, inB) {
		nd := NodeDiff{NodeID: id, Change: ChangeSame, Edited: edited[id]}
		ra, rb := resA[id], resB[id]
		if inA[id] {
			nd.A = nodeSide(ra, lim)
		}
		if inB[id] {
			nd.B = nodeSide(rb, lim)
		}
		switch {
		case !inA[id]:
			nd.Change = ChangeAdded
			d.NodesAdded = append(d.NodesAdded, id)
			if ran(rb) {
				nd.What = []string{DiffAdded}
			}
		case !inB[id]:
			nd.Change = ChangeRemoved
			d.NodesRemoved = append(d.NodesRemoved, id)
			if ran(ra) {
				nd.What = []string{DiffRemoved}
			}
		default:
			if nd.A.Status != nd.B.Status || nd.A.Reason != nd.B.Reason {
				nd.What = append(nd.What, DiffStatus)
			}
			if nd.A.Error != nd.B.Error {
				nd.What = append(nd.What, DiffError)
			}
			ia, oa := routeA.in[id], routeA.out[id]
			ib, ob := routeB.in[id], routeB.out[id]
			if !equalStrings(ia, ib) || !equalStrings(oa, ob) {
				nd.What = append(nd.What, DiffRoute)
				nd.Route = &RouteDiff{InA: nonNil(ia), InB: nonNil(ib), OutA: nonNil(oa), OutB: nonNil(ob)}
			}
			if o := vd.diff(output(ra), output(rb)); o.Changed {
				nd.What = append(nd.What, DiffOutput)
				nd.Output = &o
			}
			if len(nd.What) > 0 {
				nd.Change = ChangeChanged
			}
			if nd.A.DurationMS != nil && nd.B.DurationMS != nil {
				delta := roundMicro(*nd.B.DurationMS - *nd.A.DurationMS)
				nd.DurationDeltaMS = &delta
			}
		}
		if nd.Change != ChangeSame {
			d.Differing++
		}
		if d.Divergence == nil && len(nd.What) > 0 {
			d.Divergence = &Divergence{NodeID: id, What: nd.What}
		}
		d.Nodes = append(d.Nodes, nd)
	}
	d.FinalOutput = vd.diff(a.FinalOutput, b.FinalOutput)
	d.Truncated = vd.truncated
	d.Same = d.Differing == 0 && !d.StatusChanged && d.ErrorA == nil && d.ErrorB == nil && !d.FinalOutput.Changed && !d.Input.Changed
	return d
}

// inputValue is a run's input as a JSON value: no input is the empty object
// the run read (a nil map and {} are the same input).
func inputValue(in map[string]any) any {
	if in == nil {
		return map[string]any{}
	}
	return in
}

func runErrorsEqual(a, b *engine.RunError) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Code == b.Code && a.Message == b.Message && a.NodeID == b.NodeID && a.EdgeID == b.EdgeID
}

func resultsByID(nodes []engine.NodeResult) map[string]*engine.NodeResult {
	m := make(map[string]*engine.NodeResult, len(nodes))
	for i := range nodes {
		m[nodes[i].NodeID] = &nodes[i]
	}
	return m
}

// nodeSet is the nodes a run has: its chain's, and any its results name
// (a run whose chain is unknown still compares by its results).
func nodeSet(c *chain.Chain, res map[string]*engine.NodeResult) map[string]bool {
	s := make(map[string]bool, len(c.Nodes)+len(res))
	for i := range c.Nodes {
		s[c.Nodes[i].ID] = true
	}
	for id := range res {
		s[id] = true
	}
	return s
}

// ran reports whether a node did anything in a run: it has a record that
// is not a skip.
func ran(r *engine.NodeResult) bool { return r != nil && r.Status != engine.PhaseSkip }

func output(r *engine.NodeResult) any {
	if r == nil {
		return nil
	}
	return r.Output
}

func nodeSide(r *engine.NodeResult, lim RunDiffLimits) *NodeSide {
	if r == nil {
		return &NodeSide{Status: StatusNotReached}
	}
	s := &NodeSide{Status: string(r.Status), Reason: r.Reason, Error: clip.String(r.Error, lim.MaxErrorBytes),
		Matched: r.Matched, Attempts: r.Attempts, Iteration: r.Iteration, Reused: r.Reused}
	if !r.Reused && (r.Status == engine.PhaseDone || r.Status == engine.PhaseError) && !r.Started.IsZero() && !r.Ended.Before(r.Started) {
		ms := roundMicro(float64(r.Ended.Sub(r.Started).Microseconds()) / 1000)
		s.DurationMS = &ms
	}
	return s
}

func roundMicro(ms float64) float64 { return math.Round(ms*1000) / 1000 }

// routes are, per node id, the edges into and out of it that fired.
type routes struct{ in, out map[string][]string }

// nodeRoutes turns the edges each node fired into each node's route: what
// fired out of it, and what fired into it (the fired edges of the chain
// whose target it is). The route of a run is computed here only, so that a
// richer record of routing decisions can replace Fired in one place.
func nodeRoutes(c *chain.Chain, fired map[string][]string) routes {
	r := routes{in: map[string][]string{}, out: map[string][]string{}}
	target := make(map[string]string, len(c.Edges))
	for i := range c.Edges {
		target[c.Edges[i].ID] = c.Edges[i].Target
	}
	for node, ids := range fired {
		ids = append([]string(nil), ids...)
		sort.Strings(ids)
		r.out[node] = ids
		for _, id := range ids {
			if t, ok := target[id]; ok {
				r.in[t] = append(r.in[t], id)
			}
		}
	}
	for t := range r.in {
		sort.Strings(r.in[t])
	}
	return r
}

// editedNodes lists, per node in both chains, the fields of its definition
// that changed (position left out: a move changes nothing a run does).
func editedNodes(a, b *chain.Chain) map[string][]string {
	out := map[string][]string{}
	if a == b { // one version's document, shared by the caller
		return out
	}
	for _, nc := range Diff(a, b).NodesChanged {
		var f []string
		for _, name := range nc.Fields {
			if name != "position" {
				f = append(f, name)
			}
		}
		if len(f) > 0 {
			out[nc.NodeID] = f
		}
	}
	return out
}

// compareOrder is every node of either run in topological order of the two
// chains together (edges that are not loops, data dependencies, owners
// before what is attached to them), ties broken by id. Nodes on a cycle
// (two versions that reversed an edge) follow, by id.
func compareOrder(a, b *chain.Chain, inA, inB map[string]bool) []string {
	ids := make([]string, 0, len(inA)+len(inB))
	for id := range inA {
		ids = append(ids, id)
	}
	for id := range inB {
		if !inA[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	succ := make([][]int, len(ids))
	indeg := make([]int, len(ids))
	seen := map[[2]int]bool{}
	link := func(from, to string) {
		f, ok1 := pos[from]
		t, ok2 := pos[to]
		if !ok1 || !ok2 || f == t || seen[[2]int{f, t}] {
			return
		}
		seen[[2]int{f, t}] = true
		succ[f] = append(succ[f], t)
		indeg[t]++
	}
	for k, c := range []*chain.Chain{a, b} {
		if k == 1 && b == a {
			break
		}
		for before, after := range chain.Precedence(c) {
			link(before, after)
		}
	}
	h := &intheap.Min{} // indexes into ids, which are sorted: the smallest id first
	for i := range ids {
		if indeg[i] == 0 {
			*h = append(*h, i)
		}
	}
	heap.Init(h)
	out := make([]string, 0, len(ids))
	placed := make([]bool, len(ids))
	for h.Len() > 0 {
		i := heap.Pop(h).(int)
		placed[i] = true
		out = append(out, ids[i])
		for _, t := range succ[i] {
			if indeg[t]--; indeg[t] == 0 {
				heap.Push(h, t)
			}
		}
	}
	for i, id := range ids {
		if !placed[i] {
			out = append(out, id)
		}
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// valueDiffer lists the changed paths of values within the limits; budget
// is what is left of MaxTotalPaths.
type valueDiffer struct {
	lim       RunDiffLimits
	budget    int
	truncated bool
}

// diff compares two JSON values. Equality is always decided in full; only
// the listing of paths is bounded.
func (d *valueDiffer) diff(a, b any) ValueDiff {
	a, b = plainJSON(a), plainJSON(b)
	if jsonEqual(a, b) { // the common case, without allocating
		return ValueDiff{}
	}
	if d.budget <= 0 {
		d.truncated = true
		return ValueDiff{Changed: true, Truncated: true}
	}
	w := pathWalk{d: d}
	w.walk(nil, a, b, true, true)
	return w.v
}

// pathWalk is one value's walk: it lists changes until a limit is reached,
// then only notes that more differ.
type pathWalk struct {
	d    *valueDiffer
	v    ValueDiff
	full bool // a limit was reached while something still differed
}

// walk compares a and b at path (has*: the value exists on that side). It
// is only called on values that differ: equal children are skipped first.
func (w *pathWalk) walk(path []byte, a, b any, hasA, hasB bool) {
	if w.full { // listed all it may; Truncated already says more differ
		return
	}
	switch {
	case !hasA:
		w.add(path, "added", nil, b, false, true)
		return
	case !hasB:
		w.add(path, "removed", a, nil, true, false)
		return
	}
	a, b = plainJSON(a), plainJSON(b)
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, dup := av[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, okA := av[k]
			y, okB := bv[k]
			if okA && okB && jsonEqual(x, y) {
				continue
			}
			w.walk(appendKey(path, k), x, y, okA, okB)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < max(len(av), len(bv)); i++ {
			var x, y any
			if i < len(av) {
				x = av[i]
			}
			if i < len(bv) {
				y = bv[i]
			}
			if i < len(av) && i < len(bv) && jsonEqual(x, y) {
				continue
			}
			w.walk(appendIndex(path, i), x, y, i < len(av), i < len(bv))
		}
		return
	}
	if !jsonEqual(a, b) {
		w.add(path, "changed", a, b, true, true)
	}
}

func (w *pathWalk) add(path []byte, op string, a, b any, hasA, hasB bool) {
	w.v.Changed = true
	if len(w.v.Paths) >= w.d.lim.MaxPaths || w.d.budget <= 0 {
		w.full, w.v.Truncated = true, true
		if w.d.budget <= 0 {
			w.d.truncated = true
		}
		return
	}
	w.d.budget--
	pc := PathChange{Path: string(path), Op: op}
	if len(path) == 0 {
		pc.Path = "@"
	}
	if hasA {
		pc.Old, pc.OldCut = cutJSON(a, w.d.lim.MaxValueBytes)
	}
	if hasB {
		pc.New, pc.NewCut = cutJSON(b, w.d.lim.MaxValueBytes)
	}
	w.v.Paths = append(w.v.Paths, pc)
}

// appendKey writes .key, or ."key" when the key is not a JMESPath
// identifier (no dot at the start of a path).
func appendKey(path []byte, k string) []byte {
	out := make([]byte, len(path), len(path)+len(k)+3)
	copy(out, path)
	if len(out) > 0 {
		out = append(out, '.')
	}
	if isIdent(k) {
		return append(out, k...)
	}
	q, _ := json.Marshal(k)
	return append(out, q...)
}

func appendIndex(path []byte, i int) []byte {
	out := make([]byte, len(path), len(path)+8)
	copy(out, path)
	out = append(out, '[')
	out = strconv.AppendInt(out, int64(i), 10)
	return append(out, ']')
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// plainJSON returns v as encoding/json decodes JSON into an any (maps,
// slices, float64, string, bool, nil), converting other Go values (a
// tool's own types in an in-memory run) through JSON at the top level.
func plainJSON(v any) any {
	switch v.(type) {
	case nil, bool, float64, string, map[string]any, []any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// jsonEqual compares two values as JSON values.
func jsonEqual(a, b any) bool {
	a, b = plainJSON(a), plainJSON(b)
	switch av := a.(type) {
	case nil:
		return b == nil
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case float64:
		bv, ok := b.(float64)
		return ok && av == bv
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !jsonEqual(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !jsonEqual(av[i], bv[i]) {
				return false
			}
		}
		return true
	}
	return false // not JSON: never equal, so a difference shows
}

// cutJSON encodes v as JSON, at most about n bytes of it (BoundedJSON): a
// longer value is a JSON string of its first n bytes and "…", so the
// answer stays valid JSON.
func cutJSON(v any, n int) (json.RawMessage, bool) {
	s, cut := engine.BoundedJSON(plainJSON(v), n)
	if !cut {
		return json.RawMessage(s), false
	}
	q, _ := jsonlit.Marshal(s)
	return json.RawMessage(q), true
}
