package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/google/uuid"
)

// Re-running on another version of a run's chain: which
// upstream outputs still hold. docs/design.md ("Re-run on another
// version: what is reused") states the rule.

// RerunOn is RerunFrom on another version of the run's chain, compiled by
// the caller (nil: the run's own, checked with Options.Compile). Upstream
// of fromNode, a node keeps its earlier output only when it is unchanged
// (see unchangedUpstream); every other node runs again.
func (e *Engine) RerunOn(ctx context.Context, runID, fromNode string, version *chain.Plan, input map[string]any, opts RunOptions) (*Result, error) {
	log, err := e.opts.Checkpointer.Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	start, _ := inspectLog(log)
	if start == nil {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log has no start entry"}
	}
	p := version
	if p == nil {
		if p, err = e.compile(ctx, start.Chain); err != nil {
			return nil, err
		}
	}
	var other *chain.Chain // the chosen version's chain
	if version != nil {
		other = version.Chain()
	}
	from, ok := p.Graph().Idx[fromNode]
	if !ok {
		msg := fmt.Sprintf("node %q is not in the run's chain", fromNode)
		if other != nil {
			msg = fmt.Sprintf("node %q is not in the chosen version of the chain", fromNode)
		}
		return nil, &ChainCheckpointError{RunID: runID, Msg: msg}
	}
	keep := ancestors(p.Graph(), from)
	if other != nil && start.Chain != nil {
		keep = unchangedUpstream(start.Chain, p.Graph(), keep)
	}
	reuse := map[string]*NodeRecord{}
	for k := range log {
		if n := log[k].Node; log[k].Kind == CheckpointNode && n.Status == PhaseDone {
			if i, ok := p.Graph().Idx[n.NodeID]; ok && keep[i] {
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
	opts.UsePins = opts.UsePins || start.UsesPins // a re-run runs as the run did
	return e.Run(ctx, p, input, opts)
}

// unchangedUpstream narrows keep (the nodes upstream of a re-run's start,
// in the new chain g) to those whose earlier output still holds: a node is
// kept when it is in the old chain with the same definition (everything
// but its label, description and position), the same incoming edges, and
// every node it takes data from (its edges' sources, the nodes its
// expressions read, the node it runs inside) is kept too. A map or
// parallel node is kept only when the nodes inside it are unchanged too.
func unchangedUpstream(old *chain.Chain, g *chain.Graph, keep []bool) []bool {
	og := chain.NewGraph(old)
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
			for _, ei := range g.In[i] {
				producers = append(producers, g.Idx[g.C.Edges[ei].Source])
			}
			producers = append(producers, subtreeReads(g, i, true)...)
			for _, a := range g.Owners[i] {
				producers = append(producers, a.Owner)
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
func sameNodeIn(old *chain.Chain, og, g *chain.Graph, i int) bool {
	id := g.C.Nodes[i].ID
	j, ok := og.Idx[id]
	if !ok {
		return false
	}
	strip := func(n chain.Node) string {
		n.Label, n.Description, n.Position = "", "", nil
		b, _ := json.Marshal(n)
		return string(b)
	}
	if strip(old.Nodes[j]) != strip(g.C.Nodes[i]) {
		return false
	}
	edges := func(c *chain.Chain, in []int) []string {
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
	return slices.Equal(edges(old, og.In[j]), edges(g.C, g.In[i]))
}
