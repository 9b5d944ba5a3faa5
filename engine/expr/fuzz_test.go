package expr

import (
	"errors"
	"testing"
)

var fuzzSeeds = []string{
	"length(output.items) > `0`",
	"$.input.n > `0`",
	"items[?v > $.input.min].v",
	"{{ $.input['x-y'] }} == 5",
	"read.output",
	`"email-composer".output.answer`,
	"{{state.x}} == billing",
	"{{node_results.scorer.score}} >= 0.8",
	"{{ output.data.score > 7 }}",
	"{{ output.answer }}",
	"{{ a > }}",
	"{{state.x}} ==",
	"length(",
	"{{ 'x' not in [a.b, -1, \"y\\n\"] or not (c|length) }}",
	"{{ a['x-y'][0][-1].b|lower|int }} startswith 'D' and 1 < 2",
	"items[?x > `1`].{a: a, b: [b, c]} | sort_by(@, &a)",
	"Hello {{ name }} and {{ other }}",
	"{{",
	"[",
	"{a:",
}

// checkErr asserts an error is one of the package's error types.
func checkErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	var se *SyntaxError
	var mp *MissingPathError
	var ee *EvalError
	if !errors.As(err, &se) && !errors.As(err, &mp) && !errors.As(err, &ee) {
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
	if se != nil && (se.Pos < 0 || se.Pos > len(se.Src)) {
		t.Fatalf("position %d outside source of length %d", se.Pos, len(se.Src))
	}
	_ = err.Error()
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		checkErr(t, err)
		if err == nil {
			_ = e.Refs()
			_ = e.Spelling().String()
		}
		tp, err := ParseTemplate(src)
		checkErr(t, err)
		if err == nil {
			_ = tp.Refs()
		}
	})
}

func FuzzEval(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	scope := testScope()
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			return
		}
		for _, strict := range []bool{false, true} {
			_, err := e.Eval(scope, strict)
			checkErr(t, err)
			_, err = e.Test(&countingScope{m: scope}, strict)
			checkErr(t, err)
		}
		if tp, err := ParseTemplate(src); err == nil {
			_, err = tp.Render(scope, false)
			checkErr(t, err)
		}
	})
}
