package expr

import (
	"errors"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	t.Parallel()
	names := []string{"input", "output", "state", "steps", "item", "fetch", "summarize"}
	tests := []struct{ word, want string }{
		{"outptu", "output"}, // swap
		{"ouput", "output"},  // deletion
		{"stat", "state"},
		{"summarise", "summarize"},
		{"fecth", "fetch"},
		{"output", ""}, // exact: nothing to suggest
		{"zebra", ""},  // nothing close
		{"x", ""},      // too short to guess from one edit away from nothing
		{"", ""},       //
		{strings.Repeat("a", 100), ""},
	}
	for _, tt := range tests {
		if got := Suggest(tt.word, names); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

func TestUnknownFunctionDidYouMean(t *testing.T) {
	t.Parallel()
	_, err := Parse("lenght(output.items) > `0`")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a syntax error", err)
	}
	if !strings.Contains(se.Msg, "did you mean length()?") {
		t.Errorf("Msg = %q, want a did-you-mean for length()", se.Msg)
	}
	_, err = Parse("qqqqqq(a)")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("err = %v, want no suggestion for a name close to nothing", err)
	}
}

func TestFunctionsSignatures(t *testing.T) {
	t.Parallel()
	fs := Functions()
	if len(fs) != len(jmesSigs) {
		t.Fatalf("%d functions, want %d", len(fs), len(jmesSigs))
	}
	got := map[string]string{}
	for _, f := range fs {
		got[f.Name] = f.Signature
	}
	for name, want := range map[string]string{
		"length":  "length(array|string|object) → number",
		"sort_by": "sort_by(array, &expr) → array",
		"merge":   "merge(object, …) → object",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
}
