package expr

import (
	"fmt"
	"testing"
)

func TestBareWords(t *testing.T) {
	t.Parallel()
	known := func(n string) bool { return n == "input" || n == "output" || n == "state" || n == "fetch" }
	for _, c := range []struct{ src, want string }{
		{"category == billing", "[{billing category == true}]"},
		{"input.category == billing", "[{billing input.category == false}]"},
		{"billing != input.category", "[{billing input.category != false}]"},
		{`input.category == "billing"`, "[{billing input.category == false}]"}, // a quoted identifier is a path too
		{"input.category == 'billing'", "[]"},
		{"input.a == input.b && x == `1`", "[{x  == false}]"},
		{"fetch == input.x", "[]"}, // a node id is a name the context knows
		{"length(output.items) > `0`", "[]"},
		{"{{input.category}} == billing", "[]"}, // template comparison: a bare word is text
		{"{{ output.tier == gold }}", "[{gold output.tier == false}]"},
		{"{{ output.tier == 'gold' or not (state.x != silver) }}", "[{silver state.x != false}]"},
		{"{{ output.answer }}", "[]"},
	} {
		e, err := Parse(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got := BareWords(e, known)
		if s := fmt.Sprint(got); s != c.want && !(len(got) == 0 && c.want == "[]") {
			t.Errorf("%s: %v, want %s", c.src, s, c.want)
		}
	}
	b := BareWord{Word: "billing", Other: "category", Op: "=="}
	if b.Fix() != "{{category}} == billing or category == 'billing'" {
		t.Errorf("fix: %s", b.Fix())
	}
}

// == compares text exactly as it is: surrounding spaces are not trimmed
// (documented in docs/chain-format.md).
func TestEqualityIsUntrimmed(t *testing.T) {
	t.Parallel()
	s := MapScope{"state": map[string]any{"x": "billing "}}
	for _, src := range []string{"{{state.x}} == billing", "{{state.x}} == 'billing'", "{{ state.x == 'billing' }}", "state.x == 'billing'"} {
		e, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := e.Test(s, false); err != nil || ok {
			t.Errorf("%s with x = %q: %v %v, want false", src, "billing ", ok, err)
		}
	}
}
