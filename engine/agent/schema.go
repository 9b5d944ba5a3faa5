package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Schema is a compiled output schema. The validator is deliberately small
// and exact: it understands type (object, string, integer, number, boolean,
// array, null — one or a list), properties, required, enum and items; every
// other keyword (allOf, anyOf, oneOf, not, $ref, format, minimum, pattern,
// additionalProperties, ...) is ignored, so extra properties are allowed.
//
// JSON booleans are never numbers (true is not an integer); a number is an
// integer when it has no fractional part (3.0 is an integer, 3.5 is not).
type Schema struct {
	types      []string // empty: any type
	props      map[string]*Schema
	propOrder  []string // sorted, for deterministic errors
	required   []string
	enum       []any
	hasEnum    bool
	items      *Schema
	never      bool // the schema `false`
	raw        any  // the schema as written (full form)
	normalized any  // the full form: shorthand wrapped in {type: object, properties}
}

// SchemaTypes are the type names the validator knows.
var SchemaTypes = []string{"object", "string", "integer", "number", "boolean", "array", "null"}

// CompileSchema compiles an output_schema. A top-level map is a full JSON
// Schema when it has `type` (a type name or a list of them), `properties`
// (a map of schemas), or a JSON Schema keyword such as enum, items, required,
// $schema, $ref, allOf, anyOf, oneOf or not (with a non-map value, so that a
// property may still be called "required"); anything else is the shorthand, a bare map of property
// name → schema (like a tool's `parameters`), read as {type: object,
// properties: <map>} with no property required. A full schema is used as
// written, never rewritten.
func CompileSchema(v any) (*Schema, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a map (a JSON Schema, or the shorthand: property name → schema), got %s", jsonType(v))
	}
	if isFullSchema(m) {
		s, err := compileSchema(m, "")
		if err != nil {
			return nil, err
		}
		s.raw, s.normalized = v, v
		return s, nil
	}
	s := &Schema{types: []string{"object"}, props: map[string]*Schema{}}
	for name, sub := range m {
		ps, err := compileSchema(sub, name)
		if err != nil {
			return nil, err
		}
		s.props[name] = ps
		s.propOrder = append(s.propOrder, name)
	}
	sort.Strings(s.propOrder)
	s.raw = v
	s.normalized = map[string]any{"type": "object", "properties": v}
	return s, nil
}

func isFullSchema(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return true
	case []any:
		if len(t) > 0 {
			for _, e := range t {
				if _, ok := e.(string); !ok {
					return false
				}
			}
			return true
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		for _, sub := range p {
			switch sub.(type) {
			case map[string]any, bool:
			default:
				return false
			}
		}
		return true
	}
	for _, k := range []string{"enum", "items", "required", "$schema", "$ref", "allOf", "anyOf", "oneOf", "not"} {
		if sub, ok := m[k]; ok {
			if _, isMap := sub.(map[string]any); !isMap {
				return true
			}
		}
	}
	return false
}

// Raw returns the schema as written.
func (s *Schema) Raw() any { return s.raw }

// Normalized returns the full form (the shorthand wrapped in an object schema).
func (s *Schema) Normalized() any { return s.normalized }

func compileSchema(v any, path string) (*Schema, error) {
	at := func(field string) string {
		p := joinPath(path, "")
		if p == "" {
			return field
		}
		return p + ": " + field
	}
	switch x := v.(type) {
	case bool:
		return &Schema{never: !x}, nil
	case map[string]any:
		s := &Schema{}
		switch t := x["type"].(type) {
		case nil:
			if _, present := x["type"]; present {
				return nil, fmt.Errorf("%s is null; use a type name (%s)", at("type"), strings.Join(SchemaTypes, ", "))
			}
		case string:
			if !knownType(t) {
				return nil, fmt.Errorf("%s %q is not a type this validator knows (%s)", at("type"), t, strings.Join(SchemaTypes, ", "))
			}
			s.types = []string{t}
		case []any:
			for _, e := range t {
				name, ok := e.(string)
				if !ok || !knownType(name) {
					return nil, fmt.Errorf("%s lists %v, which is not a type this validator knows (%s)", at("type"), e, strings.Join(SchemaTypes, ", "))
				}
				s.types = append(s.types, name)
			}
		default:
			return nil, fmt.Errorf("%s must be a type name or a list of them, got %s", at("type"), jsonType(t))
		}
		if p, present := x["properties"]; present {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s must be a map of property name → schema, got %s", at("properties"), jsonType(p))
			}
			s.props = map[string]*Schema{}
			for name, sub := range pm {
				ps, err := compileSchema(sub, joinPath(path, name))
				if err != nil {
					return nil, err
				}
				s.props[name] = ps
				s.propOrder = append(s.propOrder, name)
			}
			sort.Strings(s.propOrder)
		}
		if r, present := x["required"]; present {
			rl, ok := r.([]any)
			if !ok {
				return nil, fmt.Errorf("%s must be a list of property names, got %s", at("required"), jsonType(r))
			}
			for _, e := range rl {
				name, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s must list property names (strings), got %s", at("required"), jsonType(e))
				}
				s.required = append(s.required, name)
			}
		}
		if e, present := x["enum"]; present {
			el, ok := e.([]any)
			if !ok {
				return nil, fmt.Errorf("%s must be a list of allowed values, got %s", at("enum"), jsonType(e))
			}
			s.enum, s.hasEnum = el, true
		}
		if it, present := x["items"]; present {
			switch it.(type) {
			case map[string]any, bool:
				is, err := compileSchema(it, path+"[]")
				if err != nil {
					return nil, err
				}
				s.items = is
			default:
				// The tuple form (a list of schemas) is not supported: ignored.
			}
		}
		return s, nil
	}
	where := "the schema"
	if path != "" {
		where = "the schema of " + path
	}
	return nil, fmt.Errorf("%s must be a map (or true/false), got %s", where, jsonType(v))
}

