package store

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorCodeAndMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		err       error
		code, msg string
	}{
		{"nil", nil, "", ""},
		{"a driver's error", errors.New("disk I/O error"), EINTERNAL, "internal error"},
		{"a code", Errorf(ETOOLARGE, "the output is %d bytes", 9), ETOOLARGE, "the output is 9 bytes"},
		{"a wrapped sentinel", fmt.Errorf("store: list runs: %w: bad cursor", ErrInvalid), EINVALID, "store: list runs: invalid: bad cursor"},
		{"wrapped twice", fmt.Errorf("open: %w", fmt.Errorf("%w", ErrUnavailable)), EUNAVAILABLE, "open: unavailable"},
		{"a typed conflict", fmt.Errorf("save: %w", &VersionConflictError{ChainID: "c", Base: 1, Current: 2}), ECONFLICT,
			"save: chain c was changed: the save is based on version 1 but the current version is 2"},
		{"a taken name", &ConflictError{Name: "a"}, ECONFLICT, `chain name "a" is already taken`},
		{"a seq stored twice", &EventSeqError{RunID: "r", Seq: 2, After: 3}, ECONFLICT,
			"event seq 2 of run r does not come after seq 3: a run's events are stored once each, in seq order"},
		{"a stale lease", fmt.Errorf("append: %w", &LeaseLostError{RunID: "r", Epoch: 3}), ELEASELOST,
			"append: run r: the lease of epoch 3 was lost (another process took the run over); the write was refused"},
	} {
		if got := ErrorCode(tc.err); got != tc.code {
			t.Errorf("%s: code %q, want %q", tc.name, got, tc.code)
		}
		if got := ErrorMessage(tc.err); got != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, got, tc.msg)
		}
	}
}

// The typed errors still answer errors.Is for their kind, and only for it.
func TestTypedErrorsUnwrapToTheirKind(t *testing.T) {
	t.Parallel()
	name := fmt.Errorf("create: %w", &ConflictError{Name: "a"})
	if !errors.Is(name, ErrNameTaken) || errors.Is(name, ErrVersionConflict) {
		t.Errorf("name conflict: Is(ErrNameTaken)=%v Is(ErrVersionConflict)=%v", errors.Is(name, ErrNameTaken), errors.Is(name, ErrVersionConflict))
	}
	stale := &VersionConflictError{}
	if !errors.Is(stale, ErrVersionConflict) || errors.Is(stale, ErrNameTaken) {
		t.Error("version conflict is not (only) ErrVersionConflict")
	}
	if !errors.Is(&EventSeqError{}, ErrSeqConflict) {
		t.Error("seq error is not ErrSeqConflict")
	}
}
