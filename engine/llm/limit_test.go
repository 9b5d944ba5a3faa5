package llm

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A body at the cap is read whole; one byte more fails with the cap named.
func TestLimitedClientCapsTheBody(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	for _, tc := range []struct {
		limit   int64
		wantErr bool
	}{{1000, false}, {1001, false}, {999, true}, {1, true}} {
		res, err := LimitedClient(srv.Client(), tc.limit).Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		var tl *TooLargeError
		if tc.wantErr {
			if !errors.As(err, &tl) || tl.Limit != tc.limit {
				t.Errorf("limit %d: err = %v, want a TooLargeError naming %d", tc.limit, err, tc.limit)
			}
			if int64(len(got)) > tc.limit {
				t.Errorf("limit %d: read %d bytes", tc.limit, len(got))
			}
			continue
		}
		if err != nil || string(got) != body {
			t.Errorf("limit %d: read %d bytes, err %v; want the whole body", tc.limit, len(got), err)
		}
	}
}

func TestConfigCheckRefusesNoClient(t *testing.T) {
	t.Parallel()
	if err := (Config{}).Check(); err == nil || !strings.Contains(err.Error(), "address guard") {
		t.Fatalf("Check() = %v, want a refusal that names the address guard", err)
	}
	if got := (Config{}).ResponseLimit(); got != DefaultMaxResponseBytes {
		t.Fatalf("ResponseLimit() = %d", got)
	}
}
