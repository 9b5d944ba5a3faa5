package chain_test

import (
	"fmt"

	"github.com/chainstudio/studio/engine/chain"
)

// Validate reports every issue of a chain at once, each naming its node or
// edge, field and rule; errors come first.
func ExampleValidate() {
	doc, err := chain.Decode([]byte(`{"name": "broken", "nodes": [
	  {"node_id": "a", "kind": "tool", "name": "echo", "input_map": {"x": "input.x >"}},
	  {"node_id": "b", "kind": "tool", "name": "echo"}],
	 "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "c"}]}`), chain.Limits{})
	if err != nil {
		fmt.Println("decode:", err)
		return
	}
	for _, is := range chain.Validate(doc) {
		fmt.Println(is.Severity, is)
	}
	// Output:
	// error node "a" input_map.x: node "a": input_map.x does not parse: Incomplete expression (at line 1, column 10) [expression_syntax]
	// error edge "b->c" target: edge "b->c" (b -> c): its target "c" is not a node [dangling_edge]
}

// Decode is strict: a key the format does not have is an error naming where
// it is, never silently dropped.
func ExampleDecode() {
	_, err := chain.Decode([]byte(`{"name": "typo", "nodes": [
	  {"node_id": "a", "kind": "tool", "nmae": "echo"}]}`), chain.Limits{})
	fmt.Println(err)
	// Output:
	// nodes[0] "a".nmae: unknown field
}
