package agent

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// typeErrors walks the document against the Definition's Go types before it
// is decoded, so a wrong type is reported with its field path and line
// (`spec.chain.max_depth: want an integer, got 2.5 (line 5)`) instead of the
// YAML library's path-less message, and every such mistake at once.
func typeErrors(root *yaml.Node) []string {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	var errs []string
	checkType(n, reflect.TypeOf(Definition{}), "", &errs)
	return errs
}

var intType = reflect.TypeOf(Int(0))

func checkType(n *yaml.Node, t reflect.Type, path string, errs *[]string) {
	add := func(want string) {
		msg := fmt.Sprintf("want %s, got %s (line %d)", want, describeNode(n), n.Line)
		if t.Kind() == reflect.String && n.Kind == yaml.MappingNode {
			msg += `; templates must be quoted: when: "{{ output.data.score > 7 }}"`
		}
		if path == "" {
			*errs = append(*errs, "the file "+msg)
			return
		}
		*errs = append(*errs, path+": "+msg)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // unset: the zero value (required fields are checked later)
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == intType || t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			add("an integer")
		}
	case t.Kind() == reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			add("a number")
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			add("true or false")
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			add("a string")
		}
	case t.Kind() == reflect.Interface:
		// any value (output_schema, input values): checked by their own rules
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			add("a map")
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			add("a list")
			return
		}
		for i, c := range n.Content {
			checkType(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			add("a map")
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			f, ok := fields[k.Value]
			if !ok {
				names := make([]string, 0, len(fields))
				for name := range fields {
					names = append(names, name)
				}
				sort.Strings(names)
				*errs = append(*errs, fmt.Sprintf("%s: unknown field (line %d); the fields here are %s", p, k.Line, strings.Join(names, ", ")))
				continue
			}
			checkType(v, f, p, errs)
		}
	}
}

// yamlFields maps a struct's YAML keys to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

// describeNode says what a value is, for "got …".
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!str":
		return fmt.Sprintf("%q", n.Value)
	case "!!bool":
		return "boolean " + n.Value
	}
	return n.Value
}
