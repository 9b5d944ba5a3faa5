// Package enginetest holds test helpers shared by the engine's tests and
// the tests of the packages above it (the cluster tests run the same random
// chains through real worker processes).
package enginetest

import (
	"fmt"
	"math/rand/v2"

	"github.com/chainstudio/studio/engine/chain"
)

// RandomChain builds a random routing "all" graph: every node reachable by
// an unconditional edge from an earlier one, plus guarded edges and
// defaults. With failures, some nodes run the "fail" tool under a random
// on_error policy (continue, skip or abort); without, the sequence of random
// numbers drawn is unchanged, so fixed seeds keep their chains. Every tool
// it uses is built in (echo, fail), so a studio process runs it as is.
func RandomChain(rng *rand.Rand, failures bool) *chain.Chain {
	n := 3 + rng.IntN(9)
	c := &chain.Chain{Name: "random", EntryNode: "n0"}
	for i := 0; i < n; i++ {
		nd := chain.Node{ID: fmt.Sprintf("n%d", i), Kind: chain.KindTool, Name: "echo",
			Routing: chain.RoutingAll, Input: map[string]any{"v": float64(rng.IntN(10))}}
		if failures && i > 0 && rng.IntN(4) == 0 {
			nd.Name, nd.OnError = "fail", []string{chain.OnErrorContinue, chain.OnErrorSkip, chain.OnErrorAbort}[rng.IntN(3)]
		}
		c.Nodes = append(c.Nodes, nd)
	}
	for j := 1; j < n; j++ {
		// an unconditional edge from an earlier node keeps every node reachable
		c.Edges = append(c.Edges, chain.Edge{ID: fmt.Sprintf("u%d", j), Source: fmt.Sprintf("n%d", rng.IntN(j)), Target: fmt.Sprintf("n%d", j)})
	}
	for i := 0; i < n-1; i++ {
		hasDefault := false
		for e := 0; e < rng.IntN(3); e++ {
			j := i + 1 + rng.IntN(n-i-1)
			edge := chain.Edge{ID: fmt.Sprintf("e%d_%d_%d", i, j, e), Source: fmt.Sprintf("n%d", i), Target: fmt.Sprintf("n%d", j)}
			if !hasDefault && rng.IntN(2) == 0 {
				edge.Default, hasDefault = true, true
			} else {
				edge.Condition = fmt.Sprintf("{{ output.v > %d }}", rng.IntN(10))
			}
			c.Edges = append(c.Edges, edge)
		}
	}
	return c
}
