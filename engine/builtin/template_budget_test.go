package builtin

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/expr"
)

// Every way a template can build a large value or loop without writing is
// refused by a named budget, quickly.
func TestTemplateBudgets(t *testing.T) {
	tpl := Tools(Options{TemplateBudget: TemplateBudget{Steps: 50_000, Bytes: 8 << 20}})["template"]
	for _, tc := range []struct {
		name, src, budget string
	}{
		{"printf_doubling", `{{$x := "aaaaaaaaaaaaaaaa"}}{{range 40}}{{$x = printf "%s%s" $x $x}}{{end}}done`, "template_value"},
		{"print_doubling", `{{$x := "aaaaaaaaaaaaaaaa"}}{{range 40}}{{$x = print $x $x}}{{end}}`, "template_value"},
		{"printf_width", `{{printf "%1000000000d" 1}}`, "template_value"},
		{"printf_star_width", `{{printf "%*d" 1000000000 1}}`, "template_value"},
		{"replace_empty", `{{$x := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}{{range 10}}{{$x = replace $x "" $x}}{{end}}`, "template_value"},
		{"many_values", `{{$x := printf "%0300000d" 1}}{{range 100}}{{$y := upper $x}}{{end}}`, "template_bytes"},
		{"empty_nested_range", `{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}`, "template_steps"},
		{"recursive_define", `{{define "a"}}{{if lt (len .) 40}}{{template "a" (print . "x")}}{{template "a" (print . "x")}}{{end}}{{end}}{{template "a" ""}}`, "template_steps"},
		{"deep_recursion", `{{define "a"}}{{template "a" .}}{{end}}{{template "a" .}}`, "template_depth"},
		{"range_in_if_in_with", `{{with 1}}{{if 1}}{{range 100000000}}{{end}}{{end}}{{end}}`, "template_steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := tpl(context.Background(), map[string]any{"template": tc.src}, nil)
			var be *expr.BudgetError
			if !errors.As(err, &be) || be.Budget != tc.budget || be.Code() != "budget_exceeded" {
				t.Fatalf("want budget %s, got %v", tc.budget, err)
			}
			if !strings.HasPrefix(err.Error(), "template: template ") {
				t.Errorf("message = %q", err)
			}
			// The budget named above stopped it; how long reaching it
			// takes depends on the machine's load, so only a stop that
			// took far longer than any budget allows is a failure.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A deadline stops a rendering within 100 ms, whatever it is doing.
func TestTemplateStopsAtDeadline(t *testing.T) {
	tpl := Tools(Options{TemplateBudget: TemplateBudget{Steps: 1 << 62, Bytes: 1 << 30}})["template"]
	for _, src := range []string{
		`{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}`,
		`{{range 100000}}{{range 100000}}{{range 100000}}x{{end}}{{end}}{{end}}`,
		`{{range 100000}}{{range 100000}}{{$y := len "abc"}}{{end}}{{end}}`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := tpl(ctx, map[string]any{"template": src}, nil)
		late := time.Since(start) - 200*time.Millisecond
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: want the deadline, got %v", src, err)
		}
		t.Logf("%s: stopped %v after the deadline", src, late.Round(time.Millisecond))
		if late > raceSlack*100*time.Millisecond {
			t.Errorf("%s: stopped %v after the deadline", src, late)
		}
	}
}

// The hidden steps print nothing and change no output.
func TestTemplateStepsInvisible(t *testing.T) {
	t.Parallel()
	tpl := Tools(Options{})["template"]
	out, err := tpl(context.Background(), map[string]any{
		"template": `{{define "x"}}<{{.}}>{{end}}{{range $i, $e := .}}{{if $i}},{{end}}{{template "x" $e}}{{else}}none{{end}}{{range 2}}{{break}}{{end}}`,
		"data":     []any{"a", "b"},
	}, nil)
	if err != nil || out.(map[string]any)["text"] != "<a>,<b>" {
		t.Fatalf("out = %v, %v", out, err)
	}
}

// Depth counts nesting, not calls: 5,000 calls one after another pass.
func TestTemplateDepthIsNesting(t *testing.T) {
	t.Parallel()
	tpl := Tools(Options{})["template"]
	out, err := tpl(context.Background(), map[string]any{
		"template": `{{define "x"}}{{if .}}.{{end}}{{end}}{{range 5000}}{{template "x" 1}}{{end}}`,
	}, nil)
	if err != nil || len(out.(map[string]any)["text"].(string)) != 5000 {
		t.Fatalf("out = %v, %v", out, err)
	}
}
