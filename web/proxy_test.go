package web

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// The client's address: the TCP peer's, unless the peer is a trusted proxy;
// then the rightmost X-Forwarded-For hop that is not a trusted proxy.
func TestClientAddrChoice(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("::ffff:192.168.1.0/120")}
	for _, c := range []struct {
		name    string
		trusted []netip.Prefix
		peer    string
		xff     []string
		want    string
	}{
		{"no proxy trusted: the header is ignored", nil, "203.0.113.9:5000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"untrusted peer: the header is ignored", trusted, "203.0.113.9:5000", []string{"198.51.100.1"}, "203.0.113.9"},
		{"trusted peer without header", trusted, "10.1.2.3:5000", nil, "10.1.2.3"},
		{"trusted peer names its client", trusted, "10.1.2.3:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"rightmost untrusted hop, not the forged leftmost", trusted, "10.1.2.3:5000", []string{"6.6.6.6, 198.51.100.1"}, "198.51.100.1"},
		{"trusted hops are skipped", trusted, "10.1.2.3:5000", []string{"198.51.100.1, 10.9.9.9", "10.8.8.8"}, "198.51.100.1"},
		{"a forged hop behind an untrusted one stays unread", trusted, "10.1.2.3:5000", []string{"10.7.7.7, 198.51.100.1, 10.9.9.9"}, "198.51.100.1"},
		{"every hop trusted: the leftmost", trusted, "10.1.2.3:5000", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5"},
		{"garbage hop: the last trusted one", trusted, "10.1.2.3:5000", []string{"not-an-ip, 10.6.6.6"}, "10.6.6.6"},
		{"hops with ports and brackets", trusted, "[::1]:5000", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"IPv4-mapped peer matches an IPv4 range", trusted, "[::ffff:10.1.2.3]:5000", []string{"198.51.100.1:1234"}, "198.51.100.1"},
		{"IPv4-mapped range matches an IPv4 peer", trusted, "192.168.1.20:5000", []string{"198.51.100.1"}, "198.51.100.1"},
	} {
		a := newAuthState(Config{TrustedProxies: c.trusted})
		req := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
		for _, v := range c.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		got, ok := a.proxies.clientAddr(req)
		if !ok || got.String() != c.want {
			t.Errorf("%s: client %v (%v), want %s", c.name, got, ok, c.want)
		}
	}
}

// Wrong tokens from one address (every client of a reverse proxy shares
// one) never lock a right token out: 401s, then 429s for the wrong ones,
// and the --token and a user's token still answer 200.
func TestWrongTokensThenRightOne(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: authToken}, testRegistry())
	start := time.Now()
	srv.auth.fails.now = func() time.Time { return start } // no refill mid-test
	const userToken = "user-token-0123456789abcdef"
	if _, err := srv.DB.AddUser(context.Background(), "ann", store.RoleViewer, httpcore.TokenHash(userToken)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < authFailBurst; i++ {
		wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Authorization", fmt.Sprint("Bearer wrong-", i)), http.StatusUnauthorized)
	}
	r := do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer wrong-11")
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.errCode(t) != "too_many_requests" || r.header.Get("Retry-After") == "" {
		t.Fatalf("11th wrong token: %s %v", r.body, r.header)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer "+authToken), http.StatusOK)
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer "+userToken), http.StatusOK)
	if c := signIn(t, ts, authToken); c == nil {
		t.Fatal("the sign-in form refused the right token")
	}
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer wrong-12"), http.StatusTooManyRequests)
}

// Behind a trusted proxy each forwarded client has its own budget of
// failures; one wrong token is limited whatever address it comes from; and
// without --trusted-proxy X-Forwarded-For changes nothing.
func TestTrustedProxyLimitsClientsApart(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: authToken, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}, testRegistry())
	start := time.Now()
	srv.auth.fails.now = func() time.Time { return start }
	from := func(client, token string) resp {
		return do(t, ts, "GET", "/v1/chains", nil, "Authorization", "Bearer "+token, "X-Forwarded-For", client)
	}
	for i := 0; i < authFailBurst; i++ {
		wantStatus(t, from("198.51.100.1", fmt.Sprint("a-wrong-", i)), http.StatusUnauthorized)
	}
	wantStatus(t, from("198.51.100.1", "a-wrong-more"), http.StatusTooManyRequests)
	wantStatus(t, from("198.51.100.2", "b-wrong-0"), http.StatusUnauthorized) // another client: its own budget
	wantStatus(t, from("198.51.100.1", authToken), http.StatusOK)

	// One wrong token sent from ever new addresses is limited by itself.
	for i := 0; i < authFailBurst-1; i++ { // b-wrong-0 was its first
		wantStatus(t, from(fmt.Sprint("192.0.2.", i+1), "b-wrong-0"), http.StatusUnauthorized)
	}
	wantStatus(t, from("192.0.2.200", "b-wrong-0"), http.StatusTooManyRequests)
	wantStatus(t, from("192.0.2.201", "c-wrong-0"), http.StatusUnauthorized)

	// No trusted proxy: the header is ignored, every "client" is the peer.
	plain, pts := newTestServerWith(t, Config{Token: authToken}, testRegistry())
	plain.auth.fails.now = func() time.Time { return start }
	for i := 0; i <= authFailBurst; i++ {
		r := do(t, pts, "GET", "/v1/chains", nil, "Authorization", fmt.Sprint("Bearer wrong-", i), "X-Forwarded-For", fmt.Sprint("198.51.100.", i+1))
		want := http.StatusUnauthorized
		if i == authFailBurst {
			want = http.StatusTooManyRequests
		}
		wantStatus(t, r, want)
	}
}
