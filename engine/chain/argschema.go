package chain

// ArgumentSchema is the JSON Schema of the input a caller that sees the
// chain as a tool (an agent, an MCP client) is offered: an object with one
// property per key of the chain's sample_input, typed by the sample's
// value, none required (a chain reads what it needs and its nodes say what
// is missing). A chain without a sample input takes any object.
func (c *Chain) ArgumentSchema() map[string]any {
	props := map[string]any{}
	for k, v := range c.SampleInput {
		props[k] = sampleSchema(v, 0)
	}
	return map[string]any{"type": "object", "properties": props}
}

// sampleSchema types one sample value; nested objects and lists are typed
// a few levels down, then left open.
func sampleSchema(v any, depth int) map[string]any {
	switch x := v.(type) {
	case string:
		return map[string]any{"type": "string"}
	case bool:
		return map[string]any{"type": "boolean"}
	case float64, float32, int, int64, int32:
		return map[string]any{"type": "number"}
	case []any:
		s := map[string]any{"type": "array"}
		if len(x) > 0 && depth < 3 {
			s["items"] = sampleSchema(x[0], depth+1)
		}
		return s
	case map[string]any:
		s := map[string]any{"type": "object"}
		if depth < 3 {
			props := map[string]any{}
			for k, e := range x {
				props[k] = sampleSchema(e, depth+1)
			}
			s["properties"] = props
		}
		return s
	}
	return map[string]any{}
}
