package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

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
	if err := srv.Runs.Shutdown(context.Background()); err != nil {
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
