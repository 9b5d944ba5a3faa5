package expr

import (
	"reflect"
	"testing"
)

func TestEvalTracedReads(t *testing.T) {
	sc := MapScope{
		"output": map[string]any{"score": 7.0, "items": []any{1.0, 2.0}, "data": map[string]any{"score": 3.0}},
		"state":  map[string]any{"x": "billing"},
	}
	cases := []struct {
		src   string
		want  []Read
		value any
	}{
		{"output.score > `5`", []Read{{"output.score", 7.0, true}}, true},
		{"length(output.items) > `0`", []Read{{"output.items", []any{1.0, 2.0}, true}}, true},
		{"{{state.x}} == billing", []Read{{"state.x", "billing", true}}, true},
		{"{{ output.data.score > 7 }}", []Read{{"output.data.score", 3.0, true}}, false},
		// the right of an `and` whose left is false is not read
		{"{{ output.data.score > 7 and output.score > 1 }}", []Read{{"output.data.score", 3.0, true}}, false},
		// a missing path is listed, not found; JMESPath lists optional chains too
		{"output.nope || output.score", []Read{{"output.nope", nil, false}, {"output.score", 7.0, true}}, 7.0},
		{"{{ output.nope == output.nope }}", []Read{{"output.nope", nil, false}}, true},
	}
	for _, c := range cases {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		var tr Trace
		v, err := e.EvalTraced(sc, false, &tr)
		reads := tr.Reads
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if !reflect.DeepEqual(v, c.value) {
			t.Errorf("%s = %v, want %v", c.src, v, c.value)
		}
		if !reflect.DeepEqual(reads, c.want) {
			t.Errorf("%s reads %#v, want %#v", c.src, reads, c.want)
		}
		// untraced evaluation gives the same value
		if v2, err := e.Eval(sc, false); err != nil || !reflect.DeepEqual(v2, v) {
			t.Errorf("%s: Eval = %v, %v", c.src, v2, err)
		}
	}
}

func TestEvalTracedKeepsReadsOnError(t *testing.T) {
	sc := MapScope{"output": map[string]any{}}
	for _, src := range []string{"output.score > `5`", "{{ output.score > 5 }}"} {
		e, _ := Parse(src)
		var tr Trace
		_, err := e.EvalTraced(sc, true, &tr)
		reads := tr.Reads
		if err == nil {
			t.Fatalf("%s: strict evaluation of a missing path succeeded", src)
		}
		if len(reads) != 1 || reads[0].Path != "output.score" || reads[0].Found {
			t.Errorf("%s: reads %#v, want output.score not found", src, reads)
		}
	}
}
