package engine

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
)

// InputDescription says, in plain words, what a node will receive as its
// input. It states the rule buildInput and upstream apply (keep them in
// step): the static input merged with the resolved input_map (the map wins);
// with neither, the upstream data as is; a root that only configures its
// tool, the run's input in the tool's data field.
type InputDescription struct {
	NodeID string `json:"node_id"`
	// Summary is one sentence; Items the details, one short line each.
	Summary string   `json:"summary"`
	Items   []string `json:"items"`
	// PassesUpstream: the node gets the upstream data: as its input, in
	// an input_map entry that reads `output` whole, or (a script) by name.
	PassesUpstream bool `json:"passes_upstream"`
	// Upstream names the data the node is handed ("the run's input", "the
	// output of `fetch`", …); input_map reads it as `output`.
	Upstream string `json:"upstream"`
}

// DescribeInput describes what node nodeID of c will receive; false when c
// has no such node. reg (may be nil) tells which tools read the run's data
// themselves (Registry.SetScoped): a script sees the upstream data as
// `output` whatever its input is.
func DescribeInput(c *chain.Chain, nodeID string, reg *Registry) (*InputDescription, bool) {
	g := chain.NewGraph(c)
	i, ok := g.Idx[nodeID]
	if !ok {
		return nil, false
	}
	nd := &c.Nodes[i]
	d := &InputDescription{NodeID: nodeID, Upstream: upstreamText(g, i)}
	if nd.Kind == chain.KindBranch || nd.Kind == chain.KindCondition {
		// routers take no input of their own: they test what they receive and pass it on
		d.PassesUpstream = true
		d.Summary = "Receives " + d.Upstream + " and passes it on to the edge it chooses."
		return d, true
	}
	keys := make([]string, 0, len(nd.InputMap))
	for k := range nd.InputMap {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var mapped []string
	carrier := "" // the first key input_map fills with the upstream data whole
	for _, k := range keys {
		if carrier == "" && strings.TrimSpace(nd.InputMap[k]) == "output" {
			carrier = k
			continue
		}
		mapped = append(mapped, "input_map adds `"+k+"` from `"+strings.TrimSpace(nd.InputMap[k])+"`")
	}
	if reg != nil && nd.Kind == chain.KindTool && reg.IsScoped(nd.Name) {
		d.PassesUpstream = true
		d.Summary = "Its script reads " + d.Upstream + " as `output`, the run's input as `input` and earlier nodes' outputs as `nodes.<id>.output`; its own input fields are `params`."
		d.Items = mapped
		if carrier != "" {
			d.Items = append(d.Items, "input_map also puts "+d.Upstream+" in `params."+carrier+"`")
		}
		return d, true
	}
	if f := dataFlowOf(g, i, reg); f != "" {
		d.PassesUpstream = true
		d.Summary = "Receives its static input " + compactJSON(nd.Input) + " with " + d.Upstream + " as `" + f + "` (a root's data flows in by default)."
		d.Items = append(d.Items, "to keep to the static input, set static_only")
		return d, true
	}
	switch {
	case carrier != "":
		d.PassesUpstream = true
		d.Summary = "Receives " + d.Upstream + " as `" + carrier + "` (input_map `" + carrier + "`: `output`)"
		if len(nd.Input) > 0 {
			d.Summary += " beside its static input " + compactJSON(nd.Input)
		}
		d.Summary += "."
		d.Items = append(mapped, "to stop passing it on, remove the input_map entry `"+carrier+"`")
	case len(nd.Input) == 0 && len(nd.InputMap) == 0:
		d.PassesUpstream = true
		d.Summary = "Receives " + d.Upstream + " as is."
		if nd.Kind == chain.KindTool || nd.Kind == chain.KindProc {
			d.Items = append(d.Items, "a tool always gets an object: any other value arrives as {\"value\": …}")
		}
	case len(nd.InputMap) == 0 && nd.StaticOnly:
		d.Summary = "Receives its static input " + compactJSON(nd.Input) + " only (static_only); " + d.Upstream + " is not passed."
	case len(nd.InputMap) == 0:
		d.Summary = "Receives its static input " + compactJSON(nd.Input) + "; " + d.Upstream + " is not passed because a static input is set."
		d.Items = append(d.Items, "to pass upstream data too, add an input_map entry (its `output` is "+d.Upstream+")")
	case len(nd.Input) == 0:
		d.Summary = "Receives an object built by its input_map; " + d.Upstream + " is not passed as is (input_map reads it as `output`)."
		d.Items = mapped
	default:
		d.Summary = "Receives its static input " + compactJSON(nd.Input) + " with the input_map entries added (an entry wins over a static key of the same name); " + d.Upstream + " is not passed as is."
		d.Items = mapped
		for _, k := range keys {
			if _, dup := nd.Input[k]; dup {
				d.Items = append(d.Items, "`"+k+"` is both static and mapped: the input_map value is used")
			}
		}
	}
	return d, true
}

// upstreamText names the data a node is handed, the way upstream and the
// attached-node runners pick it.
func upstreamText(g *chain.Graph, i int) string {
	if len(g.Owners[i]) > 0 {
		a := g.Owners[i][0]
		owner := "`" + g.C.Nodes[a.Owner].ID + "`"
		switch a.Rel {
		case chain.RelMapBody:
			return "one item of " + owner + "'s list at a time (also `item` and `index`)"
		case chain.RelBranch:
			return "the input of parallel node " + owner
		case chain.RelHandler:
			return "the data of " + owner + " when it fails (the failure is in `error`)"
		}
	}
	var srcs []string
	add := func(ei int) {
		s := "`" + g.C.Edges[ei].Source + "`"
		if !slices.Contains(srcs, s) {
			srcs = append(srcs, s)
		}
	}
	for _, ei := range g.In[i] {
		add(ei)
	}
	loops := len(srcs)
	for _, ei := range g.LoopIn[i] {
		add(ei)
	}
	switch {
	case len(srcs) == 0:
		return "the run's input"
	case len(srcs) == 1 && loops == 1:
		return "the output of " + srcs[0]
	case len(srcs) == 1:
		return "the run's input on the first pass, then the output of " + srcs[0]
	case loops == 0:
		return "the run's input on the first pass, then the output of " + strings.Join(srcs, " or ")
	}
	return "the output of the node whose edge fired (" + strings.Join(srcs, " or ") + "; when several fire together, an object keyed by their node ids)"
}

// dataFlowOf is the field node i's tool gets the run's input in by default
// (chain.Graph.DataFlowField), "" without a registry that knows its schema.
func dataFlowOf(g *chain.Graph, i int, reg *Registry) string {
	nd := &g.C.Nodes[i]
	if reg == nil || nd.Kind != chain.KindTool {
		return ""
	}
	schema, _ := reg.InputSchema(nd.Name)
	return g.DataFlowField(i, schema)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "{…}"
	}
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…}"
	}
	return string(b)
}
