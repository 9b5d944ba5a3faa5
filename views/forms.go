package views

import (
	"encoding/json"

	"github.com/chainstudio/studio/engine/chain"
)

// formSource is the id of the select a node's input form follows ("": the
// node's kind has no schema, its input stays key/value rows).
func formSource(k chain.Kind) string {
	switch k {
	case chain.KindTool:
		return "tool-select"
	case chain.KindAgent:
		return "agent-select"
	}
	return ""
}

// selectedSchema is the input schema of the node's tool or agent, as JSON.
func selectedSchema(n chain.Node, pc PropsCtx) string {
	opts := pc.Tools
	if n.Kind == chain.KindAgent {
		opts = pc.Agents
	}
	for _, t := range opts {
		if t.Name == n.Name {
			return t.Schema
		}
	}
	return ""
}

func inputJSON(n *chain.Node) string {
	if len(n.Input) == 0 {
		return "{}"
	}
	b, err := json.Marshal(n.Input)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// SchemaJSON renders a schema for a data-schema attribute ("" for none).
func SchemaJSON(s map[string]any) string {
	if s == nil {
		return ""
	}
	b, err := json.Marshal(s)
	if err != nil {
		return ""
	}
	return string(b)
}
