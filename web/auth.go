package web

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/web/httpcore"
)

// Sign-in defaults. Sessions live in memory: a restart signs browsers out
// (the token still works), which is what a single-process studio can offer
// without storing secrets in its database.
const (
	// MinTokenLength is the shortest --token the studio accepts.
	MinTokenLength = 16
	sessionTTL     = 7 * 24 * time.Hour
	maxSessions    = 10000 // the oldest session is dropped beyond this
	// A client may fail authFailBurst times in a row, then one attempt per
	// authFailEvery: 10 at once, then 10 a minute.
	authFailBurst = 10
	authFailEvery = 6 * time.Second
	maxLimited    = 10000 // clients tracked; beyond this they share one bucket
)

// authState holds the server's sign-in sessions and its limiter of failed
// attempts, and knows which Host names it answers to.
type authState struct {
	sessions *sessionStore
	fails    *failLimiter // failed attempts per client address
	// credFails counts failed attempts per presented credential (by its
	// hash), whatever the address: one wrong token retried from many
	// addresses is slowed too. Its clock is fails.now.
	credFails *failLimiter
	hosts     hostPolicy
	proxies   proxyPolicy
	secure    bool // cookies get Secure: --public-url is https
}

func newAuthState(cfg Config) *authState {
	a := &authState{
		sessions:  &sessionStore{m: map[string]session{}, max: maxSessions, ttl: sessionTTL, now: time.Now},
		fails:     newFailLimiter(),
		credFails: newFailLimiter(),
		hosts:     newHostPolicy(cfg),
	}
	for _, p := range cfg.TrustedProxies {
		if p.Addr().Is4In6() { // ::ffff:10.0.0.0/104 is 10.0.0.0/8: addresses are compared unmapped
			p = netip.PrefixFrom(p.Addr().Unmap(), max(0, p.Bits()-96))
		}
		a.proxies.trusted = append(a.proxies.trusted, p.Masked())
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Scheme == "https" {
		a.secure = true
	}
	return a
}

// sessionStore maps random session ids to who signed in and until when.
// The cookie carries only the id: the token never leaves the sign-in form,
// and logout ends the session on the server.
type sessionStore struct {
	mu  sync.Mutex
	m   map[string]session
	max int
	ttl time.Duration
	now func() time.Time
}

// session is one signed-in browser: the user's name and when that user was
// created, so that a user removed and added again under the same name does
// not inherit the old user's sessions (the role is read afresh on each
// request).
type session struct {
	exp         time.Time
	user        string
	userCreated time.Time
}

func (s *sessionStore) create(user string, userCreated time.Time) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never on supported systems
	}
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.m) >= s.max {
		s.prune(now)
	}
	for len(s.m) >= s.max { // still full: drop the session closest to its end
		var oldest string
		for k, ss := range s.m {
			if oldest == "" || ss.exp.Before(s.m[oldest].exp) {
				oldest = k
			}
		}
		delete(s.m, oldest)
	}
	s.m[id] = session{exp: now.Add(s.ttl), user: user, userCreated: userCreated}
	return id
}

func (s *sessionStore) prune(now time.Time) {
	for k, ss := range s.m {
		if !now.Before(ss.exp) {
			delete(s.m, k)
		}
	}
}

// get returns the live session id names.
func (s *sessionStore) get(id string) (session, bool) {
	if id == "" {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.m[id]
	if ok && !s.now().Before(ss.exp) {
		delete(s.m, id)
		return session{}, false
	}
	return ss, ok
}

func (s *sessionStore) valid(id string) bool {
	_, ok := s.get(id)
	return ok
}

func (s *sessionStore) end(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

func (s *sessionStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// failLimiter is a token bucket per key (a client address, a credential)
// for failed sign-ins and wrong bearer tokens. Only failures spend tokens,
// and only a failure is refused (429) once its bucket is empty: a right
// credential always gets in, so wrong tokens sent through the same address
// (every client of a reverse proxy) never lock the right ones out.
type failLimiter struct {
	mu       sync.Mutex
	m        map[string]*bucket
	overflow bucket // shared by clients that find the map full
	max      int
	burst    float64
	every    time.Duration
	now      func() time.Time
}

func newFailLimiter() *failLimiter {
	return &failLimiter{m: map[string]*bucket{}, max: maxLimited, burst: authFailBurst, every: authFailEvery, now: time.Now}
}

type bucket struct {
	tokens float64
	at     time.Time
}

func (l *failLimiter) refill(b *bucket, now time.Time) {
	if b.at.IsZero() {
		b.tokens, b.at = l.burst, now
		return
	}
	b.tokens = math.Min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.every))
	b.at = now
}

// get returns the client's bucket, refilled to now; the caller holds mu.
func (l *failLimiter) get(client string, create bool, now time.Time) *bucket {
	b := l.m[client]
	if b == nil {
		if !create {
			return nil
		}
		if len(l.m) >= l.max {
			for k, ob := range l.m { // forget clients whose bucket is full again
				if l.refill(ob, now); ob.tokens >= l.burst {
					delete(l.m, k)
				}
			}
		}
		if len(l.m) >= l.max {
			b = &l.overflow
		} else {
			b = &bucket{}
			l.m[client] = b
		}
	}
	l.refill(b, now)
	return b
}

// blocked reports how long client must wait before its next attempt (0: it
// may try now).
func (l *failLimiter) blocked(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.get(client, false, now)
	if b == nil && len(l.m) >= l.max {
		b = &l.overflow
		l.refill(b, now)
	}
	if b == nil {
		return 0
	}
	return l.wait(b)
}

// wait is how long a bucket refilled to now is empty for (0: a token left).
func (l *failLimiter) wait(b *bucket) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.every))
}

