package views

import (
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
)

// ExprError is a parse error of an expression field.
type ExprError struct {
	Msg    string
	Pos    int // byte offset
	Line   int // 1-based
	Col    int // 1-based, in characters
	HasPos bool
}

// Place says where the error is the way the Validation panel does:
// "line L, column C", both 1-based.
func (e *ExprError) Place() string { return fmt.Sprintf("line %d, column %d", e.Line, e.Col) }

func checkExpr(src string) *ExprError {
	_, err := expr.Parse(src)
	if err == nil {
		return nil
	}
	var se *expr.SyntaxError
	if errors.As(err, &se) {
		pos := min(max(se.Pos, 0), len(src))
		line, col := chain.ExprPlace(src, pos)
		return &ExprError{Msg: se.Msg, Pos: pos, Line: line, Col: col, HasPos: true}
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
