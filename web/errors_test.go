package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
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
		if got := codeForStatus(status); got != code {
			t.Errorf("codeForStatus(%d) = %q, want %q", status, got, code)
		}
	}
	if len(errorStatus) != len(want) {
		t.Errorf("the table has %d codes, the test knows %d", len(errorStatus), len(want))
	}
	if got := ErrorStatusCode("no such code"); got != 500 {
		t.Errorf("unknown code: %d, want 500", got)
	}
	if codeForStatus(418) != EBADREQUEST || codeForStatus(504) != EINTERNAL {
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
		{apiError(EBADREQUEST, "bad_json", "x", nil), 400, "bad_json"},
	} {
		ae := domainError(tc.err)
		if ae == nil || ae.Status() != tc.status || ae.Code != tc.code {
			t.Errorf("%v: %+v, want %d %s", tc.err, ae, tc.status, tc.code)
		}
	}
	if domainError(errors.New("boom")) != nil {
		t.Error("an unknown error mapped to a domain error; it must stay internal")
	}
	if ae, ok := storeErr(store.Errorf(store.ENOTFOUND, "nope"), `run "x"`).(*APIError); !ok || ae.Message != `run "x" not found` || ae.Status() != 404 {
		t.Errorf("storeErr names the thing looked up: %v", ae)
	}
}

// The handler answers with the table's status and the JSON body clients
// know: {"error": {"code", "message"}}.
func TestErrorHandlerUsesTheTable(t *testing.T) {
	t.Parallel()
	srv, _ := newTestServer(t)
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{store.Errorf(store.ECONFLICT, "clash"), 409, "conflict"},
		{echo.ErrMethodNotAllowed, 405, "method_not_allowed"},
		{echo.ErrNotFound, 404, "not_found"},
		{errors.New("secret detail"), 500, "internal"},
	} {
		rec := httptest.NewRecorder()
		c := srv.echo.NewContext(httptest.NewRequest("GET", "/v1/x", nil), rec)
		srv.errorHandler(tc.err, c)
		r := resp{status: rec.Code, body: rec.Body.Bytes()}
		if r.status != tc.status || r.errCode(t) != tc.code {
			t.Errorf("%v: %d %s, want %d %s", tc.err, r.status, r.body, tc.status, tc.code)
		}
	}
}

// Once the studio is stopping, a new run is refused with 503 and a reason,
// instead of being recorded as running and never started.
func TestStartRunWhileShuttingDown(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "late"))
	if err := srv.runs.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{"x":1}}`)
	wantStatus(t, r, http.StatusServiceUnavailable)
	if code := r.errCode(t); code != "shutting_down" {
		t.Fatalf("code %q: %s", code, r.body)
	}
	list := do(t, ts, "GET", "/v1/runs?chain="+id, nil).json(t)
	if n := len(list["runs"].([]any)); n != 0 {
		t.Fatalf("%d runs recorded for a refused start", n)
	}
}
