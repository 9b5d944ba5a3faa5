package web

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainstudio/studio/store/sqlite"
)

// concretePath fills a route's parameters with placeholder values.
func concretePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		switch {
		case strings.HasPrefix(s, ":"):
			parts[i] = "x"
		case s == "*":
			parts[i] = "x.css"
		}
	}
	return strings.Join(parts, "/")
}

// With a token, every route but /healthz, /login and /static/* answers 401
// without it and something else with it.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-0123456789"
	srv, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	// The same wrong token from one address on every route: more than the
	// limiter lets through, per address and per token.
	srv.auth.fails.burst, srv.auth.credFails.burst = 1e9, 1e9
	routes := srv.echo.Routes()
	if len(routes) < 20 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		if rt.Method == "echo_route_not_found" {
			continue
		}
		path := concretePath(rt.Path)
		public := publicPath(rt.Path)
		r := do(t, ts, rt.Method, path, nil, "Accept", "application/json")
		if public {
			if r.status == http.StatusUnauthorized {
				t.Errorf("%s %s is public but answered 401", rt.Method, rt.Path)
			}
			continue
		}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d, want 401", rt.Method, rt.Path, r.status)
			continue
		}
		if r.errCode(t) != "unauthorized" {
			t.Errorf("%s %s: 401 body %s", rt.Method, rt.Path, r.body)
		}
		if r := do(t, ts, rt.Method, path, nil, "Authorization", "Bearer wrong"); r.status != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d", rt.Method, rt.Path, r.status)
		}
		if r := do(t, ts, rt.Method, path, nil, "Authorization", "Bearer "+token, "Accept", "application/json"); r.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401", rt.Method, rt.Path)
		}
	}
	// The sign-in cookie works too; the token itself as a cookie does not.
	r := do(t, ts, "GET", "/v1/chains", nil, "Cookie", signIn(t, ts, token).String())
	wantStatus(t, r, 200)
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Cookie", cookieName+"="+token), http.StatusUnauthorized)
}

func TestCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	r := do(t, ts, "POST", "/v1/chains", `{"name":"x","nodes":[]}`, "Origin", "http://evil.example")
	wantStatus(t, r, http.StatusForbidden)
	if r.errCode(t) != "cross_site" {
		t.Fatalf("%s", r.body)
	}
	for _, m := range []string{"PUT", "DELETE"} {
		wantStatus(t, do(t, ts, m, "/v1/chains/x", nil, "Origin", "http://evil.example"), http.StatusForbidden)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", `{}`, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	// Same origin is fine.
	wantStatus(t, do(t, ts, "POST", "/v1/chains", `{"name":"x","nodes":[]}`, "Origin", ts.URL), http.StatusCreated)
}

func TestSecurityHeadersAndJSONErrors(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for _, p := range []string{"/v1/chains", "/v1/no-such-route", "/v1/runs/nope"} {
		r := do(t, ts, "GET", p, nil)
		for h, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
			"Referrer-Policy":        "same-origin",
		} {
			if got := r.header.Get(h); got != want {
				t.Errorf("%s: %s = %q, want %q", p, h, got, want)
			}
		}
		if !strings.Contains(r.header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: CSP %q", p, r.header.Get("Content-Security-Policy"))
		}
		if r.status >= 400 {
			if r.errCode(t) == "" || strings.Contains(string(r.body), "goroutine") {
				t.Errorf("%s: error body %s", p, r.body)
			}
		}
	}
	r := do(t, ts, "PATCH", "/v1/chains", nil)
	wantStatus(t, r, http.StatusMethodNotAllowed)
	_ = r.errCode(t)
}

func TestOffLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() }) // after the run services close
	if _, err := New(Config{Addr: "0.0.0.0:0", Logger: testLogger()}, testDeps(t, db, testRegistry(), nil)); err == nil || !strings.Contains(err.Error(), "token") {
		t.Fatalf("off loopback without a token: %v", err)
	}
	srv, err := New(Config{Addr: "0.0.0.0:0", Token: "t", Logger: testLogger()}, testDeps(t, db, testRegistry(), nil))
	if err != nil {
		t.Fatalf("off loopback with a token: %v", err)
	}
	srv.Shutdown(ctx)
	srv, err = New(Config{Addr: "127.0.0.1:0", Logger: testLogger()}, testDeps(t, db, testRegistry(), nil))
	if err != nil {
		t.Fatalf("loopback without a token: %v", err)
	}
	srv.Shutdown(ctx)
}

// The OpenAPI description is served and names every /v1 route.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	r := do(t, ts, "GET", "/v1/openapi.json", nil)
	wantStatus(t, r, 200)
	var spec struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(r.body, &spec); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Fatalf("openapi %q", spec.OpenAPI)
	}
	n := 0
	for _, rt := range srv.echo.Routes() {
		if !strings.HasPrefix(rt.Path, "/v1/") && rt.Path != "/healthz" {
			continue
		}
		parts := strings.Split(rt.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + p[1:] + "}"
			}
		}
		p := strings.Join(parts, "/")
		if _, ok := spec.Paths[p][strings.ToLower(rt.Method)]; !ok {
			t.Errorf("openapi.json does not describe %s %s", rt.Method, p)
		}
		n++
	}
	if n < 20 {
		t.Fatalf("only %d API routes", n)
	}
}
