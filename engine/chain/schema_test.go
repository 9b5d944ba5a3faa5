package chain

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func compileChainSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	sch, err := c.Compile(filepath.Join("..", "..", "docs", "chain.schema.json"))
	if err != nil {
		t.Fatalf("compile docs/chain.schema.json: %v", err)
	}
	return sch
}

func schemaValidate(t *testing.T, sch *jsonschema.Schema, doc []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("instance is not JSON: %v", err)
	}
	return sch.Validate(inst)
}

func TestSchemaAcceptsExamples(t *testing.T) {
	t.Parallel()
	sch := compileChainSchema(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemaValidate(t, sch, b); err != nil {
				t.Fatalf("schema rejects the example: %v", err)
			}
			if _, err := Decode(b, Limits{}); err != nil {
				t.Fatalf("Decode rejects the example: %v", err)
			}
		})
	}
}

// TestSchemaAndDecodeAgree keeps docs/chain.schema.json and the decoder in
// step: each document is accepted by both or rejected by both.
func TestSchemaAndDecodeAgree(t *testing.T) {
	t.Parallel()
	sch := compileChainSchema(t)
	valid := map[string]string{
		"A2E chain/req example": a2eLinearRequest,
		"minimal chain/req":     `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool"}]}`,
		"empty chain":           `{"nodes":[]}`,
		"every field": `{"name":"n","description":"d","entry_node":"a","strict_routing":true,"strict_conditions":true,"timeout":1.5,"max_concurrency":2,"max_depth":3,
			"nodes":[{"node_id":"a","kind":"condition","name":"x","input":{"k":[1]},"input_map":{"k":"input.k"},"condition":"c","true_node":"b","false_node":"b","items_path":"p","map_node":"b","next_node":"b",
			"on_error":"skip","label":"L","description":"D","timeout":2,"retry":{"max_attempts":3,"backoff":"exponential","initial_delay_seconds":0.5},"routing":"all","dispatch":"sequential",
			"set_state":{"s":"output"},"cases":[{"handle":"h","when":"true"}],"branches":["b"],"parallel_failure_mode":"fail_fast","reachable":false,"position":{"x":1,"y":-2},"config":{"c":1}},
			{"node_id":"b","kind":"agent"}],
			"edges":[{"id":"e1","source":"a","target":"b","label":"h","condition":"x","default":true,"max_iterations":2,"on_max_reached":"continue"}]}`,
	}
	for _, k := range Kinds {
		valid["kind "+string(k)] = `{"nodes":[{"node_id":"a","kind":"` + string(k) + `"}]}`
	}
	invalid := map[string]string{
		"unknown top-level field":   `{"nodes":[],"nodez":[]}`,
		"unknown node field":        `{"nodes":[{"node_id":"a","kind":"tool","colour":"red"}]}`,
		"node field in wrong case":  `{"nodes":[{"node_id":"a","Kind":"tool"}]}`,
		"unknown edge field":        `{"nodes":[],"edges":[{"source":"a","target":"b","weight":1}]}`,
		"unknown retry field":       `{"nodes":[{"node_id":"a","kind":"tool","retry":{"max_attempts":1,"jitter":1}}]}`,
		"unknown request field":     `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool"}],"edges":[]}`,
		"bad kind":                  `{"nodes":[{"node_id":"a","kind":"lambda"}]}`,
		"missing node_id":           `{"nodes":[{"kind":"tool"}]}`,
		"empty node_id":             `{"nodes":[{"node_id":"","kind":"tool"}]}`,
		"missing kind":              `{"nodes":[{"node_id":"a"}]}`,
		"missing nodes":             `{"name":"x"}`,
		"reserved node id":          `{"nodes":[{"node_id":"state","kind":"tool"}]}`,
		"control char in node id":   `{"nodes":[{"node_id":"a\u0007","kind":"tool"}]}`,
		"node id too long":          `{"nodes":[{"node_id":"` + strings.Repeat("x", 257) + `","kind":"tool"}]}`,
		"edge missing target":       `{"nodes":[],"edges":[{"source":"a"}]}`,
		"case missing when":         `{"nodes":[{"node_id":"a","kind":"condition","cases":[{"handle":"h"}]}]}`,
		"retry without max":         `{"nodes":[{"node_id":"a","kind":"tool","retry":{"backoff":"fixed"}}]}`,
		"retry max 0":               `{"nodes":[{"node_id":"a","kind":"tool","retry":{"max_attempts":0}}]}`,
		"bad backoff":               `{"nodes":[{"node_id":"a","kind":"tool","retry":{"max_attempts":2,"backoff":"linear"}}]}`,
		"bad routing":               `{"nodes":[{"node_id":"a","kind":"tool","routing":"any"}]}`,
		"bad dispatch":              `{"nodes":[{"node_id":"a","kind":"tool","dispatch":"serial"}]}`,
		"bad failure mode":          `{"nodes":[{"node_id":"a","kind":"parallel","parallel_failure_mode":"all"}]}`,
		"bad on_max_reached":        `{"nodes":[],"edges":[{"source":"a","target":"a","max_iterations":2,"on_max_reached":"stop"}]}`,
		"negative timeout":          `{"timeout":-1,"nodes":[]}`,
		"negative node timeout":     `{"nodes":[{"node_id":"a","kind":"tool","timeout":-1}]}`,
		"wrong type":                `{"nodes":[{"node_id":"a","kind":"tool","retry":{"max_attempts":"3"}}]}`,
		"input_map not strings":     `{"nodes":[{"node_id":"a","kind":"tool","input_map":{"k":1}}]}`,
		"input not object":          `{"nodes":[{"node_id":"a","kind":"tool","input":"x"}]}`,
		"request with other type":   `{"type":"chain/resp","nodes":[{"node_id":"a","kind":"tool"}]}`,
		"request with version 2":    `{"type":"chain/req","version":"2.0","nodes":[{"node_id":"a","kind":"tool"}]}`,
		"request without nodes":     `{"type":"chain/req","nodes":[]}`,
		"request with bad node":     `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool","x":1}]}`,
		"top-level array":           `[]`,
		"expression over the limit": `{"nodes":[{"node_id":"a","kind":"branch","condition":"` + strings.Repeat("x", 16<<10+1) + `"}]}`,
	}
	for name, d := range valid {
		t.Run("valid/"+name, func(t *testing.T) {
			if err := schemaValidate(t, sch, []byte(d)); err != nil {
				t.Errorf("schema rejects it: %v", err)
			}
			if _, err := Decode([]byte(d), Limits{}); err != nil {
				t.Errorf("Decode rejects it: %v", err)
			}
		})
	}
	for name, d := range invalid {
		t.Run("invalid/"+name, func(t *testing.T) {
			if err := schemaValidate(t, sch, []byte(d)); err == nil {
				t.Errorf("schema accepts it")
			}
			if _, err := Decode([]byte(d), Limits{}); err == nil {
				t.Errorf("Decode accepts it")
			}
		})
	}
}

