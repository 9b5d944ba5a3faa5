package edit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/internal/clip"
)

// ExtractError says why a selection cannot be extracted faithfully: the
// node or edge, the field and the expression where the rewrite would
// change what the chain does.
type ExtractError struct {
	NodeID string
	EdgeID string
	Field  string
	Msg    string
}

func (e *ExtractError) Error() string {
	var where []string
	if e.NodeID != "" {
		where = append(where, fmt.Sprintf("node %q", e.NodeID))
	}
	if e.EdgeID != "" {
		where = append(where, fmt.Sprintf("edge %q", e.EdgeID))
	}
	if e.Field != "" {
		where = append(where, e.Field)
	}
	if len(where) == 0 {
		return "extract: " + e.Msg
	}
	return "extract: " + strings.Join(where, " ") + ": " + e.Msg
}

// Extract moves the nodes ids of c (and the edges among them) into a new
// chain called name, and replaces them in a copy of c with one skill node
// calling it. c is not modified.
//
// The skill node takes the id of the selection's exit node (its only node
// with no successor inside the selection), so every downstream reference
// to that node (`X.output`, `steps.X`, `node_results.X`) keeps reading the
// same value: a skill node outputs its sub-chain's final output, which is
// the exit node's. A selection whose behaviour would change is refused
// with an *ExtractError instead: several exits, entries that see different
// inputs, expressions inside reading the run's input, state or nodes
// outside, or nodes outside reading any selected node but the exit.
func Extract(c *chain.Chain, ids []string, name string) (parent, sub *chain.Chain, err error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return nil, nil, &ExtractError{Field: "name", Msg: "the new chain needs a name"}
	case strings.HasPrefix(name, "__chain__"):
		return nil, nil, &ExtractError{Field: "name", Msg: "names starting __chain__ are reserved for agents"}
	case name == c.Name:
		return nil, nil, &ExtractError{Field: "name", Msg: fmt.Sprintf("%q is the name of this chain; a chain cannot call itself", name)}
	}
	if len(ids) == 0 {
		return nil, nil, &ExtractError{Field: "nodes", Msg: "select at least one node"}
	}
	src, err := copyChain(c)
	if err != nil {
		return nil, nil, err
	}
	if err := chain.Normalize(src); err != nil {
		return nil, nil, fmt.Errorf("extract: %w", err)
	}
	idx := make(map[string]int, len(src.Nodes))
	for i, n := range src.Nodes {
		idx[n.ID] = i
	}
	in := make(map[string]bool, len(ids))
	for _, id := range ids {
		if _, ok := idx[id]; !ok {
			return nil, nil, &ExtractError{NodeID: id, Field: "nodes", Msg: "no such node in the chain"}
		}
		in[id] = true
	}

	// Attached nodes (map bodies, parallel branches, error handlers) must
	// stay with their owner.
	for _, n := range src.Nodes {
		owned := append([]string{n.MapNode}, n.Branches...)
		if n.OnError != "" && !isOnErrorMode(n.OnError) {
			owned = append(owned, n.OnError)
		}
		for _, o := range owned {
			if o != "" && in[o] != in[n.ID] {
				return nil, nil, &ExtractError{NodeID: n.ID, Msg: fmt.Sprintf("attaches node %q; select both or neither", o)}
			}
		}
	}

	var internal, entering, leaving, outside []chain.Edge
	for _, e := range src.Edges {
		switch {
		case in[e.Source] && in[e.Target]:
			internal = append(internal, e)
		case in[e.Target]:
			entering = append(entering, e)
		case in[e.Source]:
			leaving = append(leaving, e)
		default:
			outside = append(outside, e)
		}
		if in[e.Source] != in[e.Target] && e.IsLoop() {
			return nil, nil, &ExtractError{EdgeID: e.ID, Msg: "a loop edge may not cross the selection's border"}
		}
	}

	// Expressions inside the selection run in the sub-chain, whose input is
	// the skill node's input and whose state and nodes are its own. The
	// skill node's input is the run's input only when nothing feeds it.
	for _, n := range src.Nodes {
		if !in[n.ID] {
			continue
		}
		if len(n.SetState) > 0 {
			return nil, nil, &ExtractError{NodeID: n.ID, Field: "set_state", Msg: "a sub-chain has its own state, so state set inside it would not reach this chain"}
		}
		if n.Kind == chain.KindInterrupt {
			return nil, nil, &ExtractError{NodeID: n.ID, Msg: "an interrupt node pauses this run; it cannot move into a sub-chain"}
		}
		for _, x := range nodeExprs(&n) {
			for _, r := range refsOf(x.src) {
				switch {
				case (r.ctx == "input" || r.ctx == "trigger") && len(entering) > 0:
					return nil, nil, &ExtractError{NodeID: n.ID, Field: x.field, Msg: fmt.Sprintf("%q reads the run's input, which the sub-chain would not see", x.src)}
				case r.ctx == "state":
					return nil, nil, &ExtractError{NodeID: n.ID, Field: x.field, Msg: fmt.Sprintf("%q reads the run's state, which the sub-chain would not see", x.src)}
				case r.node != "" && !in[r.node] && hasNode(idx, r.node):
					return nil, nil, &ExtractError{NodeID: n.ID, Field: x.field, Msg: fmt.Sprintf("%q reads node %q, which stays outside the selection", x.src, r.node)}
				}
			}
		}
	}

	// The exit: the one node of the selection that the sub-chain's final
	// output comes from.
	attached := attachedSet(src)
	hasInternalOut, hasInternalIn := map[string]bool{}, map[string]bool{}
	for _, e := range internal {
		hasInternalOut[e.Source] = true
		hasInternalIn[e.Target] = true
	}
	var exits []string
	for _, n := range src.Nodes {
		if in[n.ID] && !attached[n.ID] && !hasInternalOut[n.ID] {
			exits = append(exits, n.ID)
		}
	}
	if len(exits) == 0 {
		return nil, nil, &ExtractError{Field: "nodes", Msg: "the selection has no last node (each selected node leads to another, e.g. through a loop edge); a sub-chain returns the output of its one last node"}
	}
	if len(exits) != 1 {
		return nil, nil, &ExtractError{Field: "nodes", Msg: fmt.Sprintf("the selection must end in exactly one node, it ends in %d (%s); a sub-chain returns one output", len(exits), clip.Quoted(exits, maxNamed))}
	}
	exit := exits[0]
	switch m := src.Nodes[idx[exit]].OnError; m {
	case chain.OnErrorSkip, chain.OnErrorContinue:
		// a failure would end the sub-run differently from this run; the
		// skill node can carry it instead, after the extract
		return nil, nil, &ExtractError{NodeID: exit, Field: "on_error", Msg: fmt.Sprintf("the selection's last node has on_error %q; set it on the skill node after extracting instead", m)}
	}
	for _, e := range leaving {
		if e.Source != exit {
			return nil, nil, &ExtractError{NodeID: e.Source, EdgeID: e.ID, Msg: fmt.Sprintf("leaves the selection from %q, but only its last node %q can pass its output on", e.Source, exit)}
		}
	}

	// Entries: every node the sub-chain starts from must receive what it
	// received before, so all of them must be fed by the same edges.
	type feed struct {
		src, label, cond string
		def              bool
	}
	feeds := map[string][]feed{}
	for _, e := range entering {
		feeds[e.Target] = append(feeds[e.Target], feed{e.Source, e.Label, e.Condition, e.Default})
	}
	var starts []string
	for _, n := range src.Nodes {
		if in[n.ID] && !attached[n.ID] && !hasInternalIn[n.ID] {
			starts = append(starts, n.ID)
		}
	}
	var first []feed
	for k, id := range starts {
		f := feeds[id]
		sort.Slice(f, func(a, b int) bool { return fmt.Sprint(f[a]) < fmt.Sprint(f[b]) })
		if k == 0 {
			first = f
			continue
		}
		if fmt.Sprint(f) != fmt.Sprint(first) {
			return nil, nil, &ExtractError{NodeID: id, Msg: fmt.Sprintf("starts the selection but is fed differently from %q; a sub-chain has one input", starts[0])}
		}
	}
	for id := range feeds {
		if hasInternalIn[id] {
			return nil, nil, &ExtractError{NodeID: id, Msg: "is reached both from inside and from outside the selection; its input would change"}
		}
	}

	// Nodes and edges outside may read only the exit, whose id the skill
	// node takes over.
	check := func(nodeID, edgeID, field, s string) error {
		for _, r := range refsOf(s) {
			if r.node != "" && in[r.node] && r.node != exit {
				return &ExtractError{NodeID: nodeID, EdgeID: edgeID, Field: field, Msg: fmt.Sprintf("%q reads node %q, which would be hidden inside the sub-chain; only %q's output stays visible", s, r.node, exit)}
			}
		}
		return nil
	}
	for _, n := range src.Nodes {
		if in[n.ID] {
			continue
		}
		for _, x := range nodeExprs(&n) {
			if err := check(n.ID, "", x.field, x.src); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, list := range [][]chain.Edge{entering, leaving, outside} {
		for _, e := range list {
			if err := check("", e.ID, "condition", e.Condition); err != nil {
				return nil, nil, err
			}
		}
	}

	// Build the sub-chain.
	// the sub-run keeps the rules its nodes ran under
	sub = &chain.Chain{Name: name, Description: fmt.Sprintf("Extracted from %q.", c.Name), StrictRouting: src.StrictRouting,
		StrictConditions: src.StrictConditions, Timeout: src.Timeout, MaxConcurrency: src.MaxConcurrency}
	var sx, sy float64
	var np int
	for _, n := range src.Nodes {
		if in[n.ID] {
			sub.Nodes = append(sub.Nodes, n)
			if n.Position != nil {
				sx, sy, np = sx+n.Position.X, sy+n.Position.Y, np+1
			}
		}
	}
	sub.Edges = internal

	// Build the parent: the skill node where the exit was.
	exitNode := src.Nodes[idx[exit]]
	skill := chain.Node{ID: exit, Kind: chain.KindSkill, Name: name,
		Routing: exitNode.Routing, Dispatch: exitNode.Dispatch, Reachable: exitNode.Reachable}
	if np > 0 {
		skill.Position = &chain.Position{X: sx / float64(np), Y: sy / float64(np)}
	}
	parent = src
	nodes := make([]chain.Node, 0, len(src.Nodes)-len(sub.Nodes)+1)
	for _, n := range src.Nodes {
		switch {
		case n.ID == exit:
			nodes = append(nodes, skill)
		case !in[n.ID]:
			nodes = append(nodes, n)
		}
	}
	parent.Nodes = nodes
	edges := outside
	seen := map[feed]bool{}
	for _, e := range entering {
		f := feed{e.Source, e.Label, e.Condition, e.Default}
		if seen[f] {
			continue
		}
		seen[f] = true
		if strings.HasPrefix(e.ID, e.Source+"->"+e.Target) {
			e.ID = "" // a generated id named the old target
		}
		e.Target = exit
		edges = append(edges, e)
	}
	edges = append(edges, leaving...)
	parent.Edges = edges
	if parent.EntryNode != "" && in[parent.EntryNode] {
		parent.EntryNode = exit
	}
	// Pinned outputs go with their nodes; the skill node keeps the exit's,
	// since its output is the exit's (the sub-chain's final output).
	for id, v := range parent.PinnedOutputs {
		if !in[id] {
			continue
		}
		if sub.PinnedOutputs == nil {
			sub.PinnedOutputs = map[string]any{}
		}
		sub.PinnedOutputs[id] = v
		if id != exit {
			delete(parent.PinnedOutputs, id)
		}
	}
	if len(parent.PinnedOutputs) == 0 {
		parent.PinnedOutputs = nil
	}
	// No node has successor fields left (src is normalized, the skill node
	// is new), so Normalize only names the edges that lost their ids.
	if err := chain.Normalize(parent); err != nil {
		return nil, nil, fmt.Errorf("extract: %w", err)
	}
	return parent, sub, nil
}

// copyChain deep-copies c through its JSON form (the only form the
// document has to round-trip anyway).
func copyChain(c *chain.Chain) (*chain.Chain, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("extract: copy chain: %w", err)
	}
	var out chain.Chain
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("extract: copy chain: %w", err)
	}
	return &out, nil
}

