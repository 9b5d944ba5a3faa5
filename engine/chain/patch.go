package chain

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Patch is a change to a chain document that names only what changed: the
// designer's autosave of a large chain sends the node it edited, not the
// whole document (docs/chain-format.md, "Patches"). Nodes are matched by
// node_id and edges by id; a changed node or edge is sent whole.
type Patch struct {
	// Chain, when present, replaces the chain's own fields (name,
	// description, entry_node, strict_*, timeout, max_concurrency, max_depth,
	// sample_input, tests, pinned_outputs, notes): a field left out is cleared. It may not
	// hold nodes or edges.
	Chain json.RawMessage `json:"chain,omitempty"`
	// Nodes replace the node with the same node_id where it is, or are
	// appended in the order given.
	Nodes       []json.RawMessage `json:"nodes,omitempty"`
	RemoveNodes []string          `json:"remove_nodes,omitempty"`
	// Edges replace the edge with the same id, or are appended; an edge in a
	// patch needs its id.
	Edges       []json.RawMessage `json:"edges,omitempty"`
	RemoveEdges []string          `json:"remove_edges,omitempty"`
	// Expect, when present, is how many nodes and edges the patched document
	// has in the sender's copy: a patch made against another document than
	// the one it is applied to is refused instead of saved.
	Expect *PatchExpect `json:"expect,omitempty"`
}

// PatchExpect is the node and edge count a patch should result in.
type PatchExpect struct {
	Nodes int `json:"nodes"`
	Edges int `json:"edges"`
}

// ApplyPatch applies the patch document data to c in place, with the checks
// Decode makes on the parts it carries (strict fields, limits, duplicate
// ids). On error c may be partly changed: apply to a copy the caller owns.
func ApplyPatch(c *Chain, data []byte, lim Limits) error {
	lim = lim.WithDefaults()
	if len(data) > lim.MaxDocumentBytes {
		return &DecodeError{Msg: fmt.Sprintf("patch is %d bytes, over the limit of %d", len(data), lim.MaxDocumentBytes)}
	}
	if !utf8.Valid(data) {
		return &DecodeError{Msg: fmt.Sprintf("patch is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(data))}
	}
	var p Patch
	if string(data) == "null" {
		return &DecodeError{Msg: "wrong type: got JSON null, want a patch object"}
	}
	if err := strictUnmarshalAt("", data, &p); err != nil {
		return err
	}
	if len(p.Chain) > 0 && string(p.Chain) != "null" {
		if err := patchChainFields(c, p.Chain, lim); err != nil {
			return err
		}
	}
	nodes, err := patchNodes(c.Nodes, &p, lim)
	if err != nil {
		return err
	}
	edges, err := patchEdges(c.Edges, &p, lim)
	if err != nil {
		return err
	}
	if len(nodes) > lim.MaxNodes {
		return &DecodeError{Path: "nodes", Msg: fmt.Sprintf("the patched chain has %d nodes, over the limit of %d", len(nodes), lim.MaxNodes)}
	}
	if len(edges) > lim.MaxEdges {
		return &DecodeError{Path: "edges", Msg: fmt.Sprintf("the patched chain has %d edges, over the limit of %d", len(edges), lim.MaxEdges)}
	}
	c.Nodes, c.Edges = nodes, edges
	// Successor fields on a patched node become edges, as on a full save.
	if err := Normalize(c); err != nil {
		return err
	}
	if e := p.Expect; e != nil && (e.Nodes != len(c.Nodes) || e.Edges != len(c.Edges)) {
		return &DecodeError{Path: "expect", Msg: fmt.Sprintf("the patched chain has %d nodes and %d edges where the patch expects %d and %d: it was made against another document",
			len(c.Nodes), len(c.Edges), e.Nodes, e.Edges)}
	}
	return nil
}

// patchChainFields replaces c's own fields with those of raw, decoded as the
// top level of a document is.
func patchChainFields(c *Chain, raw json.RawMessage, lim Limits) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return jsonError("chain", err, raw)
	}
	for _, k := range []string{"nodes", "edges"} {
		if _, ok := top[k]; ok {
			return &DecodeError{Path: "chain." + k, Msg: "a patch carries nodes and edges in its own nodes, edges, remove_nodes and remove_edges lists"}
		}
	}
	top["nodes"] = json.RawMessage("[]")
	b, err := json.Marshal(top)
	if err != nil {
		return &DecodeError{Path: "chain", Msg: err.Error()}
	}
	f, err := decodeChain(b, lim)
	if err != nil {
		if de, ok := err.(*DecodeError); ok {
			return &DecodeError{Path: joinPath("chain", de.Path), Msg: de.Msg}
		}
		return err
	}
	f.Nodes, f.Edges = c.Nodes, c.Edges
	*c = *f
	return nil
}

