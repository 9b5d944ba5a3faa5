package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/store/sqlite"
)

// pingFails is a store whose ping fails while down is set (the database
// went away); everything else works.
type pingFails struct {
	*sqlite.DB
	down atomic.Bool
}

func (p *pingFails) Ping(ctx context.Context) error {
	if p.down.Load() {
		return errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
	}
	return p.DB.Ping(ctx)
}

// /livez asks nothing of the store; /readyz and /healthz answer 503 with
// the reason while the store's ping fails, and 200 again once it answers.
// None needs the token. A failed ping is logged once, then summarised.
func TestReadyzFollowsTheStore(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var logs lockedBuffer
	store := &pingFails{DB: db}
	srv, err := New(Config{Token: authToken, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testDeps(t, store, testRegistry(), nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)

	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		r := do(t, ts, "GET", p, nil)
		wantStatus(t, r, http.StatusOK)
		if r.json(t)["status"] != "ok" {
			t.Fatalf("%s: %s", p, r.body)
		}
	}
	store.down.Store(true)
	wantStatus(t, do(t, ts, "GET", "/livez", nil), http.StatusOK)
	for _, p := range []string{"/readyz", "/healthz", "/readyz"} {
		r := do(t, ts, "GET", p, nil)
		wantStatus(t, r, http.StatusServiceUnavailable)
		if r.errCode(t) != "store_unavailable" || r.errDetails(t)["reason"] != "error" || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s with the store down: %s %v", p, r.body, r.header)
		}
		if strings.Contains(string(r.body), "127.0.0.1:5432") {
			t.Fatalf("%s shows the driver's error to an unauthenticated caller: %s", p, r.body)
		}
	}
	if n := strings.Count(logs.String(), "readiness: the store does not answer"); n != 1 || !strings.Contains(logs.String(), "connection refused") {
		t.Fatalf("3 failed pings logged %d times, want once with the error:\n%s", n, logs.String())
	}
	srv.pingLog.Flush()
	if !strings.Contains(logs.String(), "summary=true count=2") {
		t.Fatalf("no summary of the 2 further failed pings:\n%s", logs.String())
	}
	store.down.Store(false)
	wantStatus(t, do(t, ts, "GET", "/readyz", nil), http.StatusOK)
}
