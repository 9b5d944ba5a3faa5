package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
)

// Re-running on another version of a run's chain: which
// upstream outputs still hold. docs/design.md ("Re-run on another
// version: what is reused") states the rule.

// RerunOn is RerunFrom on another version of the run's chain (chain nil:
// the run's own). Upstream of fromNode, a node keeps its earlier output
// only when it is unchanged (see unchangedUpstream); every other node runs
// again.
func (e *Engine) RerunOn(ctx context.Context, runID, fromNode string, chain *Chain, input map[string]any, opts RunOptions) (*Result, error) {
	log, err := e.opts.Checkpointer.Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	start, _ := inspectLog(log)
	if start == nil {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log has no start entry"}
	}
	target := start.Chain
	if chain != nil {
		target = chain
	}
	p := e.Prepare(ctx, target)
	from, ok := p.g.idx[fromNode]
	if !ok {
		msg := fmt.Sprintf("node %q is not in the run's chain", fromNode)
		if chain != nil {
			msg = fmt.Sprintf("node %q is not in the chosen version of the chain", fromNode)
		}
		return nil, &ChainCheckpointError{RunID: runID, Msg: msg}
	}
	keep := ancestors(p.g, from)
	if chain != nil && start.Chain != nil {
		keep = unchangedUpstream(start.Chain, p.g, keep)
	}
	reuse := map[string]*NodeRecord{}
	for k := range log {
		if n := log[k].Node; log[k].Kind == CheckpointNode && n.Status == PhaseDone {
			if i, ok := p.g.idx[n.NodeID]; ok && keep[i] {
				reuse[n.NodeID] = n
			}
		}
	}
	if input == nil {
		input = start.Input
	}
	if opts.RunID == "" {
		opts.RunID = uuid.NewString()
	}
	if opts.ParentRunID == "" {
		opts.ParentRunID = runID
	}
	opts.reuse = reuse
	opts.rerunFrom = fromNode
	return e.RunPrepared(ctx, p, input, opts)
}

// unchangedUpstream narrows keep (the nodes upstream of a re-run's start,
// in the new chain g) to those whose earlier output still holds: a node is
// kept when it is in the old chain with the same definition (everything
// but its label, description and position), the same incoming edges, and
// every node it takes data from (its edges' sources, the nodes its
// expressions read, the node it runs inside) is kept too. A map or
// parallel node is kept only when the nodes inside it are unchanged too.
func unchangedUpstream(old *Chain, g *graph, keep []bool) []bool {
	og := newGraph(old)
	out := make([]bool, len(keep))
	const (
		unknown = iota
		visiting
		decided
	)
	state := make([]int, len(keep))
	var kept func(i int) bool
	kept = func(i int) bool {
		switch state[i] {
		case visiting: // a cycle through data reads: not provably unchanged
			return false
		case decided:
			return out[i]
		}
		state[i] = visiting
		// A map or parallel node's output is made by the nodes inside it:
		// they must be unchanged too, and what they read is its input.
		tree := attachedTree(g, i, true)
		ok := keep[i]
		for j := range tree {
			ok = ok && sameNodeIn(old, og, g, j)
		}
		if ok {
			var producers []int
			for _, ei := range g.in[i] {
				producers = append(producers, g.idx[g.c.Edges[ei].Source])
			}
			producers = append(producers, subtreeReads(g, i, true)...)
			for _, a := range g.owners[i] {
				producers = append(producers, a.owner)
			}
			for _, p := range producers {
				if !kept(p) {
					ok = false
					break
				}
			}
		}
		state[i], out[i] = decided, ok
		return ok
	}
	for i := range keep {
		kept(i)
	}
	return out
}

// sameNodeIn reports whether node i of g is defined as in the old chain,
// incoming edges included.
func sameNodeIn(old *Chain, og, g *graph, i int) bool {
	id := g.c.Nodes[i].ID
	j, ok := og.idx[id]
	if !ok {
		return false
	}
	strip := func(n Node) string {
		n.Label, n.Description, n.Position = "", "", nil
		b, _ := json.Marshal(n)
		return string(b)
	}
	if strip(old.Nodes[j]) != strip(g.c.Nodes[i]) {
		return false
	}
	edges := func(c *Chain, in []int) []string {
		out := make([]string, 0, len(in))
		for _, ei := range in {
			e := c.Edges[ei]
			e.ID = "" // ids are the designer's; what the edge does is the rest
			b, _ := json.Marshal(e)
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(edges(old, og.in[j]), edges(g.c, g.in[i]))
}
