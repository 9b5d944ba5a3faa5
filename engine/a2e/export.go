package a2e

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/internal/jsonlit"

	"github.com/google/uuid"
)

// ExportError says why a chain cannot be expressed as an A2E chain/req:
// which node, edge or chain field uses something A2E has no words for.
type ExportError struct {
	NodeID string `json:"node_id,omitempty"`
	EdgeID string `json:"edge_id,omitempty"`
	Field  string `json:"field,omitempty"`
	Msg    string `json:"message"`
}

func (e *ExportError) Error() string {
	switch {
	case e.NodeID != "":
		return fmt.Sprintf("node %q cannot be expressed in A2E: %s", e.NodeID, e.Msg)
	case e.EdgeID != "":
		return fmt.Sprintf("edge %q cannot be expressed in A2E: %s", e.EdgeID, e.Msg)
	case e.Field != "":
		return fmt.Sprintf("chain field %s cannot be expressed in A2E: %s", e.Field, e.Msg)
	}
	return "cannot be expressed in A2E: " + e.Msg
}

// Export turns a chain into an A2E chain/req message: edges
// become next_node / true_node / false_node on their source nodes, the name
// becomes chain_id, the timeout the request timeout. It is the inverse of
// chain.Decode for every chain it accepts: Decode(json(Export(c))) has the same
// nodes and edges as c (edge ids become the automatic "source->target" ones;
// the description, which A2E has no field for, is dropped).
//
// A chain that A2E cannot express is an *ExportError naming the node, edge or
// field: condition, parallel, interrupt and agent kinds, routing "all",
// conditional, default and loop edges, a node with more than one plain
// successor (or, for a branch, more than one "true", "false" or unlabelled
// edge), an edge label on a non-branch node, and the chain-level settings
// strict_routing, strict_conditions, max_concurrency and max_depth.
//
// Studio-only node fields that the decoder reads back (label, retry, timeout,
// position, config, set_state…) are kept on the nodes, so a studio can
// re-import the file losslessly; a strict third-party host may ignore them.
func Export(c *chain.Chain) (*chain.Request, error) {
	switch {
	case c.StrictRouting:
		return nil, &ExportError{Field: "strict_routing", Msg: "A2E has no strict routing setting"}
	case c.StrictConditions:
		return nil, &ExportError{Field: "strict_conditions", Msg: "A2E has no strict conditions setting"}
	case c.MaxConcurrency != 0:
		return nil, &ExportError{Field: "max_concurrency", Msg: "A2E has no concurrency limit setting"}
	case c.MaxDepth != 0:
		return nil, &ExportError{Field: "max_depth", Msg: "A2E has no sub-chain depth setting"}
	}
	if len(c.Nodes) == 0 {
		return nil, &ExportError{Field: "nodes", Msg: "a chain/req needs at least one node"}
	}
	nodes := make([]chain.Node, len(c.Nodes))
	idx := make(map[string]int, len(c.Nodes))
	for i := range c.Nodes {
		n := c.Nodes[i]
		switch n.Kind {
		case chain.KindTool, chain.KindSkill, chain.KindProc, chain.KindBranch, chain.KindMap:
		default:
			return nil, &ExportError{NodeID: n.ID, Field: "kind", Msg: fmt.Sprintf("kind %q is not one of A2E's node kinds (tool, skill, proc, branch, map)", n.Kind)}
		}
		if n.RoutingOrDefault() == chain.RoutingAll {
			return nil, &ExportError{NodeID: n.ID, Field: "routing", Msg: `routing "all" (fire every matching edge) has no A2E equivalent`}
		}
		// Successor fields left on a node by hand are folded into edges by
		// Normalize; start from a clean slate and rebuild them from edges.
		n.NextNode, n.TrueNode, n.FalseNode = "", "", ""
		nodes[i] = n
		idx[n.ID] = i
	}
	for k := range c.Edges {
		e := &c.Edges[k]
		id := e.ID
		if id == "" {
			id = e.Source + "->" + e.Target
		}
		switch {
		case e.Condition != "":
			return nil, &ExportError{EdgeID: id, Field: "condition", Msg: "conditional edges have no A2E equivalent (use a branch node)"}
		case e.IsLoop():
			return nil, &ExportError{EdgeID: id, Field: "max_iterations", Msg: "loop edges have no A2E equivalent (A2E chains are acyclic)"}
		case e.Default:
			return nil, &ExportError{EdgeID: id, Field: "default", Msg: "default edges have no A2E equivalent"}
		}
		i, ok := idx[e.Source]
		if !ok {
			return nil, &ExportError{EdgeID: id, Field: "source", Msg: fmt.Sprintf("its source %q is not a node of the chain", e.Source)}
		}
		if _, ok := idx[e.Target]; !ok {
			return nil, &ExportError{EdgeID: id, Field: "target", Msg: fmt.Sprintf("its target %q is not a node of the chain", e.Target)}
		}
		n := &nodes[i]
		var slot *string
		var field string
		switch {
		case n.Kind == chain.KindBranch && e.Label == "true":
			slot, field = &n.TrueNode, "true_node"
		case n.Kind == chain.KindBranch && e.Label == "false":
			slot, field = &n.FalseNode, "false_node"
		case e.Label == "":
			slot, field = &n.NextNode, "next_node"
		case n.Kind == chain.KindBranch:
			return nil, &ExportError{EdgeID: id, Field: "label", Msg: fmt.Sprintf("a branch node's edges are \"true\", \"false\" or unlabelled; this one is labelled %q", e.Label)}
		default:
			return nil, &ExportError{EdgeID: id, Field: "label", Msg: fmt.Sprintf("edge labels exist in A2E only as a branch node's true/false; this edge from %s node %q is labelled %q", n.Kind, n.ID, e.Label)}
		}
		if *slot != "" {
			if field == "next_node" {
				return nil, &ExportError{NodeID: n.ID, EdgeID: id, Field: field, Msg: fmt.Sprintf("it has several unconditional successors (%q and %q); A2E has one next_node per node", *slot, e.Target)}
			}
			return nil, &ExportError{NodeID: n.ID, EdgeID: id, Field: field, Msg: fmt.Sprintf("it has two %q edges (to %q and %q); A2E has one %s", e.Label, *slot, e.Target, field)}
		}
		*slot = e.Target
	}
	raws := make([]json.RawMessage, len(nodes))
	for i := range nodes {
		b, err := jsonlit.Marshal(&nodes[i])
		if err != nil {
			return nil, &ExportError{NodeID: nodes[i].ID, Msg: "node is not JSON-safe: " + err.Error()}
		}
		raws[i] = b
	}
	req := &chain.Request{
		Type:      chain.TypeRequest,
		ID:        uuid.NewString(),
		Version:   chain.WireVersion,
		Ts:        unixSeconds(time.Now()),
		SessionID: "",
		ChainID:   c.Name,
		Nodes:     raws,
		EntryNode: c.EntryNode,
	}
	if c.Timeout > 0 {
		t := c.Timeout
		req.Timeout = &t
	}
	return req, nil
}

// unixSeconds is a time as float unix seconds, A2E's ts.
func unixSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