// TestSchemaCoversModel fails when a JSON field is added to the model
// without being described in the schema.
func TestSchemaCoversModel(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "chain.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defs := inst.(map[string]any)["$defs"].(map[string]any)
	for def, v := range map[string]any{"chain": Chain{}, "request": Request{}, "node": Node{}, "edge": Edge{}, "retry": Retry{}, "case": Case{}, "position": Position{}} {
		props := defs[def].(map[string]any)["properties"].(map[string]any)
		fields := jsonFields(reflect.TypeOf(v))
		for name := range fields {
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("$defs/%s has no property %q", def, name)
				continue
			}
			if d, _ := p["description"].(string); d == "" || strings.Contains(d, "\n") {
				t.Errorf("$defs/%s/%s needs a one-line description", def, name)
			}
		}
		for name := range props {
			if _, ok := fields[name]; !ok {
				t.Errorf("$defs/%s has property %q the decoder does not know", def, name)
			}
		}
	}
	kinds := defs["node"].(map[string]any)["properties"].(map[string]any)["kind"].(map[string]any)["enum"].([]any)
	if len(kinds) != len(Kinds) {
		t.Errorf("schema lists %d kinds, the engine %d", len(kinds), len(Kinds))
	}
	reserved := defs["nodeId"].(map[string]any)["not"].(map[string]any)["enum"].([]any)
	if len(reserved) != len(ReservedNames) {
		t.Errorf("schema reserves %d names, the engine %d", len(reserved), len(ReservedNames))
	}
}