// failed records a failed attempt (a credential that matched no one) from
// the client address addr presenting cred, and reports how long the caller
// must refuse it with 429 when the address's or the credential's bucket is
// empty (0: answer the failure as such, 401 or the form again). One lock
// over both buckets, so that parallel guesses cannot pass the burst.
func (a *authState) failed(addr, cred string) time.Duration {
	a.fails.mu.Lock()
	defer a.fails.mu.Unlock()
	a.credFails.mu.Lock()
	defer a.credFails.mu.Unlock()
	now := a.fails.now()
	ba, bc := a.fails.get(addr, true, now), a.credFails.get(credKey(cred), true, now)
	if w := max(a.fails.wait(ba), a.credFails.wait(bc)); w > 0 {
		return w
	}
	ba.tokens--
	bc.tokens--
	return 0
}

// credKey is the limiter's key of a presented credential: part of its
// SHA-256, so the limiter holds no secret.
func credKey(cred string) string {
	h := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(h[:12])
}

// fail records a failed attempt by client.
func (l *failLimiter) fail(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.get(client, true, l.now())
	b.tokens = math.Max(0, b.tokens-1)
}

func (l *failLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// inSeconds says how long to wait in words: "1 second", "5 seconds".
func inSeconds(d time.Duration) string {
	if n := httpcore.RetryAfter(d); n != "1" {
		return n + " seconds"
	}
	return "1 second"
}

// clientKey identifies a client for the limiter by its address
// (clientAddr), an IPv6 client by its /64, which one host usually owns whole.
func (a *authState) clientKey(req *http.Request) string {
	ip, ok := a.proxies.clientAddr(req)
	if !ok {
		return req.RemoteAddr
	}
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// proxyPolicy names the reverse proxies (--trusted-proxy) whose
// X-Forwarded-For says who their client is. Without any, the header is
// the client's to write and is ignored.
type proxyPolicy struct {
	trusted []netip.Prefix
}

func (p proxyPolicy) trusts(ip netip.Addr) bool {
	for _, pr := range p.trusted {
		if pr.Contains(ip) {
			return true
		}
	}
	return false
}

// clientAddr is the address of the request's client: the TCP peer's, or,
// when the peer is a trusted proxy, the rightmost X-Forwarded-For hop that
// is not a trusted proxy (each proxy appends the address it was reached
// from, so the hops left of the first untrusted one are the client's to
// forge). A hop that is not an address ends the walk at the last trusted
// hop. ok is false when RemoteAddr is no address (tests' fake requests).
func (p proxyPolicy) clientAddr(req *http.Request) (netip.Addr, bool) {
	peer, ok := parseHop(req.RemoteAddr)
	if !ok {
		return netip.Addr{}, false
	}
	if !p.trusts(peer) {
		return peer, true
	}
	var hops []string
	for _, v := range req.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		ip, ok := parseHop(hops[i])
		if !ok {
			break
		}
		client = ip
		if !p.trusts(ip) {
			break
		}
	}
	return client, true
}

// parseHop reads an address as RemoteAddr and X-Forwarded-For write it:
// "192.0.2.1", "192.0.2.1:443", "2001:db8::1", "[2001:db8::1]:443";
// IPv4-mapped IPv6 addresses as IPv4, without zone.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	ip, err := netip.ParseAddr(s)
	if err != nil {
		ap, err2 := netip.ParseAddrPort(s)
		if err2 != nil {
			if ip, err = netip.ParseAddr(strings.Trim(s, "[]")); err != nil {
				return netip.Addr{}, false
			}
		} else {
			ip = ap.Addr()
		}
	}
	return ip.Unmap().WithZone(""), true
}

// hostPolicy lists the Host names the studio answers to, so that a page on
// another site whose name was re-pointed at the studio's address (DNS
// rebinding) cannot drive it: the browser would send that other name.
type hostPolicy struct {
	names    map[string]bool // lower case, without port
	anyIP    bool            // listening on every interface: any IP literal is ours
	listenIP netip.Addr
}

func newHostPolicy(cfg Config) hostPolicy {
	p := hostPolicy{names: map[string]bool{"localhost": true}}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	host = strings.Trim(host, "[]")
	if ip, err := netip.ParseAddr(host); err == nil {
		p.listenIP = ip.WithZone("")
		p.anyIP = ip.IsUnspecified()
	} else if host == "" {
		p.anyIP = true // ":8080" listens everywhere
	} else {
		p.names[strings.ToLower(host)] = true
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Hostname() != "" {
		p.names[strings.ToLower(u.Hostname())] = true
	}
	for _, h := range cfg.AllowedHosts {
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		p.names[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return p
}

// allows reports whether a request's Host header names this studio: a
// loopback name or address, the listen address, or a configured name. An
// IP literal cannot be re-pointed, so with a wildcard listen address any
// literal is accepted. An empty Host (HTTP/1.0 programs) is accepted too.
func (p hostPolicy) allows(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap().WithZone("")
		return ip.IsLoopback() || p.anyIP || ip == p.listenIP.Unmap()
	}
	// *.localhost always resolves to loopback in browsers (RFC 6761).
	return p.names[host] || strings.HasSuffix(host, ".localhost")
}
