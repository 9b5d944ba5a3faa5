package web

import (
	"net/http"
	"strings"
	"testing"
)

// With a token, pages send a browser without it to the login page, /metrics
// and the API answer 401, and nothing but /healthz, /login and /static/*
// is served; a path that only looks public gets nothing else.
func TestAccessWithToken(t *testing.T) {
	t.Parallel()
	const token = "access-token"
	srv, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	get := func(path string, headers ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	pages := 0
	for _, rt := range srv.echo.Routes() {
		if rt.Method != "GET" || strings.HasPrefix(rt.Path, "/v1/") || publicPath(rt.Path) {
			continue
		}
		pages++
		p := concretePath(rt.Path)
		res := get(p, "Accept", "text/html")
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login?next=") {
			t.Errorf("GET %s as a browser without the token: %d %s, want a redirect to /login", rt.Path, res.StatusCode, res.Header.Get("Location"))
		}
		if res := get(p, "Cookie", cookieName+"=wrong", "Accept", "text/html"); res.StatusCode != http.StatusSeeOther {
			t.Errorf("GET %s with a wrong cookie: %d", rt.Path, res.StatusCode)
		}
	}
	if pages < 10 {
		t.Fatalf("only %d pages", pages)
	}
	t.Logf("%d routes, %d GET pages", len(srv.echo.Routes()), pages)
	if res := get("/metrics"); res.StatusCode != 401 {
		t.Errorf("/metrics without the token: %d", res.StatusCode)
	}
	if res := get("/metrics", "Authorization", "Bearer "+token); res.StatusCode != 200 {
		t.Errorf("/metrics with the token: %d", res.StatusCode)
	}
	if res := get("/", "Cookie", signIn(t, ts, token).String(), "Accept", "text/html"); res.StatusCode != 200 {
		t.Errorf("GET / with the login cookie: %d", res.StatusCode)
	}
	// Paths that only look like public ones.
	for _, p := range []string{"/static/../v1/chains", "/static/%2e%2e/v1/chains", "/healthz/../v1/chains", "/v1/chains?/healthz", "/login/../v1/chains", "//v1/chains"} {
		res := get(p, "Accept", "application/json")
		if res.StatusCode == 200 && res.Header.Get("Content-Type") == "application/json" {
			t.Errorf("GET %s without the token: 200 JSON", p)
		}
	}
	// Basic auth or a token in the query string are not the token.
	if res := get("/v1/chains?token="+token, "Accept", "application/json"); res.StatusCode != 401 {
		t.Errorf("token in the query: %d", res.StatusCode)
	}
	if res := get("/v1/chains", "Authorization", "Basic "+token); res.StatusCode != 401 {
		t.Errorf("token as Basic: %d", res.StatusCode)
	}
}

// Every state-changing route (API and pages) refuses a cross-site browser
// request, with or without the token.
func TestEveryStateChangeRefusesCrossSite(t *testing.T) {
	t.Parallel()
	const token = "csrf-token"
	srv, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	n := 0
	for _, rt := range srv.echo.Routes() {
		switch rt.Method {
		case "POST", "PUT", "DELETE", "PATCH":
		default:
			continue
		}
		n++
		p := concretePath(rt.Path)
		for _, h := range [][]string{
			{"Origin", "http://evil.example", "Cookie", cookieName + "=" + token},
			{"Origin", "null", "Cookie", cookieName + "=" + token},
			{"Sec-Fetch-Site", "cross-site", "Cookie", cookieName + "=" + token},
			{"Sec-Fetch-Site", "same-site", "Cookie", cookieName + "=" + token},
		} {
			r := do(t, ts, rt.Method, p, `{}`, h...)
			if r.status != http.StatusForbidden {
				t.Errorf("%s %s with %v: %d, want 403", rt.Method, rt.Path, h[:2], r.status)
				continue
			}
			if r.errCode(t) != "cross_site" {
				t.Errorf("%s %s: %s", rt.Method, rt.Path, r.body)
			}
		}
	}
	if n < 15 {
		t.Fatalf("only %d state-changing routes", n)
	}
	t.Logf("%d state-changing routes refuse cross-site requests", n)
}

