package expr

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func testScope() MapScope {
	return MapScope{
		"output": map[string]any{
			"items":  []any{"a", "b"},
			"empty":  []any{},
			"data":   map[string]any{"score": 8.0, "nothing": nil},
			"answer": "forty-two",
			"score":  6.0,
			"count":  3, // an int, as Go callers sometimes pass
			"text":   "10",
		},
		"read":           map[string]any{"output": "file body"},
		"input":          map[string]any{"files": []any{"x.txt"}, "name": "Dr Jones", "zip": "02134"},
		"state":          map[string]any{"x": "billing", "tags": []any{"urgent", "vip"}, "n": nil, "flag": "yes", "list": []any{1.0, 2.0, 3.0}},
		"node_results":   map[string]any{"scorer": map[string]any{"score": 0.8}, "email-composer": map[string]any{"answer": "hi"}},
		"email-composer": map[string]any{"output": map[string]any{"answer": "Dear all"}},
		"steps":          map[string]any{"enrich": map[string]any{"x": 1.0}},
	}
}

func TestEachSpellingParsesAndEvaluates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		spelling Spelling
		want     any
	}{
		// JMESPath
		{"length(output.items) > `0`", JMESPath, true},
		{"read.output", JMESPath, "file body"},
		{"input.files", JMESPath, []any{"x.txt"}},
		{`"email-composer".output.answer`, JMESPath, "Dear all"},
		{"output.score > `5`", JMESPath, true},
		{"  output.data.nothing  ", JMESPath, nil},
		{"missing.path", JMESPath, nil},
		// Comparison
		{"{{state.x}} == billing", Comparison, true},
		{"{{state.x}} != billing", Comparison, false},
		{"{{node_results.scorer.score}} >= 0.8", Comparison, true},
		{"{{node_results.scorer.score}} > 0.8", Comparison, false},
		{`{{input.name}} startswith "Dr"`, Comparison, true},
		{`{{input.name}} startswith 'Mr'`, Comparison, false},
		{"{{ state.tags }} contains urgent", Comparison, true},
		{"{{ state.tags }} contains boring", Comparison, false},
		{"{{ input.name }} contains Jones", Comparison, true},
		{"{{state.x}}==billing", Comparison, true},
		{"{{state.x}} == billing and {{output.score}} > 5", Comparison, true},
		{"{{state.x}} == nope or {{output.score}} > 5", Comparison, true},
		{"{{state.x}} == nope or {{output.score}} > 5 and {{state.x}} == nope", Comparison, false},
		{"{{state.n}} == null", Comparison, true},
		{"{{state.flag}} and {{state.x}} == billing", Comparison, true},
		{"{{ output.items|length }} == 2", Comparison, true},
		{"billing == {{state.x}}", Comparison, true},
		{"{{output.count}} == 3", Comparison, true},
		// Guard
		{"{{ output.data.score > 7 }}", Guard, true},
		{"{{ output.answer }}", Guard, "forty-two"},
		{"  {{ output.items }}\n", Guard, []any{"a", "b"}},
		{"{{ output.items|length }}", Guard, 2.0},
		{"{{ 'a' in output.items }}", Guard, true},
		{"{{ 'z' not in output.items }}", Guard, true},
		{"{{ 'forty' in output.answer }}", Guard, true},
		{"{{ 'score' in output.data }}", Guard, true},
		{"{{ state.x in ['billing', 'sales'] }}", Guard, true},
		{"{{ not (output.score > 7) and output.score >= 6 }}", Guard, true},
		{"{{ output.score < 5 or state.x == 'billing' }}", Guard, true},
		{"{{ output['data']['score'] == 8 }}", Guard, true},
		{`{{ node_results["email-composer"].answer }}`, Guard, "hi"},
		{"{{ node_results.email-composer.answer }}", Guard, "hi"},
		{"{{ output.items[0] }}", Guard, "a"},
		{"{{ output.items[-1] }}", Guard, "b"},
		{"{{ output.answer|upper }}", Guard, "FORTY-TWO"},
		{"{{ 'ABC'|lower }}", Guard, "abc"},
		{"{{ '3.7'|int }}", Guard, 3.0},
		{"{{ '3.5'|float }}", Guard, 3.5},
		{"{{ output.items|string }}", Guard, `["a","b"]`},
		{"{{ -output.score }}", Guard, -6.0},
		{"{{ -1 < 0 }}", Guard, true},
		{"{{ None }}", Guard, nil},
		{"{{ True and not False }}", Guard, true},
		{`{{ "a\"b\n" }}`, Guard, "a\"b\n"},
		{"{{ '}}' }}", Guard, "}}"},
		{"{{ output.count == 3.0 }}", Guard, true},
		{"{{ output.missing }}", Guard, nil},
		{"{{ steps.enrich.x == 1 }}", Guard, true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if e.Spelling() != tt.spelling {
				t.Errorf("Spelling = %v, want %v", e.Spelling(), tt.spelling)
			}
			if e.Source() != tt.src {
				t.Errorf("Source = %q", e.Source())
			}
			got, err := e.Eval(testScope(), false)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestSpellingString(t *testing.T) {
	t.Parallel()
	for s, want := range map[Spelling]string{JMESPath: "jmespath", Comparison: "comparison", Guard: "guard", 9: "Spelling(9)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

func TestTruthy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want bool
	}{
		{true, true}, {false, false}, {nil, false},
		{1.0, true}, {-0.5, true}, {0.0, false}, {3, true}, {0, false}, {int64(7), true},
		{"true", true}, {" TRUE ", true}, {"True", true}, {"1", true}, {"yes", true}, {"Yes\n", true},
		{"", false}, {"no", false}, {"false", false}, {"0", false}, {"hello", false}, {"2", false},
		{[]any{nil}, true}, {[]any{}, false}, {map[string]any{"a": 1.0}, true}, {map[string]any{}, false},
		{struct{}{}, false},
	}
	for _, tt := range tests {
		if got := Truthy(tt.v); got != tt.want {
			t.Errorf("Truthy(%#v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestTestUsesTruthy(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]bool{
		"{{ state.flag }}":    true,
		"{{ output.answer }}": false, // other strings are not truthy
		"{{ output.items }}":  true,
		"output.empty":        false,
		"state.flag":          true,
	} {
		e, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.Test(testScope(), false)
		if err != nil || got != want {
			t.Errorf("Test(%q) = %v, %v; want %v", src, got, err, want)
		}
	}
}

func TestNumbersCompareAsNumbers(t *testing.T) {
	t.Parallel()
	s := MapScope{"v": map[string]any{"f": 0.8, "s": "10", "i": 10, "nine": "9", "ten": "10", "pad": " 7 ", "word": "abc"}}
	tests := []struct {
		src  string
		want bool
	}{
		{"{{v.f}} == 0.8", true},
		{"{{v.f}} == 0.80", true},
		{"{{v.f}} < 1", true},
		{"{{v.s}} > 9", true},            // "10" vs 9: numeric, not lexical
		{"{{v.ten}} > {{v.nine}}", true}, // both numeric strings
		{"{{v.i}} == 10", true},          // int in data
		{"{{v.i}} == {{v.s}}", true},
		{"{{v.pad}} == 7", true},
		{"{{v.word}} > 5", false}, // incompatible: false, not an error
		{"{{v.f}} > abc", false},
		{"{{ v.s > 9 }}", true},
		{"{{ v.i >= 10.0 }}", true},
		{"{{ v.ten > v.nine }}", true},
		{"{{ 10 == '10' }}", false}, // quoted literal is text
		{"{{ v.missing < 3 }}", false},
	}
	for _, tt := range tests {
		e, err := Parse(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := e.Test(s, false)
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.src, got, err, tt.want)
		}
	}
}

func TestBareVsQuotedLiterals(t *testing.T) {
	t.Parallel()
	s := MapScope{"v": map[string]any{"zip": "02134", "t": true, "ts": "true", "n": nil, "ns": "null", "num": 2134.0, "sp": "a b"}}
	tests := []struct {
		src  string
		want bool
	}{
		{"{{v.zip}} == 2134", true},    // bare number: numeric comparison
		{`{{v.zip}} == "2134"`, false}, // quoted: text comparison
		{`{{v.zip}} == "02134"`, true},
		{"{{v.num}} == '2134'", false}, // number vs text
		{"{{v.t}} == true", true},      // bare true is a boolean
		{"{{v.t}} == 'true'", false},   // quoted is text
		{"{{v.ts}} == 'true'", true},
		{"{{v.ts}} == true", false},
		{"{{v.n}} == null", true},
		{"{{v.n}} == 'null'", false},
		{"{{v.ns}} == 'null'", true},
		{`{{v.sp}} == "a b"`, true},
		{"{{v.zip}} == billing", false},
	}
	for _, tt := range tests {
		e, err := Parse(tt.src)
		if err != nil {
			t.Fatalf("%s: %v", tt.src, err)
		}
		got, err := e.Test(s, false)
		if err != nil || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.src, got, err, tt.want)
		}
	}
}

func TestSyntaxErrorsCarryPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src     string
		pos     int
		msgPart string
	}{
		{"{{ a > }}", 7, `expected an operand after ">"`},
		{"{{state.x}} ==", 14, `expected an operand after "=="`},
		{"  {{state.x}} ==  ", 16, `expected an operand after "=="`},
		{"length(", 7, "ncomplete"},
		{"a.[", 3, ""},
		{"{{ a > 7", 0, `unterminated "{{"`},
		{"x == {{ a ", 5, `unterminated "{{"`},
		{"{{ 'abc }}", 3, "unterminated string"},
		{"{{ a = 1 }}", 5, `"=="`},
		{"{{ }}", 3, "empty"},
		{"{{ a.b | nope }}", 9, "unknown filter"},
		{"{{ (a }}", 6, `expected ")"`},
		{"{{ a < b < c }}", 9, "chained"},
		{"{{state.x}} {{b}}", 12, "comparison operator"},
		{"{{state.x}} == a b", 17, `"and", "or"`},
		{"{{state.x}} == billing and", 26, `after "and"`},
		{"{{ a }} }}", 8, ""},
		{"   ", 0, "empty"},
		{"{{ a[x] }}", 5, "quoted key or an integer"},
		{"{{ a ! b }}", 5, `"!"`},
		{"{{ a and }}", 9, `after "and"`},
		{"{{ # }}", 3, "unexpected character"},
		{"foo[?", 5, ""},
		{"a | | b", 4, ""},
		{"[:", 2, "incomplete"},
		{"`1`(x)", 3, "function name"},
		{"nosuch(a)", 0, "unknown function nosuch()"},
		{"a && lenght(b)", 5, "unknown function lenght()"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Parse(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want *SyntaxError", err, err)
			}
			if se.Pos != tt.pos {
				t.Errorf("Pos = %d, want %d (%v)", se.Pos, tt.pos, se)
			}
			if se.Src != tt.src {
				t.Errorf("Src = %q", se.Src)
			}
			if !strings.Contains(se.Msg, tt.msgPart) {
				t.Errorf("Msg = %q, want it to contain %q", se.Msg, tt.msgPart)
			}
		})
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	t.Parallel()
	_, err := Parse("{{ a > }}")
	want := `syntax error at position 7 in "{{ a > }}": expected an operand after ">"`
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
	long := "{{ " + strings.Repeat("a.", 100) + "b > }}"
	_, err = Parse(long)
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `"...`) || !strings.Contains(msg, "b > }}") || len(msg) > 200 {
		t.Errorf("long source not truncated around the error: %s", msg)
	}
}

