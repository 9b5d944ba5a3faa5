package exprhelp

import (
	"encoding/json"
	"sort"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Bounds on the shapes one context answer lists.
const (
	ShapeDepth = 4    // levels of a shape summary below a name
	ShapeKeys  = 50   // keys listed per object
	ShapeNodes = 4000 // shape entries per answer, across every name
	ShapeUp    = 200  // upstream nodes whose output is summarised
)

// Shape is a bounded summary of a value's structure for completion.
type Shape struct {
	Type string            `json:"type"` // object, array, string, number, boolean, null
	Keys map[string]*Shape `json:"keys,omitempty"`
	Elem *Shape            `json:"elem,omitempty"` // an array's first element
	More bool              `json:"more,omitempty"` // keys were left out
}

// Shapes summarises what the names of field f read: from d (nil: nothing
// ran), `output`, `input` and `trigger` and each upstream node as
// {output}; then, from the tools' declared output schemas in reg, the
// shapes no run gave (the chain never ran, or the run did not reach the
// node), so a field completes `fetch.output.` before the first run.
// fromSchema names the shapes the schemas gave.
func Shapes(c *chain.Chain, reg *engine.Registry, f *chain.ExprField, d *RunData) (shapes map[string]*Shape, fromSchema []string) {
	shapes = map[string]*Shape{}
	budget := ShapeNodes
	if d != nil {
		sc := NewScope(f, d)
		for _, n := range []string{"output", "input", "trigger"} {
			if v, ok := sc.Lookup(n); ok && contains(f.Names, n) {
				shapes[n] = shapeOf(v, ShapeDepth, &budget)
			}
		}
		for i, id := range f.Upstream {
			if i >= ShapeUp || budget <= 0 {
				break
			}
			if v, ok := d.Outputs[id]; ok {
				shapes[id] = &Shape{Type: "object", Keys: map[string]*Shape{"output": shapeOf(v, ShapeDepth, &budget)}}
			}
		}
	}
	return shapes, schemaShapes(c, reg, f, shapes)
}

// schemaShapes fills in the shapes tools' output schemas give where
// shapes has none, and returns the names it filled.
func schemaShapes(c *chain.Chain, reg *engine.Registry, f *chain.ExprField, shapes map[string]*Shape) []string {
	filled := []string{}
	budget := ShapeNodes
	for _, sh := range shapes {
		budget -= shapeSize(sh)
	}
	schemaOf := func(id string) map[string]any {
		for i := range c.Nodes {
			if n := &c.Nodes[i]; n.ID == id && n.Kind == chain.KindTool {
				sc, _ := reg.OutputSchema(n.Name)
				return sc
			}
		}
		return nil
	}
	if _, ok := shapes["output"]; !ok && contains(f.Names, "output") && len(f.From) == 1 {
		if sc := schemaOf(f.From[0]); sc != nil {
			shapes["output"] = shapeOfSchema(sc, ShapeDepth, &budget)
			filled = append(filled, "output")
		}
	}
	for i, id := range f.Upstream {
		if i >= ShapeUp || budget <= 0 {
			break
		}
		if _, ok := shapes[id]; ok {
			continue
		}
		if sc := schemaOf(id); sc != nil {
			shapes[id] = &Shape{Type: "object", Keys: map[string]*Shape{"output": shapeOfSchema(sc, ShapeDepth, &budget)}}
			filled = append(filled, id)
		}
	}
	return filled
}

func shapeOf(v any, depth int, budget *int) *Shape {
	*budget--
	switch x := v.(type) {
	case map[string]any:
		s := &Shape{Type: "object"}
		if depth <= 0 || *budget <= 0 {
			s.More = len(x) > 0
			return s
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > ShapeKeys {
			keys, s.More = keys[:ShapeKeys], true
		}
		s.Keys = make(map[string]*Shape, len(keys))
		for _, k := range keys {
			if *budget <= 0 {
				s.More = true
				break
			}
			s.Keys[k] = shapeOf(x[k], depth-1, budget)
		}
		return s
	case []any:
		s := &Shape{Type: "array"}
		if len(x) > 0 && depth > 0 && *budget > 0 {
			s.Elem = shapeOf(x[0], depth-1, budget)
		}
		return s
	case string:
		return &Shape{Type: "string"}
	case float64, int, int64, json.Number:
		return &Shape{Type: "number"}
	case bool:
		return &Shape{Type: "boolean"}
	case nil:
		return &Shape{Type: "null"}
	}
	return &Shape{Type: "unknown"}
}

func shapeSize(sh *Shape) int {
	if sh == nil {
		return 0
	}
	n := 1 + shapeSize(sh.Elem)
	for _, k := range sh.Keys {
		n += shapeSize(k)
	}
	return n
}

// shapeOfSchema is shapeOf for a JSON Schema: its type, properties and
// items, as deep and as many as shapeOf would list.
func shapeOfSchema(sc map[string]any, depth int, budget *int) *Shape {
	*budget--
	sh := &Shape{Type: schemaType(sc)}
	if depth <= 0 {
		if sh.Type == "" {
			sh.Type = "any"
		}
		return sh
	}
	if props, ok := sc["properties"].(map[string]any); ok {
		if sh.Type == "" {
			sh.Type = "object"
		}
		sh.Keys = map[string]*Shape{}
		for k, v := range props {
			if len(sh.Keys) >= ShapeKeys || *budget <= 0 {
				sh.More = true
				break
			}
			sub, _ := v.(map[string]any)
			sh.Keys[k] = shapeOfSchema(sub, depth-1, budget)
		}
	}
	if items, ok := sc["items"].(map[string]any); ok && *budget > 0 {
		if sh.Type == "" {
			sh.Type = "array"
		}
		sh.Elem = shapeOfSchema(items, depth-1, budget)
	}
	if sh.Type == "" {
		sh.Type = "any" // the schema does not say: any JSON value
	}
	return sh
}

// schemaType is a schema's JSON type ("integer" is a number; of a list of
// types, the first that is not null); "" when it says none.
func schemaType(sc map[string]any) string {
	t := sc["type"]
	if l, ok := t.([]any); ok {
		t = nil
		for _, x := range l {
			if x != "null" {
				t = x
				break
			}
		}
	}
	switch t {
	case "integer":
		return "number"
	case nil:
		return ""
	}
	str, _ := t.(string)
	return str
}
