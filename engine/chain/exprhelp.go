package chain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/expr"
)

// What the expression editor needs from the engine: the names an
// expression field can read, the nodes upstream of it, and "did you mean"
// for a name that resolves to nothing.

// ExprField is the context one expression field is evaluated in.
type ExprField struct {
	// Names are the context names the engine resolves at this field, in
	// the order completion offers them.
	Names []string `json:"names"`
	// Upstream are the node ids that can run before this field is
	// evaluated (edges and attachments followed backwards), sorted.
	Upstream []string `json:"upstream"`
	// OutputOf says whose data `output` is here: the node's own output
	// (conditions, cases, set_state; an edge's source), or its input
	// (input_map, items_path), which is the output of the node(s) in From.
	OutputOf string   `json:"output_of"` // "self" or "input"
	From     []string `json:"from,omitempty"`
}

// ExprFieldContext describes the expression field field of node nodeID (or,
// when edgeID is set, of that edge: field "condition"). field is one of
// condition, items_path, cases[N].when, input_map.KEY, set_state.KEY.
func ExprFieldContext(c *Chain, nodeID, edgeID, field string) (*ExprField, error) {
	g := fieldGraph(c)
	base := []string{"input", "state", "node_results", "trigger"}
	if edgeID != "" {
		for k := range c.Edges {
			e := &c.Edges[k]
			if e.ID != edgeID && fmt.Sprintf("%s->%s", e.Source, e.Target) != edgeID {
				continue
			}
			if field != "condition" {
				return nil, fmt.Errorf("edge %q has no expression field %q (only condition)", edgeID, field)
			}
			i, ok := g.idx[e.Source]
			if !ok {
				return nil, fmt.Errorf("edge %q: its source %q is not a node", edgeID, e.Source)
			}
			names := append([]string{"output"}, base...)
			if c.Nodes[i].Dispatch == "sequential" {
				names = append(names, "steps", "when")
			}
			up := append(upstream(c, g, i), e.Source)
			sort.Strings(up)
			return &ExprField{Names: names, Upstream: up, OutputOf: "self", From: []string{e.Source}}, nil
		}
		return nil, fmt.Errorf("there is no edge %q", edgeID)
	}
	i, ok := g.idx[nodeID]
	if !ok {
		return nil, fmt.Errorf("there is no node %q", nodeID)
	}
	nd := &c.Nodes[i]
	f := &ExprField{Upstream: upstream(c, g, i), OutputOf: "self", From: []string{nodeID}}
	switch {
	case field == "condition" && nd.Kind == KindBranch,
		strings.HasPrefix(field, "cases[") && strings.HasSuffix(field, "].when") && nd.Kind == KindCondition,
		strings.HasPrefix(field, "set_state.") && len(field) > len("set_state."):
		f.Names = append([]string{"output"}, base...)
	case field == "items_path" && nd.Kind == KindMap:
		f.Names = append([]string{"output"}, base...)
		f.OutputOf, f.From = "input", sources(c, g, i)
	case strings.HasPrefix(field, "input_map.") && len(field) > len("input_map."):
		f.Names = append([]string{"output"}, base...)
		f.OutputOf, f.From = "input", sources(c, g, i)
		f.Names = append(f.Names, "steps", "when")
		for _, a := range g.owners[i] {
			switch a.Rel {
			case RelMapBody:
				f.Names = append(f.Names, "item", "index")
			case RelHandler:
				f.Names = append(f.Names, "error")
			}
		}
		if nd.Kind == KindInterrupt {
			f.Names = append(f.Names, "resume")
		}
	default:
		return nil, fmt.Errorf("node %q (%s) has no expression field %q", nodeID, nd.Kind, field)
	}
	return f, nil
}

// exprGraph is the part of the graph field context needs: ids and
// attachments, without parsing every expression of the chain (newGraph's
// cost, paid on every keystroke of a preview otherwise).
type exprGraph struct {
	idx    map[string]int
	owners [][]Attachment
}

func fieldGraph(c *Chain) *exprGraph {
	idx := nodeIndex(c)
	return &exprGraph{idx: idx, owners: attachments(c, idx)}
}

// maxUpstream bounds the upstream list a field reports.
const maxUpstream = 2000

// upstream lists the nodes that can run before node i: the sources of its
// edges (loop edges too: they fed an earlier pass) and the owners it is
// attached to, transitively.
func upstream(c *Chain, g *exprGraph, i int) []string {
	into := make([][]int, len(c.Nodes))
	for k := range c.Edges {
		s, ok1 := g.idx[c.Edges[k].Source]
		t, ok2 := g.idx[c.Edges[k].Target]
		if ok1 && ok2 {
			into[t] = append(into[t], s)
		}
	}
	for j := range g.owners {
		for _, a := range g.owners[j] {
			into[j] = append(into[j], a.Owner)
		}
	}
	seen := make([]bool, len(c.Nodes))
	seen[i] = true
	queue := []int{i}
	var out []string
	for len(queue) > 0 && len(out) < maxUpstream {
		u := queue[0]
		queue = queue[1:]
		for _, s := range into[u] {
			if !seen[s] {
				seen[s] = true
				out = append(out, c.Nodes[s].ID)
				queue = append(queue, s)
			}
		}
	}
	sort.Strings(out)
	return out
}

// sources are the nodes whose edges activate node i: its `output` in
// input_map is their output (one source), or an object keyed by their ids.
func sources(c *Chain, g *exprGraph, i int) []string {
	var out []string
	seen := map[string]bool{}
	for k := range c.Edges {
		e := &c.Edges[k]
		if e.Target == c.Nodes[i].ID && !seen[e.Source] {
			if _, ok := g.idx[e.Source]; ok {
				seen[e.Source] = true
				out = append(out, e.Source)
			}
		}
	}
	return out
}

// SuggestName is the context name or node id of c closest to name (a
// likely typo), or "".
func SuggestName(c *Chain, name string) string {
	cands := make([]string, 0, len(ReservedNames)+len(c.Nodes))
	cands = append(cands, ReservedNames...)
	for i := range c.Nodes {
		cands = append(cands, c.Nodes[i].ID)
	}
	return expr.Suggest(name, cands)
}
