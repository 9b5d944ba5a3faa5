package chain

// Data flows by default (docs/chain-format.md, "Input a node receives"): a
// node with neither input nor input_map receives its upstream data as is,
// and a root node (one no edge feeds) whose static input only configures
// its tool receives the run's input in the tool's data field, so a first
// `transform` with the expression `name` reads the run's `name`. The rule
// is narrow on purpose: it never replaces a value the document gives, and
// a static input that carries data of its own (keys the tool does not
// name) is that data, as before.

// DataFieldKeyword is the input-schema keyword naming the field that carries
// the data a tool works on (transform's, template's and delay's `data`).
// engine/builtin writes it; the designer reads it too.
const DataFieldKeyword = "x-data-field"

// DataFlowField is the field of node i's tool input that receives the
// run's input by default, or "" when the rule does not apply. inputSchema is
// the tool's input schema (nil: unknown, so the rule does not apply). It
// applies to a tool node that
//   - no non-loop edge feeds and no owner invokes (a root; on a later pass
//     through a loop edge the field gets that pass's upstream data),
//   - has a static input and no input_map,
//   - whose tool's schema names a data field that the static input does not
//     set, and every other static key is a field the schema names,
//   - and does not set static_only.
func (g *Graph) DataFlowField(i int, inputSchema map[string]any) string {
	if g.C.Nodes[i].StaticOnly {
		return ""
	}
	return g.dataFlowField(i, inputSchema)
}

// dataFlowField is DataFlowField whatever static_only says (validation
// tells when static_only changes nothing).
func (g *Graph) dataFlowField(i int, inputSchema map[string]any) string {
	nd := &g.C.Nodes[i]
	if nd.Kind != KindTool || len(nd.Input) == 0 || len(nd.InputMap) > 0 || g.Attached(i) || len(g.In[i]) > 0 {
		return ""
	}
	field, _ := inputSchema[DataFieldKeyword].(string)
	if field == "" {
		return ""
	}
	props, _ := inputSchema["properties"].(map[string]any)
	for k := range nd.Input {
		if _, own := props[k]; k == field || !own {
			return ""
		}
	}
	return field
}
