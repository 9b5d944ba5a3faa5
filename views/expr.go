package views

import (
	"errors"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine/expr"
)

// ExprError is a parse error of an expression field.
type ExprError struct {
	Msg    string
	Pos    int // byte offset
	Col    int // 1-based rune column
	HasPos bool
}

func checkExpr(src string) *ExprError {
	_, err := expr.Parse(src)
	if err == nil {
		return nil
	}
	var se *expr.SyntaxError
	if errors.As(err, &se) {
		pos := min(max(se.Pos, 0), len(src))
		return &ExprError{Msg: se.Msg, Pos: pos, Col: utf8.RuneCountInString(src[:pos]) + 1, HasPos: true}
	}
	return &ExprError{Msg: err.Error()}
}

func spelling(src string) string {
	e, err := expr.Parse(src)
	if err != nil {
		return ""
	}
	switch e.Spelling() {
	case expr.Comparison:
		return "template comparison"
	case expr.Guard:
		return "guard template"
	}
	return "JMESPath"
}
