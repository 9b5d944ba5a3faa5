package chain

import (
	"strings"
	"testing"
)

// An expression error says where in line:column form (1-based, characters),
// in the issue's fields and in its message, like the designer's field check.
func TestExpressionIssuePlaceIsLineColumn(t *testing.T) {
	t.Parallel()
	c := &Chain{Name: "p", Nodes: []Node{
		{ID: "a", Kind: KindTool, Name: "echo", InputMap: map[string]string{"x": "'é' ==\n  +"}},
	}}
	var got *Issue
	for _, is := range Validate(c) {
		if is.Rule == RuleExpressionSyntax {
			got = &is
		}
	}
	if got == nil {
		t.Fatal("no expression_syntax issue")
	}
	// byte 10 is the "+": line 2, column 3
	if got.Pos == nil || *got.Pos != 10 || got.Line != 2 || got.Column != 3 {
		t.Fatalf("pos/line/column = %v/%d/%d, want 10/2/3: %s", *got.Pos, got.Line, got.Column, got.Message)
	}
	if !strings.Contains(got.Message, "line 2, column 3") || strings.Contains(got.Message, "position") {
		t.Errorf("message %q should say line 2, column 3", got.Message)
	}
}

func TestExprPlace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		src       string
		pos       int
		line, col int
	}{{"abc", 0, 1, 1}, {"abc", 3, 1, 4}, {"ab\ncd", 4, 2, 2}, {"ééx", 4, 1, 3}, {"x", 99, 1, 2}} {
		if l, c := ExprPlace(tc.src, tc.pos); l != tc.line || c != tc.col {
			t.Errorf("ExprPlace(%q, %d) = %d:%d, want %d:%d", tc.src, tc.pos, l, c, tc.line, tc.col)
		}
	}
}
