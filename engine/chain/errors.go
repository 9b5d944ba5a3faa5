package chain

import (
	"fmt"
	"strings"
)

// Codes of a chain document's errors: it does not decode, or does not
// validate.
const (
	CodeInvalid = "chain_invalid"
	CodeDecode  = "chain_decode"
)

// ValidationError: a run was refused because the chain has validation errors.
type ValidationError struct {
	Issues []Issue
}

func (e *ValidationError) Code() string { return CodeInvalid }

func (e *ValidationError) Error() string {
	var errs []string
	for _, is := range e.Issues {
		if is.Severity == SeverityError {
			errs = append(errs, is.String())
		}
	}
	if len(errs) == 1 {
		return "chain is invalid: " + errs[0]
	}
	return fmt.Sprintf("chain is invalid (%d errors): %s", len(errs), strings.Join(errs, "; "))
}

// DecodeError: the document is not a well-formed chain. Path names the place
// ("nodes[2] \"fetch\".retry.max_attempts"); Rule says what kind of mistake
// it is (DecodeSyntax, DecodeWrongType, …; "" when the decoder names none).
type DecodeError struct {
	Path string
	Msg  string
	Rule string
	// Line and Column place a JSON syntax error (1-based; 0 otherwise), which
	// Msg also says; placeless is Msg without the place.
	Line, Column int
	placeless    string
}

func (e *DecodeError) Code() string { return CodeDecode }

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}
