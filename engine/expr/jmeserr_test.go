package expr

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// jmesTypeErrorCases are expressions that give a function the wrong type over
// jmesTypeErrorData, with the words the error says (""; a syntax error).
var jmesTypeErrorData = `{"name":"Ada","n":3,"langs":["en","fr"],"mixed":[1,"a"],"obj":{"a":1},"people":[{"age":3},{"age":"x"}],"nul":null}`
var jmesTypeErrorCases = []struct{ src, want string }{
	{"{name: name, langs: length(languages)}", `length() needs an array, string or object; languages is missing (null)`},
	{"length(n)", `length() needs an array, string or object; n is a number 3`},
	{"length(nul)", `length() needs an array, string or object; nul is null`},
	{"length(obj.missing.deeper)", `length() needs an array, string or object; obj.missing.deeper is missing (null)`},
	{"abs(name)", `abs() needs a number; name is a string "Ada"`},
	{"avg(mixed)", `avg() needs an array of numbers; mixed is an array [1,"a"]`},
	{"ceil(langs)", `ceil() needs a number; langs is an array ["en","fr"]`},
	{"floor(obj)", `floor() needs a number; obj is an object {"a":1}`},
	{"contains(n, `1`)", `contains() needs an array or string as its first argument; n is a number 3`},
	{"ends_with(name, n)", `ends_with() needs a string as its second argument; n is a number 3`},
	{"starts_with(n, 'A')", `starts_with() needs a string as its first argument; n is a number 3`},
	{"join(', ', mixed)", `join() needs an array of strings as its second argument; mixed is an array [1,"a"]`},
	{"keys(langs)", `keys() needs an object; langs is an array ["en","fr"]`},
	{"values(name)", `values() needs an object; name is a string "Ada"`},
	{"max(mixed)", `max() needs an array of numbers or array of strings; mixed is an array [1,"a"]`},
	{"min(obj)", `min() needs an array of numbers or array of strings; obj is an object {"a":1}`},
	{"sort(mixed)", `sort() needs an array of numbers or array of strings; mixed is an array [1,"a"]`},
	{"sum(langs)", `sum() needs an array of numbers; langs is an array ["en","fr"]`},
	{"reverse(n)", `reverse() needs an array or string; n is a number 3`},
	{"merge(obj, n)", `merge() needs an object as its second argument; n is a number 3`},
	{"map(&a, n)", `map() needs an array as its second argument; n is a number 3`},
	{"map(name, langs)", `map() needs an expression like &field as its first argument; name is a string "Ada"`},
	{"sort_by(obj, &age)", `sort_by() needs an array as its first argument; obj is an object {"a":1}`},
	{"sort_by(people, age)", `sort_by() needs an expression like &field as its second argument; age is missing (null)`},
	{"sort_by(people, &age)", `sort_by() needs &age to give only numbers or only strings; for item 0 it is a number 3 but for item 1 a string "x"`},
	{"max_by(people, &nope)", `max_by() needs &nope to give only numbers or only strings; for item 0 it is missing (null)`},
	{"min_by(n, &age)", `min_by() needs an array as its first argument; n is a number 3`},
	// Inside projections, filters, pipes and other functions.
	{"people[*].length(age)", `length() needs an array, string or object; age is a number 3`},
	{"people[?length(age) > `0`]", `length() needs an array, string or object; age is a number 3`},
	{"langs | [0] | abs(@)", `abs() needs a number; @ is a string "en"`},
	{"length(keys(obj)) + abs(name)", ``}, // a syntax error, not this path
	{"to_number(name) || length(keys(langs))", `keys() needs an object; langs is an array ["en","fr"]`},
	{"sum(map(&length(@), langs)) > abs(name)", `abs() needs a number; name is a string "Ada"`},
	{"map(&abs(@), langs)", `abs() needs a number; @ is a string "en"`},
	{`"weird-key" || length(n)`, `length() needs an array, string or object; n is a number 3`},
	{"length('(,)') > length(n)", `length() needs an array, string or object; n is a number 3`},
}

// A function given the wrong type is explained in plain words: the
// function, what it accepts, the argument as written and what it was.
func TestJMESPathTypeErrorsInPlainWords(t *testing.T) {
	t.Parallel()
	var m map[string]any
	if err := json.Unmarshal([]byte(jmesTypeErrorData), &m); err != nil {
		t.Fatal(err)
	}
	for _, tc := range jmesTypeErrorCases {
		t.Run(tc.src, func(t *testing.T) {
			e, err := Parse(tc.src)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("want a syntax error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Eval(MapScope(m), false)
			var ee *EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v, want an *EvalError", err)
			}
			if ee.Msg != tc.want {
				t.Errorf("\n got %s\nwant %s", ee.Msg, tc.want)
			}
			if !strings.Contains(err.Error(), strconv.Quote(tc.src)) {
				t.Errorf("the error does not quote the expression: %v", err)
			}
		})
	}
}

func TestJMESPathArityIsASyntaxError(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"length(a, b)": "length() takes 1 argument, got 2",
		"join(a)":      "join() takes 2 arguments, got 1",
		"not_null()":   "not_null() needs at least 1 argument, got 0",
	} {
		_, err := Parse(src)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Msg != want {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}

// The transform tool's entry point explains errors over any data.
func TestExplainJMESPathError(t *testing.T) {
	t.Parallel()
	got := ExplainJMESPathError("[0].length(x)", []any{map[string]any{"x": 1.0}}, errors.New("Invalid type for: 1"))
	if got != "length() needs an array, string or object; x is a number 1" {
		t.Errorf("got %s", got)
	}
	if got := ExplainJMESPathError("a", map[string]any{}, errors.New("other")); got != "other" {
		t.Errorf("without a better explanation the cause stays: %s", got)
	}
}

// go-jmespath sorts sort_by's argument in place; the caller's data (another
// node's output) must not be reordered.
func TestSortByLeavesTheDataAlone(t *testing.T) {
	t.Parallel()
	e, err := Parse("sort_by(people, &age)[0].age")
	if err != nil {
		t.Fatal(err)
	}
	people := []any{map[string]any{"age": 3.0}, map[string]any{"age": 1.0}}
	v, err := e.Eval(MapScope{"people": people}, false)
	if err != nil || v != 1.0 {
		t.Fatalf("v=%v err=%v", v, err)
	}
	if people[0].(map[string]any)["age"] != 3.0 {
		t.Errorf("the input was sorted in place: %v", people)
	}
}

// The guard spelling's errors read the same way.
func TestGuardErrorsInPlainWords(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"{{ n | length }}": "the length filter needs a string, list or object; it got a number 3",
		"{{ -name }}":      `- needs a number; it got a string "Ada"`,
	} {
		e, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Eval(MapScope{"n": 3.0, "name": "Ada"}, false)
		var ee *EvalError
		if !errors.As(err, &ee) || ee.Msg != want {
			t.Errorf("%s: err = %v, want %q", src, err, want)
		}
	}
}
