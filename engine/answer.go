package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The bounds of an answer as a door receives it.
const (
	// MaxAnswerComment bounds an answer's comment (characters).
	MaxAnswerComment = 2000
	// MaxPauseID bounds a pause id (bytes): node ids are at most 256
	// bytes; a pause id adds an item index or a sub-chain's id.
	MaxPauseID = 1024
)

// AnswerRequest is what a door received to resume a paused or failed run
// (the API's body, the run page's form), before it means anything: an
// action, a value (HasValue: one was given, null too), a comment, and a
// state patch. An action or a value makes it an answer to a pause.
type AnswerRequest struct {
	Action   string
	Value    any
	HasValue bool
	Comment  string
	Modified map[string]any
}

// AnswerRuleError: an answer breaks a rule every answer keeps, whatever
// the pause (checked before the pause is looked at; AnswerError is the
// pause's own). Field names what: action, value, comment, modified_state.
type AnswerRuleError struct {
	Field string
	Msg   string
	code  string
}

func (e *AnswerRuleError) Code() string  { return e.code }
func (e *AnswerRuleError) Error() string { return e.Msg }

// ReadAnswer checks r against the rules of every answer and returns what
// it means: the answer (NewAnswer, its comment trimmed; nil when r answers
// nothing: the resume of a failed run) and the state patch (only without
// an answer). The errors are *AnswerRuleError.
func ReadAnswer(r AnswerRequest) (*ResumeValue, map[string]any, error) {
	bad := func(field, format string, a ...any) error {
		return &AnswerRuleError{Field: field, Msg: fmt.Sprintf(format, a...), code: CodeInvalidAnswer}
	}
	switch r.Action {
	case "", ActionApprove, ActionReject, ActionRespond:
	default:
		return nil, nil, bad("action", "action must be approve, reject or respond, got %q", r.Action)
	}
	if n := utf8.RuneCountInString(r.Comment); n > MaxAnswerComment {
		return nil, nil, bad("comment", "comment is %d characters, over the limit of %d", n, MaxAnswerComment)
	}
	if r.Action == ActionRespond && !r.HasValue {
		return nil, nil, bad("value", "respond needs a value")
	}
	if r.Action == "" && !r.HasValue {
		if r.Comment != "" {
			return nil, nil, bad("comment", "a comment goes with an answer: add an action or a value")
		}
		return nil, r.Modified, nil
	}
	if r.Modified != nil { // the approved step must do what the person saw
		return nil, nil, &AnswerRuleError{Field: "modified_state", code: CodeAnswerPatchesState,
			Msg: "an answer to a pause cannot patch the run's state: leave out modified_state (patching state is a re-run's, or the resume of a failed run's)"}
	}
	v := NewAnswer(r.Action, r.Value, r.HasValue)
	v.Comment = strings.TrimSpace(r.Comment)
	return v, nil, nil
}
