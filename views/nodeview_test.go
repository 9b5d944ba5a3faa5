package views

import (
	"strconv"
	"strings"
	"testing"
)

// The schema view infers a value's shape: object fields, integer or number,
// a list's item kinds merged, and a value too large is cut, not walked whole.
func TestNodeViewSchema(t *testing.T) {
	v := map[string]any{
		"name":  "Ada",
		"score": 7.0,
		"ratio": 0.5,
		"tags":  []any{"a", "b"},
		"mixed": []any{1.0, "x", 2.0},
		"none":  nil,
	}
	got := nvSchema(v)
	for _, want := range []string{
		`"name": {` + "\n" + `      "type": "string"`, `"score": {` + "\n" + `      "type": "integer"`, `"ratio": {` + "\n" + `      "type": "number"`,
		`"items": {` + "\n" + `        "type": "string"`, `"anyOf"`, `"type": "null"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema lacks %q:\n%s", want, got)
		}
	}
	// a list of 1,000 objects of 300 fields: bounded
	big := make([]any, 1000)
	for i := range big {
		row := map[string]any{}
		for j := 0; j < 300; j++ {
			row[strconv.Itoa(j)] = float64(j)
		}
		big[i] = row
	}
	if s := nvSchema(big); len(s) > 1<<20 || !strings.Contains(s, `"x-more-fields": 100`) {
		t.Errorf("a large value's schema: %d bytes, %.300s", len(s), s)
	}
}