func knownType(t string) bool {
	for _, k := range SchemaTypes {
		if k == t {
			return true
		}
	}
	return false
}

// SchemaError is one validation failure.
type SchemaError struct {
	Path    string `json:"path"` // "" for the value itself; `lead.score`, `tags[1]`
	Message string `json:"message"`
}

func (e SchemaError) String() string {
	if e.Path == "" {
		return "(root): " + e.Message
	}
	return e.Path + ": " + e.Message
}

// ValidationError collects every failure of one value.
type ValidationError struct {
	Errors []SchemaError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, x := range e.Errors {
		parts[i] = x.String()
	}
	return strings.Join(parts, "; ")
}

// Validate checks a JSON value (as decoded by encoding/json: map[string]any,
// []any, string, float64, bool, nil) and returns every failure, or nil.
func (s *Schema) Validate(v any) []SchemaError {
	var errs []SchemaError
	s.validate(v, "", &errs)
	return errs
}

// Check is Validate as an error (*ValidationError), nil when v is valid.
func (s *Schema) Check(v any) error {
	if errs := s.Validate(v); len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}

const maxSchemaErrors = 100

func (s *Schema) validate(v any, path string, errs *[]SchemaError) {
	if len(*errs) >= maxSchemaErrors {
		return
	}
	add := func(format string, args ...any) {
		*errs = append(*errs, SchemaError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	if s.never {
		add("no value is allowed here (schema false)")
		return
	}
	if len(s.types) > 0 && !s.typeOK(v) {
		add("want %s, got %s", strings.Join(s.types, " or "), describe(v))
		return
	}
	if s.hasEnum {
		found := false
		for _, e := range s.enum {
			if jsonEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			add("%s is not one of the allowed values %s", compactJSON(v), compactJSON(s.enum))
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.required {
			if _, ok := x[name]; !ok {
				*errs = append(*errs, SchemaError{Path: joinPath(path, name), Message: "is required but missing"})
			}
		}
		for _, name := range s.propOrder {
			if pv, ok := x[name]; ok {
				s.props[name].validate(pv, joinPath(path, name), errs)
			}
		}
	case []any:
		if s.items != nil {
			for i, e := range x {
				s.items.validate(e, path+"["+strconv.Itoa(i)+"]", errs)
			}
		}
	}
}

func (s *Schema) typeOK(v any) bool {
	for _, t := range s.types {
		if isType(v, t) {
			return true
		}
	}
	return false
}

func isType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && !math.IsInf(f, 0) && f == math.Trunc(f)
	}
	return false
}

// number reads a JSON number; booleans are never numbers.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func jsonEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// describe names a value's JSON type for a message, with the value when short.
func describe(v any) string {
	t := jsonType(v)
	switch v.(type) {
	case map[string]any, []any, nil:
		return t
	}
	s := compactJSON(v)
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return t + " " + s
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		if f, ok := number(x); ok {
			if f == math.Trunc(f) {
				return "integer"
			}
			return "number"
		}
	}
	return fmt.Sprintf("%T", v)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// joinPath appends a property to a path: `lead.score`; names that are not
// identifiers are bracketed: `lead["first name"]`.
func joinPath(path, name string) string {
	if name == "" {
		return path
	}
	if !identRE.MatchString(name) {
		return path + "[" + strconv.Quote(name) + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}
