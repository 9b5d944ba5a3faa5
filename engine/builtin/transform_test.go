package builtin

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

func TestTransform(t *testing.T) {
	t.Parallel()
	transform := Tools(Options{})["transform"]
	people := []any{
		map[string]any{"name": "ann", "age": 31.0},
		map[string]any{"name": "bob", "age": 17.0},
	}
	for _, tc := range []struct {
		name string
		in   map[string]any
		want any
	}{
		{"over data", map[string]any{"expression": "[?age > `18`].name", "data": people}, []any{"ann"}},
		{"over input", map[string]any{"expression": "people[0].name", "people": people}, "ann"},
		{"input minus expression", map[string]any{"expression": "keys(@)", "a": 1.0}, []any{"a"}},
		{"function", map[string]any{"expression": "length(@)", "data": people}, 2.0},
		{"missing key", map[string]any{"expression": "nope", "data": map[string]any{}}, nil},
		{"multiselect", map[string]any{"expression": "{n: name}", "data": map[string]any{"name": "x"}}, map[string]any{"n": "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprint(tc.in)
			out, err := transform(context.Background(), tc.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, tc.want) {
				t.Fatalf("out = %#v, want %#v", out, tc.want)
			}
			if fmt.Sprint(tc.in) != before {
				t.Fatal("input was modified")
			}
		})
	}
	for _, tc := range []struct {
		name string
		in   map[string]any
		want []string
	}{
		{"missing", map[string]any{"data": 1.0}, []string{`transform: field "expression" is required`}},
		{"empty", map[string]any{"expression": ""}, []string{`transform: field "expression" must not be empty`}},
		{"not string", map[string]any{"expression": 3.0}, []string{`transform: field "expression" must be a string, got number`}},
		{"syntax", map[string]any{"expression": "foo[?"}, []string{`transform: syntax error in expression "foo[?" at offset`}},
		{"syntax offset", map[string]any{"expression": "a.b.."}, []string{`at offset 4 (near ".")`}},
		{"syntax at end", map[string]any{"expression": "a[?b=="}, []string{`at offset 6 (the end of the expression): Incomplete expression`}},
		{"runtime", map[string]any{"expression": "length(@)", "data": 5.0}, []string{`transform: evaluating expression "length(@)" failed`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := transform(context.Background(), tc.in, nil)
			wantErr(t, err, tc.want...)
		})
	}
}

func TestTransformCacheBounded(t *testing.T) {
	t.Parallel()
	for i := 0; i < exprCacheLimit+50; i++ {
		if _, err := compileExpr(fmt.Sprintf("a%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	exprCache.Range(func(_, _ any) bool { n++; return true })
	if n > exprCacheLimit {
		t.Fatalf("cache holds %d entries, limit %d", n, exprCacheLimit)
	}
	a, _ := compileExpr("a1")
	b, _ := compileExpr("a1")
	if a != b {
		t.Fatal("cached expression not reused")
	}
}