func TestLimits(t *testing.T) {
	deep := func(open, close string, n int, mid string) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	tests := []struct {
		name  string
		src   string
		lim   Limits
		limit string
		pos   int
	}{
		{"length", strings.Repeat("a", 20000), Limits{}, "MaxLength", 16384},
		{"custom length", "abcdef", Limits{MaxLength: 3}, "MaxLength", 3},
		{"jmespath parens", deep("(", ")", 8000, "a"), Limits{}, "MaxDepth", 128},
		{"jmespath brackets", deep("[", "]", 5000, "a"), Limits{}, "MaxDepth", 128},
		{"jmespath braces", strings.Repeat("{a:", 3000) + "b" + strings.Repeat("}", 3000), Limits{}, "MaxDepth", 384},
		{"guard parens", "{{ " + deep("(", ")", 5000, "a") + " }}", Limits{}, "MaxDepth", 131},
		{"guard lists", "{{ " + deep("[", "]", 5000, "1") + " }}", Limits{}, "MaxDepth", 131},
		{"comparison parens", "{{ " + deep("(", ")", 5000, "a") + " }} == 1", Limits{}, "MaxDepth", 131},
		{"custom depth", "{{ ((a)) }}", Limits{MaxDepth: 1}, "MaxDepth", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := ParseWith(tt.src, tt.lim)
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("took %v", d)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *SyntaxError", err)
			}
			if !strings.Contains(se.Msg, tt.limit) || se.Pos != tt.pos {
				t.Errorf("got pos %d %q, want pos %d naming %s", se.Pos, se.Msg, tt.pos, tt.limit)
			}
		})
	}
	// Within the limits a deep expression is fine.
	if _, err := Parse(deep("(", ")", 100, "a")); err != nil {
		t.Errorf("100 parens: %v", err)
	}
	if _, err := Parse("{{ " + deep("(", ")", 100, "a") + " }}"); err != nil {
		t.Errorf("100 parens: %v", err)
	}
	// Nesting inside strings does not count.
	if _, err := Parse("a == '" + strings.Repeat("(", 500) + "'"); err != nil {
		t.Errorf("parens in a raw string: %v", err)
	}
}

func TestStrictMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		path string // "" = no error in strict mode
		lax  any    // non-strict result
	}{
		{"{{ output.data.score > 7 }}", "", true},
		{"{{ output.data.nothing }}", "", nil}, // null is not missing
		{"{{ output.data.nothing == null }}", "", true},
		{"{{ output.data.nope > 7 }}", "output.data.nope", false},
		{"{{ output.data.nope.deeper }}", "output.data.nope.deeper", nil},
		{"{{ output['da' ]['x'] }}", "output['da' ]['x']", nil},
		{"{{ output.items[5] }}", "output.items[5]", nil},
		{"{{ nothere }}", "nothere", nil},
		{"{{ output.answer.x }}", "output.answer.x", nil}, // through a string
		{"{{ output.score > 7 and nothere }}", "", false}, // short-circuit: not evaluated
		{"{{state.missing}} == billing", "state.missing", false},
		{"{{state.n}} == null", "", true},
		{"output.data.nope", "output.data.nope", nil},
		{"output.data.nothing", "", nil},
		{"to_array(output.nope)", "output.nope", []any{nil}},
		{`"email-composer".nope`, `"email-composer".nope`, nil},
		{"nothere.items[0].x", "nothere.items", nil},
		{"output.nope || 'fallback'", "", "fallback"}, // || operands are optional
		{"not_null(output.nope, output.score)", "", 6.0},
		{"output.items[?x == nope]", "", []any{"a", "b"}}, // inside a filter: relative, unchecked
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Eval(testScope(), true)
			if tt.path == "" {
				if err != nil {
					t.Errorf("strict: unexpected error %v", err)
				}
			} else {
				var mp *MissingPathError
				if !errors.As(err, &mp) {
					t.Fatalf("strict: err = %v, want *MissingPathError", err)
				}
				if mp.Path != tt.path {
					t.Errorf("Path = %q, want %q", mp.Path, tt.path)
				}
			}
			got, err := e.Eval(testScope(), false)
			if err != nil {
				t.Fatalf("non-strict: %v", err)
			}
			if !reflect.DeepEqual(got, tt.lax) {
				t.Errorf("non-strict = %#v, want %#v", got, tt.lax)
			}
		})
	}
	err := (&MissingPathError{Path: "output.data.score"}).Error()
	if err != `path "output.data.score" does not exist` {
		t.Errorf("Error() = %s", err)
	}
}

func TestRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want []Ref
	}{
		{"steps.enrich.x", []Ref{{"steps", "enrich"}}},
		{"read.output", []Ref{{"read", "output"}}},
		{"input", []Ref{{"input", ""}}},
		{`"email-composer".output`, []Ref{{"email-composer", "output"}}},
		{`"email-composer"."x y".z`, []Ref{{"email-composer", "x y"}}},
		{"length(output.items) > `0`", []Ref{{"output", "items"}}},
		{"a.b[0].c", []Ref{{"a", "b"}}},
		{"a[0].b", []Ref{{"a", ""}}},
		{"items[*].name", []Ref{{"items", ""}}},
		{"items[?kind == other].name", []Ref{{"items", ""}}},
		{"sort_by(list, &age)", []Ref{{"list", ""}}},
		{"{x: a.b, y: [c.d, e]}", []Ref{{"a", "b"}, {"c", "d"}, {"e", ""}}},
		{"a.b | c.d", []Ref{{"a", "b"}}},
		{"a.b && !z.y || w == v.u", []Ref{{"a", "b"}, {"v", "u"}, {"w", ""}, {"z", ""}}},
		{"steps.a.x == steps.b.y", []Ref{{"steps", "a"}, {"steps", "b"}}},
		{"@", []Ref{{"@", ""}}},
		{"*", []Ref{{"@", ""}}},
		{"keys(@)", []Ref{{"@", ""}}},
		{"[0]", []Ref{{"@", ""}}},
		{"length(@) > `0` && a.b", []Ref{{"@", ""}, {"a", "b"}}},
		{"`1`", nil},
		{"{{ steps.sibling.output > 1 }}", []Ref{{"steps", "sibling"}}},
		{"{{ a['x-y'].z and b[0] and c }}", []Ref{{"a", "x-y"}, {"b", ""}, {"c", ""}}},
		{"{{ 'x' in [a.b, b] }}", []Ref{{"a", "b"}, {"b", ""}}},
		{"{{state.x}} == billing", []Ref{{"state", "x"}}},
		{"{{steps.sibling.v}} == {{ node_results.email-composer.ok }}", []Ref{{"node_results", "email-composer"}, {"steps", "sibling"}}},
		{"{{ 1 }} == 1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Refs(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Refs = %v, want %v", got, tt.want)
			}
		})
	}
}