func isOnErrorMode(s string) bool {
	switch s {
	case chain.OnErrorAbort, chain.OnErrorStop, chain.OnErrorSkip, chain.OnErrorContinue:
		return true
	}
	return false
}

func hasNode(idx map[string]int, id string) bool { _, ok := idx[id]; return ok }

func attachedSet(c *chain.Chain) map[string]bool {
	m := map[string]bool{}
	for _, n := range c.Nodes {
		if n.MapNode != "" {
			m[n.MapNode] = true
		}
		for _, b := range n.Branches {
			m[b] = true
		}
		if n.OnError != "" && !isOnErrorMode(n.OnError) {
			m[n.OnError] = true
		}
	}
	return m
}

// maxNamed is how many nodes a message names before "and N more".
const maxNamed = 5

type exprField struct{ field, src string }

// nodeExprs lists every expression a node carries, with its field path.
func nodeExprs(n *chain.Node) []exprField {
	var out []exprField
	add := func(f, s string) {
		if s != "" {
			out = append(out, exprField{f, s})
		}
	}
	add("condition", n.Condition)
	add("items_path", n.ItemsPath)
	for _, k := range slices.Sorted(maps.Keys(n.InputMap)) {
		add("input_map."+k, n.InputMap[k])
	}
	for _, k := range slices.Sorted(maps.Keys(n.SetState)) {
		add("set_state."+k, n.SetState[k])
	}
	for i, cs := range n.Cases {
		add(fmt.Sprintf("cases[%d].when", i), cs.When)
	}
	return out
}

type exprRef struct {
	ctx  string // a context name read (input, state, …)
	node string // a node read (`X.output`, `steps.X`, `node_results.X`)
}

// refsOf lists what an expression reads. An expression that does not parse
// reads nothing here; validation reports it.
func refsOf(src string) []exprRef {
	if src == "" {
		return nil
	}
	e, err := expr.Parse(src)
	if err != nil {
		return nil
	}
	var out []exprRef
	for _, r := range e.Refs() {
		switch {
		case r.Root == "steps" || r.Root == "node_results":
			if r.Field != "" {
				out = append(out, exprRef{node: r.Field})
			}
		case r.Root == "" || r.Root == "@":
		case chain.IsReserved(r.Root):
			out = append(out, exprRef{ctx: r.Root})
		default:
			out = append(out, exprRef{node: r.Root})
		}
	}
	return out
}
