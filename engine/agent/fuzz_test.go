package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzParse: an agent file never panics the loader, never takes long (no
// alias expansion, bounded nesting), and an agent it accepts is checked: a
// valid name, exactly one of model, tool or chain.
//
//	go test ./engine/agent -run '^$' -fuzz '^FuzzParse$' -fuzztime 3m
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/agents/*.agent.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"name: a\ntool: echo\n",
		"name: a\nmodel: {url: http://x, name: m}\nspec:\n  output_schema: {score: {type: number}}\n",
		"name: a\nchain: saved\ninput: {x: 1}\n",
		"name: a\ntool: echo\nspec:\n  chain:\n    mode: parallel\n    max_depth: 2\n    on_complete:\n      - {agent: b, when: \"{{ output.x > 1 }}\"}\n",
		"a: &a [1]\nb: *a\n",
		"name: x\n---\nname: y\n",
		"name: [\n",
		"\t\x00",
		"name: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		d, err := Parse(data, "fuzz"+FileSuffix)
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Parse took %v on %d bytes", took, len(data))
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !nameRE.MatchString(d.Name) || len(d.Name) > maxNameBytes {
			t.Fatalf("accepted name %q", d.Name)
		}
		n := 0
		if d.Model != nil {
			n++
		}
		if d.Tool != "" {
			n++
		}
		if d.Chain != "" {
			n++
		}
		if n != 1 {
			t.Fatalf("accepted an agent with %d of model/tool/chain: %+v", n, d)
		}
		if d.Spec.OutputSchema != nil && d.Schema() == nil {
			t.Fatal("an output_schema without a compiled schema")
		}
	})
}

// FuzzSchema: compiling any JSON value as an output schema, and validating
// any JSON value against a schema that compiled, never panics; Validate is
// deterministic, bounded, and agrees with Check.
//
//	go test ./engine/agent -run '^$' -fuzz '^FuzzSchema$' -fuzztime 3m
func FuzzSchema(f *testing.F) {
	for _, s := range [][2]string{
		{`{"score":{"type":"number"},"tags":{"type":"array","items":{"type":"string"}}}`, `{"score":3,"tags":["a"]}`},
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"integer","minimum":1}}}`, `{"a":0.5}`},
		{`{"type":"string","enum":["x","y"]}`, `"z"`},
		{`{"type":["string","null"]}`, `null`},
		{`{"anyOf":[{"type":"string"},{"type":"number"}]}`, `true`},
		{`{"type":"array","items":{"type":"object","properties":{"x":{"type":"boolean"}}}}`, `[{"x":1},{"x":true}]`},
		{`{"required":"yes"}`, `{}`},
		{`[]`, `1`},
		{`{"a":true,"b":false}`, `{"a":1,"b":2}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON []byte) {
		var sv, v any
		if json.Unmarshal(schemaJSON, &sv) != nil || json.Unmarshal(valueJSON, &v) != nil {
			return
		}
		s, err := CompileSchema(sv)
		if err != nil {
			return
		}
		e1 := s.Validate(v)
		e2 := s.Validate(v)
		if !reflect.DeepEqual(e1, e2) {
			t.Fatalf("Validate is not deterministic: %v / %v", e1, e2)
		}
		if len(e1) > maxSchemaErrors {
			t.Fatalf("%d errors, over the cap of %d", len(e1), maxSchemaErrors)
		}
		if (s.Check(v) == nil) != (len(e1) == 0) {
			t.Fatalf("Check and Validate disagree: %v", e1)
		}
		for _, e := range e1 {
			if e.Message == "" {
				t.Fatalf("an error without a message at %q", e.Path)
			}
		}
		if _, err := json.Marshal(s.Normalized()); err != nil {
			t.Fatalf("normalized schema does not marshal: %v", err)
		}
	})
}
