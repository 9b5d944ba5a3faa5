package engine

import (
	"encoding/json"
	"fmt"
)

// normalizeValue makes a tool's output JSON-like (map[string]any, []any,
// string, float64, bool, nil) so expressions and checkpoints see one shape.
// Canonical values are returned as they are, without copying.
func normalizeValue(v any) any {
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

// normalizeMap normalises an input object.
func normalizeMap(m map[string]any) map[string]any {
	if out, ok := normalizeValue(m).(map[string]any); ok {
		return out
	}
	return map[string]any{}
}
