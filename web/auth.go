package web

import (
	"crypto/rand"
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
	fails    *failLimiter
	hosts    hostPolicy
	secure   bool // cookies get Secure: --public-url is https
}

func newAuthState(cfg Config) *authState {
	a := &authState{
		sessions: &sessionStore{m: map[string]session{}, max: maxSessions, ttl: sessionTTL, now: time.Now},
		fails:    &failLimiter{m: map[string]*bucket{}, max: maxLimited, burst: authFailBurst, every: authFailEvery, now: time.Now},
		hosts:    newHostPolicy(cfg),
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

// failLimiter is a token bucket per client for failed sign-ins and wrong
// bearer tokens: a client that has used its bucket is refused (429) before
// its next guess is even compared.
type failLimiter struct {
	mu       sync.Mutex
	m        map[string]*bucket
	overflow bucket // shared by clients that find the map full
	max      int
	burst    float64
	every    time.Duration
	now      func() time.Time
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
	if b == nil || b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.every))
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

// retryAfter is a Retry-After value: whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(d.Seconds()))))
}

// inSeconds says how long to wait in words: "1 second", "5 seconds".
func inSeconds(d time.Duration) string {
	if n := retryAfter(d); n != "1" {
		return n + " seconds"
	}
	return "1 second"
}

// clientKey identifies a client for the limiter: its address as the TCP
// connection shows it (forwarded headers are the client's to forge), an
// IPv6 client by its /64, which one host usually owns whole.
func clientKey(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
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