// Every kind of response carries the security headers: API, pages, static
// files, /metrics, and the errors the middleware answers (401, 403, 404, 413).
func TestSecurityHeadersEverywhere(t *testing.T) {
	t.Parallel()
	const token = "hdr-token"
	_, ts := newTestServerWith(t, Config{Token: token, BodyLimit: 1024}, testRegistry())
	auth := []string{"Authorization", "Bearer " + token}
	checks := []struct {
		method, path string
		body         any
		headers      []string
		status       int
	}{
		{"GET", "/v1/chains", nil, auth, 200},
		{"GET", "/", nil, append([]string{"Accept", "text/html"}, auth...), 200},
		{"GET", "/metrics", nil, auth, 200},
		{"GET", "/healthz", nil, nil, 200},
		{"GET", "/v1/chains", nil, nil, 401},
		{"POST", "/v1/chains", `{}`, append([]string{"Origin", "http://evil.example"}, auth...), 403},
		{"GET", "/v1/nothing-here", nil, auth, 404},
		{"POST", "/v1/validate", strings.Repeat(" ", 4096), auth, 413},
	}
	for _, c := range checks {
		r := do(t, ts, c.method, c.path, c.body, c.headers...)
		if r.status != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.status, c.status)
		}
		for h, want := range map[string]string{
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "same-origin",
			"Content-Security-Policy": "default-src 'self'",
		} {
			if got := r.header.Get(h); !strings.Contains(got, want) {
				t.Errorf("%s %s (%d): %s = %q", c.method, c.path, r.status, h, got)
			}
		}
		if r.header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s: no X-Request-Id", c.method, c.path)
		}
	}
}

// The login flow: the pages redirect to /login, which must exist and set an
// HttpOnly, SameSite cookie. Skipped (and reported) while /login is missing.
func TestLoginCookie(t *testing.T) {
	t.Parallel()
	const token = "login-token"
	srv, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	has := false
	for _, rt := range srv.echo.Routes() {
		if rt.Path == "/login" && rt.Method == "POST" {
			has = true
		}
	}
	if !has {
		t.Skip("no POST /login route: the pages redirect to /login but it does not exist yet (reported to the pages engineer)")
	}
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequest("POST", ts.URL+"/login", strings.NewReader("token="+token+"&next=/"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var ck *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			ck = c
		}
	}
	if ck == nil {
		t.Fatalf("no %s cookie after login: %d", cookieName, res.StatusCode)
	}
	if !ck.HttpOnly || (ck.SameSite != http.SameSiteStrictMode && ck.SameSite != http.SameSiteLaxMode) {
		t.Fatalf("cookie %+v: want HttpOnly and SameSite", ck)
	}
	// A wrong token sets no cookie.
	req, _ = http.NewRequest("POST", ts.URL+"/login", strings.NewReader("token=wrong"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == cookieName && c.Value != "" {
			t.Fatalf("a wrong token got a cookie")
		}
	}
}

// The one public API route: POST /v1/hooks/{hook_id} is authenticated by
// its hook's HMAC signature instead of the studio token. With a
// token set, an unsigned call is still refused (401 missing_signature, not
// the token's "unauthorized"), and nothing beside it is public.
func TestHookRouteIsSignedNotTokened(t *testing.T) {
	t.Parallel()
	const token = "hook-access-token-0123"
	_, ts := newTestServerWith(t, Config{Token: token}, testRegistry())
	auth := []string{"Authorization", "Bearer " + token}
	r := do(t, ts, "POST", "/v1/chains", `{"name":"h","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, auth...)
	wantStatus(t, r, http.StatusCreated)
	r = do(t, ts, "POST", "/v1/chains/"+r.json(t)["id"].(string)+"/hooks", `{}`, auth...)
	wantStatus(t, r, http.StatusCreated)
	hook := r.json(t)["id"].(string)
	if r := do(t, ts, "POST", "/v1/hooks/"+hook, `{}`); r.status != http.StatusUnauthorized || r.errCode(t) != "missing_signature" {
		t.Fatalf("unsigned call: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/v1/hooks/" + hook + "/x", "/v1/hooks/..%2fchains", "/v1/hooks/"} {
		if publicPath(p) {
			t.Errorf("%s is public", p)
		}
	}
	if r := do(t, ts, "GET", "/v1/chains/x/triggers", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the triggers list without the token: %d", r.status)
	}
}