// countingScope records which names were looked up and is not a Rooter.
type countingScope struct {
	m      map[string]any
	mu     sync.Mutex
	looked []string
}

func (c *countingScope) Lookup(name string) (any, bool) {
	c.mu.Lock()
	c.looked = append(c.looked, name)
	c.mu.Unlock()
	v, ok := c.m[name]
	return v, ok
}

type rootScope struct{ countingScope }

func (r *rootScope) Root() map[string]any { return r.m }

func TestJMESPathLooksUpOnlyReferencedRoots(t *testing.T) {
	t.Parallel()
	big := map[string]any{}
	for i := 0; i < 10000; i++ {
		big["node"+strings.Repeat("x", i%7)+string(rune('a'+i%26))] = i
	}
	big["output"] = map[string]any{"score": 9.0}
	cs := &countingScope{m: big}
	e, _ := Parse("output.score > `5`")
	ok, err := e.Test(cs, true)
	if err != nil || !ok {
		t.Fatalf("Test = %v, %v", ok, err)
	}
	if !reflect.DeepEqual(cs.looked, []string{"output"}) {
		t.Errorf("looked up %v, want [output]", cs.looked)
	}

	// Reading @ uses Root when available...
	rs := &rootScope{countingScope{m: map[string]any{"a": 1.0, "b": 2.0}}}
	e, _ = Parse("length(keys(@))")
	v, err := e.Eval(rs, false)
	if err != nil || v != 2.0 {
		t.Errorf("Eval with Rooter = %v, %v", v, err)
	}
	// ...and an empty context otherwise.
	v, err = e.Eval(&countingScope{m: map[string]any{"a": 1.0}}, false)
	if err != nil || v != 0.0 {
		t.Errorf("Eval without Rooter = %v, %v", v, err)
	}
	// A nil scope behaves as empty.
	v, err = e.Eval(nil, false)
	if err != nil || v != 0.0 {
		t.Errorf("Eval(nil) = %v, %v", v, err)
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"length(output.score)",      // JMESPath type error
		"{{ output.score|length }}", // filter on a number
		"{{ -output.answer }}",      // negating text
		"{{ x }} == {{ output.data|length|upper|length + }}",
	} {
		e, err := Parse(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); ok && strings.Contains(src, "+") {
				continue
			}
			t.Fatalf("%s: %v", src, err)
		}
		_, err = e.Eval(testScope(), false)
		var ee *EvalError
		if !errors.As(err, &ee) {
			t.Errorf("%s: err = %v (%T), want *EvalError", src, err, err)
			continue
		}
		if ee.Src != src || !strings.HasPrefix(ee.Error(), "cannot evaluate ") {
			t.Errorf("%s: %q %q", src, ee.Src, ee.Error())
		}
	}
}

func TestTemplateRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want any
	}{
		{"{{ output.items }}", []any{"a", "b"}},
		{" {{ output.score }} ", 6.0},
		{"{{ output.data.nothing }}", nil},
		{"Hello {{ input.name }}!", "Hello Dr Jones!"},
		{"{{ output.score }} / {{ output.items }} / {{ state.n }} / {{ output.data }}", `6 / ["a","b"] /  / {"nothing":null,"score":8}`},
		{"{{ output.score > 5 }}-{{ 'a<b' }}", "true-a<b"},
		{"no placeholders", "no placeholders"},
		{"", ""},
		{"{{ output.answer }}{{ output.answer }}", "forty-twoforty-two"},
		{"1e21={{ 1e21 }} small={{ 0.0000001 }} n={{ output.count }}", "1e21=1e+21 small=1e-7 n=3"},
		{"}} stray", "}} stray"},
	}
	for _, tt := range tests {
		tp, err := ParseTemplate(tt.src)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		got, err := tp.Render(testScope(), false)
		if err != nil {
			t.Fatalf("%q: %v", tt.src, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: Render = %#v, want %#v", tt.src, got, tt.want)
		}
	}
	tp, _ := ParseTemplate("Dear {{ input.name }}, re {{ steps.enrich.x }} {{ input.zip }}")
	if want := []Ref{{"input", "name"}, {"input", "zip"}, {"steps", "enrich"}}; !reflect.DeepEqual(tp.Refs(), want) {
		t.Errorf("Refs = %v", tp.Refs())
	}
	tp, _ = ParseTemplate("x {{ output.nope }} y")
	var mp *MissingPathError
	if _, err := tp.Render(testScope(), true); !errors.As(err, &mp) || mp.Path != "output.nope" {
		t.Errorf("strict Render err = %v", err)
	}
	_, err := ParseTemplate("ok {{ a }} then {{ b > }}")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Pos != 23 {
		t.Errorf("ParseTemplate error = %v", err)
	}
	_, err = ParseTemplate("ok {{ a ")
	if !errors.As(err, &se) || se.Pos != 3 || !strings.Contains(se.Msg, "unterminated") {
		t.Errorf("ParseTemplate unterminated = %v", err)
	}
}

func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	srcs := []string{"length(output.items) > `0`", "{{state.x}} == billing", "{{ output.data.score > 7 }}", "output.score"}
	var exprs []*Expr
	for _, s := range srcs {
		e, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		exprs = append(exprs, e)
	}
	scope := testScope()
	other := &countingScope{m: scope}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				for _, e := range exprs {
					a, err1 := e.Eval(scope, true)
					b, err2 := e.Eval(other, true)
					if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
						t.Errorf("%s: %v %v / %v %v", e.Source(), a, err1, b, err2)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
