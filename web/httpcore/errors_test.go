package httpcore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
)

// Every error code has its status, and the table has no code this test
// does not know.
func TestErrorStatusTable(t *testing.T) {
	t.Parallel()
	want := map[string]int{
		EBADREQUEST:   400,
		EUNAUTHORIZED: 401,
		EFORBIDDEN:    403,
		ENOTFOUND:     404,
		ENOTALLOWED:   405,
		ECONFLICT:     409,
		ETOOLARGE:     413,
		EMISDIRECTED:  421,
		EINVALID:      422,
		EPRECONDITION: 428,
		ESTALE:        412,
		EMEDIATYPE:    415,
		ETOOMANY:      429,
		EINTERNAL:     500,
		EUNAVAILABLE:  503,
		ENOSPACE:      507,
		EUPSTREAM:     502,
		ELEASELOST:    409,
	}
	for code, status := range want {
		if got := ErrorStatusCode(code); got != status {
			t.Errorf("ErrorStatusCode(%q) = %d, want %d", code, got, status)
		}
		if code == ELEASELOST {
			continue // shares 409 with conflict, which the status reads as
		}
		if got := CodeForStatus(status); got != code {
			t.Errorf("CodeForStatus(%d) = %q, want %q", status, got, code)
		}
	}
	if len(errorStatus) != len(want) {
		t.Errorf("the table has %d codes, the test knows %d", len(errorStatus), len(want))
	}
	if got := ErrorStatusCode("no such code"); got != 500 {
		t.Errorf("unknown code: %d, want 500", got)
	}
	if CodeForStatus(418) != EBADREQUEST || CodeForStatus(504) != EINTERNAL {
		t.Error("statuses outside the table: want bad_request below 500, internal above")
	}
}

// The errors of the layers below map to one status and reason each.
func TestDomainErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("get: %w", store.ErrNotFound), 404, "not_found"},
		{store.ErrInvalid, 422, "invalid"},
		{&store.ConflictError{Name: "x"}, 409, "name_taken"},
		{&store.VersionConflictError{Base: 1, Current: 2}, 409, "version_conflict"},
		{store.Errorf(store.ETOOLARGE, "too big"), 413, "too_large"},
		{fmt.Errorf("wrapped: %w", store.Errorf(store.EUNAVAILABLE, "later")), 503, "unavailable"},
		{&engine.ChainResumeError{ChainCheckpointError: engine.ChainCheckpointError{RunID: "r", Msg: "m"}}, 422, engine.CodeResume},
		{&engine.AlreadyResumedError{RunID: "r"}, 409, engine.CodeAlreadyResumed},
		{&engine.ChainCheckpointError{RunID: "r", Msg: "m"}, 404, engine.CodeCheckpoint},
		{fmt.Errorf("resume: %w", runs.ErrShutdown), 503, "shutting_down"},
		{errors.New("database or disk is full"), 507, "insufficient_storage"},
		{Error(EBADREQUEST, "bad_json", "x", nil), 400, "bad_json"},
	} {
		ae := DomainError(tc.err)
		if ae == nil || ae.Status() != tc.status || ae.Code != tc.code {
			t.Errorf("%v: %+v, want %d %s", tc.err, ae, tc.status, tc.code)
		}
	}
	if DomainError(errors.New("boom")) != nil {
		t.Error("an unknown error mapped to a domain error; it must stay internal")
	}
	if ae, ok := StoreErr(store.Errorf(store.ENOTFOUND, "nope"), `run "x"`).(*APIError); !ok || ae.Message != `run "x" not found` || ae.Status() != 404 {
		t.Errorf("storeErr names the thing looked up: %v", ae)
	}
}
