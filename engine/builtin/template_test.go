package builtin

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTemplate(t *testing.T) {
	t.Parallel()
	tpl := Tools(Options{})["template"]
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"data", map[string]any{"template": "hi {{.name}}", "data": map[string]any{"name": "ann"}}, "hi ann"},
		{"whole input", map[string]any{"template": "hi {{.name}}", "name": "bob"}, "hi bob"},
		{"range", map[string]any{"template": "{{range .}}[{{.}}]{{end}}", "data": []any{"a", "b"}}, "[a][b]"},
		{"funcs", map[string]any{"template": `{{upper .a}} {{json .b}} {{join "," .c}} {{default "z" .d}}`,
			"data": map[string]any{"a": "x", "b": map[string]any{"k": 1.0}, "c": []any{"p", "q"}}}, `X {"k":1} p,q z`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tpl(context.Background(), tc.in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, map[string]any{"text": tc.want}) {
				t.Fatalf("out = %#v, want text %q", out, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		in   map[string]any
		want string
	}{
		{"missing", map[string]any{}, `template: field "template" is required`},
		{"not string", map[string]any{"template": 1.0}, `template: field "template" must be a string, got number`},
		{"parse error line", map[string]any{"template": "ok\nok\n{{if}}"}, `template: parse error at line 3: missing value for if`},
		{"unknown func", map[string]any{"template": "{{nosuch 1}}"}, `template: parse error at line 1: function "nosuch" not defined`},
		{"exec error", map[string]any{"template": "a\n{{index .x 5}}", "data": map[string]any{"x": []any{}}}, `template: execution error at line 2, column`},
		{"too large", map[string]any{"template": `{{range .}}{{range $}}{{range $}}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{end}}{{end}}{{end}}`,
			"data": make([]any, 200)}, "template: output exceeds 1048576 bytes (1 MiB)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tpl(context.Background(), tc.in, nil)
			wantErr(t, err, tc.want)
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := tpl(ctx, map[string]any{"template": "x"}, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("output exactly at limit", func(t *testing.T) {
		out, err := tpl(context.Background(), map[string]any{"template": "{{.}}", "data": strings.Repeat("a", maxTemplateOutput)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(out.(map[string]any)["text"].(string)); n != maxTemplateOutput {
			t.Fatalf("len = %d", n)
		}
	})
}