// removalSet checks a remove list against the ids present and returns it as a set.
func removalSet(list string, ids []string, index map[string]int, what string) (map[string]bool, error) {
	set := make(map[string]bool, len(ids))
	for i, id := range ids {
		path := fmt.Sprintf("%s[%d]", list, i)
		if set[id] {
			return nil, &DecodeError{Path: path, Msg: fmt.Sprintf("%s %q is listed twice", what, clip.String(id, 64))}
		}
		if _, ok := index[id]; !ok {
			return nil, &DecodeError{Path: path, Msg: fmt.Sprintf("no %s %q in the chain the patch applies to", what, clip.String(id, 64))}
		}
		set[id] = true
	}
	return set, nil
}

func patchNodes(nodes []Node, p *Patch, lim Limits) ([]Node, error) {
	if len(p.Nodes) > lim.MaxNodes {
		return nil, &DecodeError{Path: "nodes", Msg: fmt.Sprintf("%d nodes, over the limit of %d", len(p.Nodes), lim.MaxNodes)}
	}
	index := make(map[string]int, len(nodes))
	for i := range nodes {
		index[nodes[i].ID] = i
	}
	removed, err := removalSet("remove_nodes", p.RemoveNodes, index, "node")
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(p.Nodes))
	for i, raw := range p.Nodes {
		n, path, err := decodeNode("nodes", i, raw, lim)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[n.ID]; dup {
			return nil, &DecodeError{Path: path + ".node_id", Msg: fmt.Sprintf("duplicate node id %q (also nodes[%d])", n.ID, j)}
		}
		seen[n.ID] = i
		if removed[n.ID] {
			return nil, &DecodeError{Path: path + ".node_id", Msg: fmt.Sprintf("node %q is also in remove_nodes", n.ID)}
		}
		if at, ok := index[n.ID]; ok {
			nodes[at] = n
		} else {
			index[n.ID] = len(nodes)
			nodes = append(nodes, n)
		}
	}
	if len(removed) == 0 {
		return nodes, nil
	}
	kept := nodes[:0]
	for _, n := range nodes {
		if !removed[n.ID] {
			kept = append(kept, n)
		}
	}
	return kept, nil
}

func patchEdges(edges []Edge, p *Patch, lim Limits) ([]Edge, error) {
	if len(p.Edges) > lim.MaxEdges {
		return nil, &DecodeError{Path: "edges", Msg: fmt.Sprintf("%d edges, over the limit of %d", len(p.Edges), lim.MaxEdges)}
	}
	index := make(map[string]int, len(edges))
	for i := range edges {
		index[edges[i].ID] = i
	}
	removed, err := removalSet("remove_edges", p.RemoveEdges, index, "edge")
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(p.Edges))
	for i, raw := range p.Edges {
		e, err := decodeEdge("edges", i, raw, lim)
		if err != nil {
			return nil, err
		}
		path := fmt.Sprintf("edges[%d]", i)
		if e.ID == "" {
			return nil, &DecodeError{Path: path + ".id", Msg: "is required in a patch (edges are matched by id)"}
		}
		if j, dup := seen[e.ID]; dup {
			return nil, &DecodeError{Path: path + ".id", Msg: fmt.Sprintf("duplicate edge id %q (also edges[%d])", clip.String(e.ID, 64), j)}
		}
		seen[e.ID] = i
		if removed[e.ID] {
			return nil, &DecodeError{Path: path + ".id", Msg: fmt.Sprintf("edge %q is also in remove_edges", clip.String(e.ID, 64))}
		}
		if at, ok := index[e.ID]; ok {
			edges[at] = e
		} else {
			index[e.ID] = len(edges)
			edges = append(edges, e)
		}
	}
	if len(removed) == 0 {
		return edges, nil
	}
	kept := edges[:0]
	for _, e := range edges {
		if !removed[e.ID] {
			kept = append(kept, e)
		}
	}
	return kept, nil
}
