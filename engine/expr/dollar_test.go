package expr

import (
	"reflect"
	"strings"
	"testing"
)

// `$` is the root of the chain context in every spelling (A2E writes
// `$.input.n`): the same value as the path without it, inside a filter too.
func TestDollarRoot(t *testing.T) {
	ctx := MapScope{
		"input": map[string]any{"n": 5.0, "min": 2.0},
		"read":  map[string]any{"output": map[string]any{"path": "/x"}},
		"items": []any{map[string]any{"v": 1.0}, map[string]any{"v": 3.0}},
	}
	cases := []struct {
		src  string
		want any
	}{
		{"$.input.n > `0`", true},
		{"$.input.n", 5.0},
		{"$.read.output.path", "/x"},
		{"$.items[1].v", 3.0},
		{"length(keys($))", 3.0},
		{"$.items[?v > $.input.min].v", []any{3.0}},
		{"items[?v > $.input.min] | length(@)", 1.0},
		{"'$.input' == '$.input'", true}, // "$" in a raw string is text
		{`"$"`, nil},                     // a quoted "$" is a field named $
		{"{{ $.input.n > 3 }}", true},    // guard
		{"{{ $['input'].n }}", 5.0},      // guard, bracketed name
		{"{{ $.input.n }} == 5", true},   // comparison
		{"{{ $.read.output.path }} startswith /", true},
	}
	for _, c := range cases {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, err := e.Eval(ctx, true)
		if err != nil && c.want != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.src, got, c.want)
		}
	}
}

// The analysis reads `$.a.b` as a reference to a, so dependencies and the
// editor see the node it names; `$` alone reads everything.
func TestDollarRefs(t *testing.T) {
	for src, want := range map[string][]Ref{
		"$.read.output.path":      {{Root: "read", Field: "output"}},
		"$.input.n > `0`":         {{Root: "input", Field: "n"}},
		"{{ $.input.n > 1 }}":     {{Root: "input", Field: "n"}},
		"$":                       {{Root: "@"}},
		"items[?v > $.input.min]": {{Root: "@"}, {Root: "items"}},
	} {
		e, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if !reflect.DeepEqual(e.Refs(), want) {
			t.Errorf("%s refs = %v, want %v", src, e.Refs(), want)
		}
	}
}

// A misplaced `$` is a syntax error at its own position.
func TestDollarSyntax(t *testing.T) {
	for src, want := range map[string]struct {
		pos int
		msg string
	}{
		"read.$.x":       {5, "can only start a path"},
		"{a: $, $: `1`}": {4, "not a key name"},
		"$.input.n >":    {11, ""},
		"{{ $. }}":       {6, `expected a name after "$."`},
		"{{ $[0] }}":     {5, "expected a quoted name"},
	} {
		_, err := Parse(src)
		se, ok := err.(*SyntaxError)
		if !ok {
			t.Fatalf("%s: err = %v, want a syntax error", src, err)
		}
		if se.Pos != want.pos || !strings.Contains(se.Msg, want.msg) {
			t.Errorf("%s: pos %d msg %q, want pos %d and %q", src, se.Pos, se.Msg, want.pos, want.msg)
		}
	}
}
