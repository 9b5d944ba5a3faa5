package agent

import (
	"reflect"
	"testing"
)

// TestInputSchemaDerived: an agent node's form offers what the agent reads:
// query, context and session_id, less what a tool: agent's static input
// fixes; a model agent without a prompt needs a query.
func TestInputSchemaDerived(t *testing.T) {
	set := mustSet(t, "http://127.0.0.1:1/v1",
		"name: bare\ndescription: Answers.\nmodel: {url: '%URL%', name: m}\n",
		"name: prompted\nmodel: {url: '%URL%', name: m}\nprompt: 'Reply to {{ query }}'\n",
		"name: fixed\ntool: echo\ninput: {query: always, extra: 1}\n",
	)
	for _, tc := range []struct {
		agent    string
		props    []string
		required []any
	}{
		{"bare", []string{"query", "context", "session_id"}, []any{"query"}},
		{"prompted", []string{"query", "context", "session_id"}, nil},
		{"fixed", []string{"context", "session_id"}, nil},
	} {
		in, cfg := set.Schemas(tc.agent)
		if in == nil || cfg == nil {
			t.Fatalf("%s: no schemas", tc.agent)
		}
		var order []string
		for _, k := range in["x-order"].([]any) {
			order = append(order, k.(string))
		}
		if !reflect.DeepEqual(order, tc.props) || len(in["properties"].(map[string]any)) != len(tc.props) {
			t.Errorf("%s: fields %v, want %v", tc.agent, order, tc.props)
		}
		req, _ := in["required"].([]any)
		if !reflect.DeepEqual(req, tc.required) {
			t.Errorf("%s: required %v, want %v", tc.agent, req, tc.required)
		}
	}
	if in, _ := set.Schemas("bare"); in["description"] != "Answers." {
		t.Errorf("description %v", in["description"])
	}
	if in, cfg := set.Schemas("missing"); in != nil || cfg != nil {
		t.Errorf("an unknown agent has schemas")
	}
	var none *Set
	if in, _ := none.Schemas("bare"); in != nil {
		t.Errorf("a nil set has schemas")
	}
}
