package chain

import "fmt"

// Normalize turns A2E successor fields (next_node, true_node, false_node) into
// edges and gives every edge an id. true_node/false_node become edges labelled
// "true"/"false". An edge that already exists is not added twice. Normalize is
// idempotent; engine/a2e's Export turns the edges back into successor fields.
func Normalize(c *Chain) error {
	type key struct{ src, dst, label string }
	have := make(map[key]bool, len(c.Edges))
	for _, e := range c.Edges {
		if e.Condition == "" {
			have[key{e.Source, e.Target, e.Label}] = true
		}
	}
	add := func(src, dst, label string) {
		k := key{src, dst, label}
		if dst == "" || have[k] {
			return
		}
		have[k] = true
		c.Edges = append(c.Edges, Edge{Source: src, Target: dst, Label: label})
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		add(n.ID, n.NextNode, "")
		add(n.ID, n.TrueNode, "true")
		add(n.ID, n.FalseNode, "false")
		n.NextNode, n.TrueNode, n.FalseNode = "", "", ""
	}
	return assignEdgeIDs(c)
}

// assignEdgeIDs names unnamed edges "source->target" ("#2", "#3" for
// parallel edges) and refuses duplicate explicit ids.
func assignEdgeIDs(c *Chain) error {
	used := make(map[string]int, len(c.Edges))
	for i, e := range c.Edges {
		if e.ID == "" {
			continue
		}
		if j, dup := used[e.ID]; dup {
			return &DecodeError{Path: fmt.Sprintf("edges[%d].id", i), Rule: DecodeDuplicateID, Msg: fmt.Sprintf("duplicate edge id %q (also edges[%d])", e.ID, j)}
		}
		used[e.ID] = i
	}
	for i := range c.Edges {
		e := &c.Edges[i]
		if e.ID != "" {
			continue
		}
		base := e.Source + "->" + e.Target
		id := base
		for n := 2; ; n++ {
			if _, taken := used[id]; !taken {
				break
			}
			id = fmt.Sprintf("%s#%d", base, n)
		}
		e.ID = id
		used[id] = i
	}
	return nil
}
