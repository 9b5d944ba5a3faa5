package store

import (
	"errors"
	"fmt"
)

// Error codes: what kind of failure a store error is, whatever the backend.
// The HTTP layer maps each code to one status in one table; callers branch
// on the code (ErrorCode), never on a backend's own error values.
const (
	ECONFLICT    = "conflict"    // the write clashes with the current state (name taken, stale base version, seq already stored)
	EINTERNAL    = "internal"    // a fault of the backend itself
	EINVALID     = "invalid"     // the request is malformed (empty name, bad cursor, no limit)
	ENOTFOUND    = "not_found"   // no such chain, version or run
	ETOOLARGE    = "too_large"   // a value is over a size the backend can store
	EUNAVAILABLE = "unavailable" // the backend cannot serve now (closed, unreachable); try again later
	ELEASELOST   = "lease_lost"  // a run's write from a process that no longer owns the run (its lease epoch is stale)
)

// Error is a store error with a code. Backends return it (or wrap it with
// fmt.Errorf("...: %w", err), or return a typed error below that unwraps to
// it), so that every caller can tell its kind with ErrorCode.
type Error struct {
	Code    string // one of the E* codes
	Message string // what went wrong, for a person
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the store error in err's chain: "" for nil,
// EINTERNAL for an error that carries none (a driver or I/O failure).
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the text of a store error for a person: err's whole
// text, which names what failed (the chain, the field), when err carries a
// code; "internal error" otherwise, so that a driver's message never reaches
// a client.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return err.Error()
	}
	return "internal error"
}

// The kinds of store error that callers test for with errors.Is. Backends
// wrap them with context (fmt.Errorf("%w: ...", ErrInvalid)) or return a
// typed error below that unwraps to one.
var (
	ErrNotFound        = &Error{Code: ENOTFOUND, Message: "not found"}
	ErrNameTaken       = &Error{Code: ECONFLICT, Message: "name taken"}
	ErrVersionConflict = &Error{Code: ECONFLICT, Message: "version conflict"}
	ErrSeqConflict     = &Error{Code: ECONFLICT, Message: "event seq already stored"}
	ErrInvalid         = &Error{Code: EINVALID, Message: "invalid"}
	ErrUnavailable     = &Error{Code: EUNAVAILABLE, Message: "unavailable"}
	ErrLeaseLost       = &Error{Code: ELEASELOST, Message: "lease lost"}
	// ErrAlreadyFired: a schedule's tick is already recorded (another
	// process fired it, or it was skipped). Nothing was written.
	ErrAlreadyFired = &Error{Code: ECONFLICT, Message: "the schedule's tick has already fired"}
	// ErrSignatureUsed: a webhook call's signature was accepted before,
	// within its window (a replay). Nothing was written.
	ErrSignatureUsed = &Error{Code: ECONFLICT, Message: "the webhook signature has been used already"}
)

// ErrNotPublished: a chain has no published version. Its code is ECONFLICT:
// the chain exists, but nothing of it may run by name until it is published.
var ErrNotPublished = &Error{Code: ECONFLICT, Message: "not published"}

// NotPublishedError: the chain was asked for at its published version and
// none is published. errors.Is(err, ErrNotPublished) is true.
type NotPublishedError struct {
	ChainID, Name string
}

func (e *NotPublishedError) Error() string {
	return fmt.Sprintf("chain %q has no published version: publish it, or run a version by number", e.Name)
}

func (e *NotPublishedError) Unwrap() error { return ErrNotPublished }

// ConflictError: a chain name is already used by another (non-deleted) chain.
// errors.Is(err, ErrNameTaken) is true; its code is ECONFLICT.
type ConflictError struct {
	Name    string
	ChainID string // the chain holding the name, when known
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("chain name %q is already taken", e.Name)
}

func (e *ConflictError) Unwrap() error { return ErrNameTaken }

// VersionConflictError: a save was based on a version that is no longer the
// chain's current one. Nothing was written. errors.Is(err, ErrVersionConflict)
// is true; its code is ECONFLICT.
type VersionConflictError struct {
	ChainID string
	Base    int
	Current int
}

func (e *VersionConflictError) Error() string {
	return fmt.Sprintf("chain %s was changed: the save is based on version %d but the current version is %d", e.ChainID, e.Base, e.Current)
}

func (e *VersionConflictError) Unwrap() error { return ErrVersionConflict }

// EventSeqError: an event's seq does not come after After, the run's last seq
// already stored or earlier in the same write. Nothing of the write is kept.
// errors.Is(err, ErrSeqConflict) is true; its code is ECONFLICT.
type EventSeqError struct {
	RunID string
	Seq   int64
	After int64
}

func (e *EventSeqError) Error() string {
	return fmt.Sprintf("event seq %d of run %s does not come after seq %d: a run's events are stored once each, in seq order", e.Seq, e.RunID, e.After)
}

func (e *EventSeqError) Unwrap() error { return ErrSeqConflict }

// LeaseLostError: a write of a run by a process whose lease on the run is
// no longer current (another process took the run over, bumping its epoch).
// Nothing of the write is kept. errors.Is(err, ErrLeaseLost) is true; its
// code is ELEASELOST.
type LeaseLostError struct {
	RunID string
	Epoch int64 // the writer's epoch
}

func (e *LeaseLostError) Error() string {
	return fmt.Sprintf("run %s: the lease of epoch %d was lost (another process took the run over); the write was refused", e.RunID, e.Epoch)
}

func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }
