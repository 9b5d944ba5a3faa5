package expr

import (
	"regexp"
	"strings"
	"testing"
)

// A syntax error speaks the language of the expression, never of the
// parser: no go-jmespath token name (tUnknown, tEOF, tRbracket, …) in any
// message, and "=" where "==" was meant says so.
func TestSyntaxErrorsNameNoParserTokens(t *testing.T) {
	t.Parallel()
	tokenName := regexp.MustCompile(`\bt[A-Z][A-Za-z]*\b`)
	for _, tc := range []struct{ src, want string }{
		{"a = 1", `did you mean "=="`},
		{"input.level = 'high'", `did you mean "=="`},
		{"`1` = `2`", `did you mean "=="`},
		{"items[?kind = 'x']", `did you mean "=="`},
		{"a =! b", `did you mean "!="`},
		{"a => b", `did you mean ">="`},
		{"a =< b", `did you mean "<="`},
		{"{{ a = b }}", `use "==" to compare`},
		{"a ==", ""}, {"a.", ""}, {"a[", ""}, {"foo(", ""}, {"a &&", ""}, {"a || ", ""},
		{"a ! b", ""}, {"a ==== b", ""}, {"'abc", ""}, {"a b", ""}, {")", ""}, {"a,b", ""},
		{"a.[", ""}, {"@@", ""}, {"#", ""}, {"a <> b", ""}, {"a[1:2:3:4]", ""}, {"a[:", ""},
		{"{a: }", ""}, {"{a b}", ""}, {"a[?b", ""}, {"&", ""}, {"a |", ""}, {"[a,", ""},
		{"a.b.", ""}, {"length(", ""}, {"a[\"b\"]", ""}, {"a.`1`", ""}, {"*.", ""}, {"a[*", ""},
	} {
		_, err := Parse(tc.src)
		if err == nil {
			t.Errorf("%q parses; want a syntax error", tc.src)
			continue
		}
		msg := err.Error()
		if m := tokenName.FindString(msg); m != "" {
			t.Errorf("%q: the message names the parser's token %s: %s", tc.src, m, msg)
		}
		if tc.want != "" && !strings.Contains(msg, tc.want) {
			t.Errorf("%q: %s; want it to say %s", tc.src, msg, tc.want)
		}
	}
}
