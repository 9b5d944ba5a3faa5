package chain

import (
	"encoding/json"
	"fmt"
)

// NormalizeValue makes a tool's output JSON-like (map[string]any, []any,
// string, float64, bool, nil) so expressions and checkpoints see one shape.
// Canonical values are returned as they are, without copying.
func NormalizeValue(v any) any {
	if canonical(v, 0) {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return string(b)
	}
	return out
}

func canonical(v any, depth int) bool {
	if depth > 64 {
		return false
	}
	switch x := v.(type) {
	case nil, string, float64, bool:
		return true
	case map[string]any:
		for _, e := range x {
			if !canonical(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !canonical(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// NormalizeMap normalises an input object.
func NormalizeMap(m map[string]any) map[string]any {
	if out, ok := NormalizeValue(m).(map[string]any); ok {
		return out
	}
	return map[string]any{}
}

// typeName names the JSON type of v, for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
