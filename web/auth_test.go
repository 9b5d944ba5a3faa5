package web

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const authToken = "auth-test-token-0123456789"

// signIn posts the token to /login and returns the session cookie it sets.
func signIn(t testing.TB, ts *httptest.Server, token string) *http.Cookie {
	t.Helper()
	res := postForm(t, ts, "/login", url.Values{"token": {token}, "next": {"/"}})
	for _, c := range res.Cookies() {
		if c.Name == cookieName && c.Value != "" {
			return &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	t.Fatalf("sign-in: %d, no %s cookie", res.StatusCode, cookieName)
	return nil
}

// postForm posts a browser form without following the redirect.
func postForm(t testing.TB, ts *httptest.Server, path string, form url.Values, headers ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/ok/path?x=1":       "/ok/path?x=1",
		"/":                  "/",
		"/chains/abc#nodes":  "/chains/abc#nodes",
		"/%09/evil.example":  "/%09/evil.example", // still encoded: a path segment, harmless
		"/\t/evil.example":   "/",                 // what /login?next=/%09/evil.example decodes to
		"/\n/evil.example":   "/",
		"/\x7f/x":            "/",
		"/\u0085x":           "/",
		"//evil":             "/",
		"/\\evil":            "/",
		"/ok\\..\\evil":      "/",
		"https://x":          "/",
		"http:/x":            "/",
		"javascript:alert()": "/",
		"evil.example":       "/",
		"":                   "/",
		" /x":                "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// The reported attack: /login?next=/%09/evil.example (decoded "/\t/evil.example",
// which browsers read as //evil.example) sent a signed-in browser, or one that
// just signed in, to another site.
func TestLoginNextStaysOnSite(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{Token: authToken}, testRegistry())
	ck := signIn(t, ts, authToken)
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, next := range []string{"/%09/evil.example", "//evil", "/%5Cevil", "https://x", "/%0d%0aSet-Cookie:x=1"} {
		req, _ := http.NewRequest("GET", ts.URL+"/login?next="+next, nil)
		req.AddCookie(ck)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/" {
			t.Errorf("GET /login?next=%s signed in: %d Location %q, want 303 /", next, res.StatusCode, loc)
		}
		raw, _ := url.QueryUnescape(next)
		res = postForm(t, ts, "/login", url.Values{"token": {authToken}, "next": {raw}})
		if loc := res.Header.Get("Location"); loc != "/" {
			t.Errorf("POST /login next=%q: Location %q, want /", raw, loc)
		}
	}
	res := postForm(t, ts, "/login", url.Values{"token": {authToken}, "next": {"/ok/path?x=1"}})
	if loc := res.Header.Get("Location"); loc != "/ok/path?x=1" {
		t.Errorf("a plain path: Location %q", loc)
	}
}

// DNS rebinding: a page on rebind.attacker.example, re-pointed at the studio,
// sends its own name as Host and as Origin. Only the studio's own names pass.
func TestHostMustNameTheStudio(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{PublicURL: "https://studio.example.org", AllowedHosts: []string{"Extra.Example:1234"}}, testRegistry())
	port := ts.URL[strings.LastIndex(ts.URL, ":")+1:]
	post := func(host string) resp {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/v1/chains", strings.NewReader(fmt.Sprintf(`{"name":%q,"nodes":[]}`, "rebind "+host)))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "http://"+host)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		return resp{status: res.StatusCode, header: res.Header, body: b.Bytes()}
	}
	for _, h := range []string{"rebind.attacker.example:" + port, "rebind.attacker.example", "localhost.attacker.example:" + port, "127.0.0.1.nip.io:" + port, "studio.example.org.evil:" + port} {
		r := post(h)
		wantStatus(t, r, http.StatusMisdirectedRequest)
		if r.errCode(t) != "misdirected_request" || !strings.Contains(string(r.body), "--public-url") {
			t.Errorf("Host %s: %s", h, r.body)
		}
		if r := do(t, ts, "GET", "/v1/chains", nil); r.status != 200 {
			t.Fatalf("the studio stopped answering after Host %s: %d", h, r.status)
		}
	}
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "app.localhost:" + port, "[::1]:" + port, "studio.example.org", "studio.example.org:" + port, "extra.example:" + port} {
		wantStatus(t, post(h), http.StatusCreated)
	}
}

func TestHostPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr  string
		host  string
		allow bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1:8080", "127.5.5.5:8080", true},
		{"127.0.0.1:8080", "192.168.1.5:8080", false},
		{"127.0.0.1:8080", "evil.example:8080", false},
		{"192.168.1.5:8080", "192.168.1.5:8080", true},
		{"192.168.1.5:8080", "192.168.1.6:8080", false},
		{"0.0.0.0:8080", "192.168.1.6:8080", true}, // an IP literal cannot be rebound
		{":8080", "[2001:db8::5]:8080", true},
		{"0.0.0.0:8080", "evil.example:8080", false},
		{"studio.lan:8080", "studio.lan:8080", true},
		{"studio.lan:8080", "studio.lan.:8080", true},
		{"studio.lan:8080", "other.lan:8080", false},
		{"127.0.0.1:8080", "", true},
	} {
		if got := newHostPolicy(Config{Addr: tc.addr}).allows(tc.host); got != tc.allow {
			t.Errorf("listen %s, Host %q: allowed %v, want %v", tc.addr, tc.host, got, tc.allow)
		}
	}
}

// lockedBuffer is a log destination tests can read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Failed sign-ins and wrong bearer tokens are limited per client: after the
// burst, 429 with Retry-After, even for the right token (it is not compared),
// each failure logged at warn; a client whose bucket refilled may try again.
func TestFailedSignInsLimited(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	srv, ts := newTestServerWith(t, Config{Token: authToken, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testRegistry())
	var mu sync.Mutex
	now := time.Now()
	srv.auth.fails.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }

	// Parallel guesses, as the report did: the limit holds under concurrency.
	var wg sync.WaitGroup
	codes := make([]int, 50)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			codes[i] = postForm(t, ts, "/login", url.Values{"token": {fmt.Sprint("guess", i)}}).StatusCode
		}(i)
	}
	wg.Wait()
	n429 := 0
	for _, c := range codes {
		if c == http.StatusTooManyRequests {
			n429++
		}
	}
	if n429 != len(codes)-authFailBurst {
		t.Fatalf("%d of %d parallel wrong sign-ins answered 429, want %d: %v", n429, len(codes), len(codes)-authFailBurst, codes)
	}
	// The right token is never refused by the limit: it signs in.
	if c := signIn(t, ts, authToken); c == nil {
		t.Fatal("the right token while limited: no sign-in")
	}
	res := postForm(t, ts, "/login", url.Values{"token": {"one more guess"}})
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a wrong token while limited: %d, want 429", res.StatusCode)
	}
	if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 6 {
		t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	if got := strings.Count(logs.String(), "level=WARN msg=\"failed sign-in\""); got != authFailBurst {
		t.Fatalf("%d failed sign-ins logged at warn, want %d:\n%s", got, authFailBurst, logs.String())
	}
	// The bearer API shares the limit, for wrong tokens only.
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer "+authToken), http.StatusOK)
	r := do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer not-the-token-either")
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.errCode(t) != "too_many_requests" || r.header.Get("Retry-After") == "" {
		t.Fatalf("bearer while limited: %s %v", r.body, r.header)
	}
	mu.Lock()
	now = now.Add(authFailEvery)
	mu.Unlock()
	if res := postForm(t, ts, "/login", url.Values{"token": {"a guess after the wait"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("a wrong sign-in after the wait: %d, want 200 with the form again", res.StatusCode)
	}
}

func TestBearerGuessesLimited(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	srv, ts := newTestServerWith(t, Config{Token: authToken, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, testRegistry())
	// A stopped clock: however slow the machine, no token refills mid-test.
	start := time.Now()
	srv.auth.fails.now = func() time.Time { return start }
	statuses := map[int]int{}
	for i := 0; i < 200; i++ {
		statuses[do(t, ts, "GET", "/v1/chains", nil, "Authorization", fmt.Sprint("Bearer guess-", i)).status]++
	}
	if statuses[http.StatusUnauthorized] != authFailBurst || statuses[http.StatusTooManyRequests] != 200-authFailBurst {
		t.Fatalf("200 bearer guesses in %v: %v, want %d×401 then 429", time.Since(start), statuses, authFailBurst)
	}
	if got := strings.Count(logs.String(), "level=WARN msg=\"wrong bearer token\""); got != authFailBurst {
		t.Fatalf("%d wrong tokens logged at warn, want %d", got, authFailBurst)
	}
	// Requests without credentials are not guesses: still 401, not 429.
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil), http.StatusUnauthorized)
}

// The cookie carries a random session id, not the token; logout ends the
// session on the server, so a copy of the cookie stops working; Secure
// follows an https --public-url.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{Token: authToken}, testRegistry())
	res := postForm(t, ts, "/login", url.Values{"token": {authToken}})
	var ck *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			ck = c
		}
	}
	if ck == nil || ck.Value == "" || strings.Contains(ck.Value, authToken) || len(ck.Value) < 32 {
		t.Fatalf("cookie %+v: want a session id, not the token", ck)
	}
	if ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.MaxAge <= 0 || ck.MaxAge > int((30*24*time.Hour).Seconds()) {
		t.Fatalf("cookie %+v", ck)
	}
	if other := signIn(t, ts, authToken); other.Value == ck.Value {
		t.Fatal("two sign-ins got the same session id")
	}
	const copied = "Cookie"
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, copied, cookieName+"="+ck.Value), 200)
	res = postForm(t, ts, "/logout", nil, "Cookie", cookieName+"="+ck.Value)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/login" {
		t.Fatalf("logout: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, copied, cookieName+"="+ck.Value), http.StatusUnauthorized)

	// An API client that asks for JSON is told it is done, not sent to a page.
	api := signIn(t, ts, authToken)
	res = postForm(t, ts, "/logout", nil, "Cookie", cookieName+"="+api.Value, "Accept", "application/json")
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Location") != "" {
		t.Fatalf("logout asking for JSON: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, copied, cookieName+"="+api.Value), http.StatusUnauthorized)

	_, tls := newTestServerWith(t, Config{Token: authToken, PublicURL: "https://studio.example.org/"}, testRegistry())
	res = postForm(t, tls, "/login", url.Values{"token": {authToken}})
	for _, c := range res.Cookies() {
		if c.Name == cookieName && !c.Secure {
			t.Fatalf("--public-url https: cookie %+v is not Secure", c)
		}
	}
}

// Neither the sessions nor the limiter grow without bound.
func TestAuthMapsBounded(t *testing.T) {
	t.Parallel()
	s := &sessionStore{m: map[string]session{}, max: 100, ttl: time.Hour, now: time.Now}
	first := s.create("token", time.Time{})
	for i := 0; i < 1000; i++ {
		s.create("token", time.Time{})
	}
	if s.len() != 100 || s.valid(first) {
		t.Fatalf("sessions: %d held, first still valid %v", s.len(), s.valid(first))
	}
	now := time.Now()
	l := &failLimiter{m: map[string]*bucket{}, max: 100, burst: 3, every: time.Second, now: func() time.Time { return now }}
	for i := 0; i < 10000; i++ {
		for j := 0; j < 3; j++ {
			l.fail(fmt.Sprint("10.0.", i/256, ".", i%256))
		}
	}
	if l.len() > 100 {
		t.Fatalf("limiter holds %d clients", l.len())
	}
	// Clients beyond the bound share one bucket: they are limited too.
	if l.blocked("10.99.0.1") == 0 {
		t.Fatal("a client beyond the bound is not limited while the shared bucket is empty")
	}
	now = now.Add(time.Minute) // every bucket refilled: the map can be reused
	l.fail("10.200.0.1")
	if l.len() > 100 || l.blocked("10.200.0.1") != 0 {
		t.Fatalf("after refill: %d clients, blocked %v", l.len(), l.blocked("10.200.0.1"))
	}
	a := newAuthState(Config{})
	if a.clientKey(&http.Request{RemoteAddr: "[2001:db8:1:2:3:4:5:6]:999"}) != a.clientKey(&http.Request{RemoteAddr: "[2001:db8:1:2:ffff::1]:1"}) {
		t.Fatal("one IPv6 /64 is one client")
	}
}
