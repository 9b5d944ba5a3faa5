package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/tool"
)

const maxRedirects = 10

// HTTPAllowPrivateFlag is the command-line flag that lets the http tool (and
// escalation webhooks) reach loopback and private addresses; every refusal
// of the address guard names it.
const HTTPAllowPrivateFlag = "--http-allow-private"

// RuleHostPolicy: a node's static URL names an address the host's policy
// refuses (a warning at design time; the call is refused at run time).
const RuleHostPolicy = "host_policy"

// httpCheck warns, before any run, of a static url whose host is an address
// literal (or localhost) the guard will refuse. Other names are resolved
// only when the call is made, so they are not looked up here.
func httpCheck(allowPrivate bool) tool.Check {
	return func(in map[string]any) []tool.Problem {
		raw, ok := in["url"].(string)
		if allowPrivate || !ok {
			return nil
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return nil
		}
		why := refusedHost(u.Hostname())
		if why == "" {
			return nil
		}
		return []tool.Problem{{Field: "input.url", Rule: RuleHostPolicy, Warning: true,
			Message: fmt.Sprintf("%s is %s; the http tool reaches loopback and private addresses only when the studio starts with %s, so this call will be refused", u.Hostname(), why, HTTPAllowPrivateFlag)}}
	}
}

// refusedHost says why the address guard refuses host, when that is known
// without resolving it: an address literal, or a localhost name.
func refusedHost(host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "a loopback name"
	}
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return ""
	}
	return forbiddenAddr(ip)
}

// policyError is a refusal by host policy; it wraps tool.ErrDenied.
type policyError struct{ msg string }

func (e *policyError) Error() string { return e.msg + ": " + tool.ErrDenied.Error() }
func (e *policyError) Unwrap() error { return tool.ErrDenied }

type httpTool struct {
	allowPrivate bool
	timeout      time.Duration
	maxBytes     int64
	// exempt, when set, lets tests reach specific local destinations while
	// the private-address guard is otherwise on.
	exempt func(netip.AddrPort) bool
	client *http.Client
	dialer *net.Dialer // its Control hook is the guard; tests wrap it so nothing connects
}

func newHTTPTool(opts Options, exempt func(netip.AddrPort) bool) *httpTool {
	h := &httpTool{
		allowPrivate: opts.HTTPAllowPrivate,
		timeout:      opts.HTTPTimeout,
		maxBytes:     opts.MaxResponseBytes,
		exempt:       exempt,
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: h.control}
	h.dialer = dialer
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would hide the real destination from the guard
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	h.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %q refused: only http and https are allowed", redact.URL(req.URL.String()))
			}
			ca, ok := req.Context().Value(credentialHostKey{}).(credentialHost)
			if !ok {
				return nil
			}
			// A request that carries a credential is followed only to
			// where the credential may go, whether or not the headers
			// would still be on it.
			if err := ca.secret.Allows(req.URL); err != nil {
				return &policyError{fmt.Sprintf("redirect to %s refused: %v", redact.URL(req.URL.String()), err)}
			}
			// A credential is for the host it was sent to: net/http drops
			// Authorization on a redirect to another host, but not an API
			// key's own header or a custom header set.
			if req.URL.Host != ca.host {
				for _, name := range ca.headers {
					req.Header.Del(name)
				}
			}
			return nil
		},
	}
	return h
}

// control runs on every connection attempt, after DNS resolution: address is
// the IP the socket is about to connect to.
func (h *httpTool) control(network, address string, _ syscall.RawConn) error {
	if h.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &policyError{fmt.Sprintf("destination %q cannot be checked against the private-network policy (%s turns the check off)", address, HTTPAllowPrivateFlag)}
	}
	if h.exempt != nil && h.exempt(ap) {
		return nil
	}
	if reason := forbiddenAddr(ap.Addr()); reason != "" {
		return &policyError{fmt.Sprintf("destination %s is %s and the host does not allow private network destinations (only globally reachable unicast addresses); the studio reaches them only when started with %s", ap.Addr().WithZone(""), reason, HTTPAllowPrivateFlag)}
	}
	return nil
}

// credentialHost is what a request sent with a credential carries in its
// context: the host the credential was meant for, the headers that hold it,
// and the credential, whose allowed hosts every redirect is checked against.
type credentialHost struct {
	host    string
	headers []string
	secret  *tool.Secret
}

type credentialHostKey struct{}

// scrubbedError is an error whose text has had a credential scrubbed from it;
// it still wraps the original, so callers can tell a timeout or a refusal.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// call implements the http tool. A node naming a stored credential (auth:
// {"credential": NAME}) has it resolved here, for this request only; every
// form of its secret values is scrubbed from the output and the error, since
// a server may echo the headers it was sent.
func (h *httpTool) call(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	secret, typ, err := resolveAuth(ctx, in)
	if err != nil {
		return nil, err
	}
	if secret == nil {
		return h.request(ctx, in, nil, credential.Type{})
	}
	scrub := credential.NewScrubber(typ.Secrets(secret.Values))
	out, err := h.request(ctx, in, secret, typ)
	if err != nil {
		return nil, &scrubbedError{msg: scrub.String(err.Error()), err: err}
	}
	return scrub.Value(out), nil
}

// resolveAuth reads the node's auth field and resolves the credential it
// names, checking that its type is one a request can carry.
func resolveAuth(ctx context.Context, in map[string]any) (*tool.Secret, credential.Type, error) {
	raw, present := in["auth"]
	if !present || raw == nil {
		return nil, credential.Type{}, nil
	}
	a, ok := raw.(map[string]any)
	if ok && len(a) == 0 { // a form whose credential was cleared
		return nil, credential.Type{}, nil
	}
	if !ok {
		return nil, credential.Type{}, fmt.Errorf(`http: field "auth" must be an object such as {"credential": "github"}, got %s`, typeName(raw))
	}
	for k := range a {
		if k != "credential" {
			return nil, credential.Type{}, fmt.Errorf(`http: field "auth" has an unknown field %q (only "credential")`, k)
		}
	}
	name, ok := a["credential"].(string)
	if !ok || name == "" {
		return nil, credential.Type{}, fmt.Errorf(`http: field "auth.credential" must name a stored credential`)
	}
	creds := tool.CredentialsFrom(ctx)
	if creds == nil {
		return nil, credential.Type{}, fmt.Errorf("http: credential %q: %w", name, tool.ErrNoCredentials)
	}
	sec, err := creds.Credential(ctx, name)
	if err != nil {
		return nil, credential.Type{}, fmt.Errorf("http: %w", err)
	}
	typ, ok := credential.Lookup(sec.Type)
	if !ok || typ.Use != credential.UseHTTP {
		return nil, credential.Type{}, fmt.Errorf("http: credential %q is of type %s, which an HTTP request cannot carry (use %s)", name, sec.Type, strings.Join(credential.TypesFor(credential.UseHTTP), ", "))
	}
	return sec, typ, nil
}

// applyCredential sets what the credential's type sends: a header, a query
// parameter or basic auth. It returns the header names it set, which a
// redirect to another host must not carry.
func applyCredential(req *http.Request, sec *tool.Secret, typ credential.Type) []string {
	v := credential.Values(sec.Values)
	switch typ.Name {
	case credential.Bearer:
		req.Header.Set("Authorization", "Bearer "+v.String("token"))
		return []string{"Authorization"}
	case credential.Basic:
		req.SetBasicAuth(v.String("username"), v.String("password"))
		return []string{"Authorization"}
	case credential.APIKey:
		if v.String("in") == "query" {
			q := req.URL.Query()
			q.Set(v.String("name"), v.String("value"))
			req.URL.RawQuery = q.Encode()
			return nil
		}
		req.Header.Set(v.String("name"), v.String("value"))
		return []string{v.String("name")}
	case credential.Headers:
		var names []string
		for k, hv := range v.Map("headers") {
			req.Header.Set(k, hv)
			names = append(names, k)
		}
		return names
	}
	return nil
}

// request makes the call; sec, when set, is the credential it carries.
func (h *httpTool) request(ctx context.Context, in map[string]any, sec *tool.Secret, typ credential.Type) (any, error) {
	method, ok, err := getString("http", in, "method")
	if err != nil {
		return nil, err
	}
	if !ok || method == "" {
		method = http.MethodGet
	}
	method = strings.ToUpper(method)
	if !validMethod(method) {
		return nil, fmt.Errorf("http: field \"method\" is not a valid HTTP method: %q", method)
	}

	rawURL, err := requireString("http", in, "url")
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, credentials and all
		}
		return nil, fmt.Errorf("http: field \"url\" is not a valid URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http: field \"url\" must use http or https, got scheme %q in %q", u.Scheme, redact.URL(rawURL))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http: field \"url\" has no host: %q", redact.URL(rawURL))
	}

	// shown is the URL as errors (run events, logs) show it: user info and
	// query values may be credentials.
	shown := redact.URL(rawURL)

	headers, err := getStringMap("http", in, "headers")
	if err != nil {
		return nil, err
	}

	var body io.Reader
	jsonBody := false
	if b, present := in["body"]; present && b != nil {
		if s, isStr := b.(string); isStr {
			body = strings.NewReader(s)
		} else {
			enc, err := json.Marshal(b)
			if err != nil {
				return nil, fmt.Errorf("http: field \"body\" cannot be encoded as JSON: %v", err)
			}
			body = bytes.NewReader(enc)
			jsonBody = true
		}
	}

	timeout := h.timeout
	if t, ok, err := getNumber("http", in, "timeout"); err != nil {
		return nil, err
	} else if ok {
		if t <= 0 {
			return nil, fmt.Errorf("http: field \"timeout\" must be a positive number of seconds, got %v", t)
		}
		if d := time.Duration(t * float64(time.Second)); d < timeout {
			timeout = d
		}
	}

	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("http: cannot build request %s %s: %v", method, shown, err)
	}
	// The run's trace continues in the called service; a traceparent the
	// node sets itself wins (set below).
	tool.InjectTrace(ctx, req.Header)
	for k, v := range headers {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("http: field \"headers\": %q is not a valid header name", k)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("http: field \"headers\": value of %q contains a line break or NUL", k)
		}
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if jsonBody && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if sec != nil {
		if err := sec.Allows(req.URL); err != nil {
			return nil, fmt.Errorf("http: %s %s refused: %w", method, shown, err)
		}
		names := applyCredential(req, sec, typ)
		req = req.WithContext(context.WithValue(req.Context(), credentialHostKey{}, credentialHost{host: req.URL.Host, headers: names, secret: sec}))
	}

	fail := func(err error) error {
		var pe *policyError
		if errors.As(err, &pe) {
			return fmt.Errorf("http: %s %s refused: %w", method, shown, pe)
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("http: %s %s: %w", method, shown, ctxErr)
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("http: %s %s timed out after %s: %w", method, shown, secondsString(timeout.Seconds()), context.DeadlineExceeded)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("http: %s %s failed: %w", method, shown, err)
	}

	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fail(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength > h.maxBytes {
		return nil, fmt.Errorf("http: %s %s: response body of %d bytes exceeds the limit of %d bytes", method, shown, resp.ContentLength, h.maxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, h.maxBytes+1))
	if err != nil {
		return nil, fail(err)
	}
	if int64(len(data)) > h.maxBytes {
		return nil, fmt.Errorf("http: %s %s: response body exceeds the limit of %d bytes", method, shown, h.maxBytes)
	}

	outHeaders := make(map[string]any, len(resp.Header))
	for k, v := range resp.Header {
		outHeaders[k] = strings.Join(v, ", ")
	}
	var outBody any = string(data)
	if isJSONContentType(resp.Header.Get("Content-Type")) {
		var decoded any
		if err := json.Unmarshal(data, &decoded); err == nil {
			outBody = decoded
		}
	}
	return map[string]any{
		"status":  float64(resp.StatusCode),
		"headers": outHeaders,
		"body":    outBody,
	}, nil
}

func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// isTokenChar reports whether c may appear in an RFC 9110 token.
func isTokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func validMethod(m string) bool     { return isToken(m) }
func validHeaderName(h string) bool { return isToken(h) }

// GuardedClient is an HTTP client behind the http tool's address guard
// (private and loopback destinations refused unless opts.HTTPAllowPrivate,
// every connection and redirect checked, no proxy) and its timeout, for
// what the host itself sends on a chain's behalf (escalation webhooks).
func GuardedClient(opts Options) *http.Client {
	opts = opts.withDefaults()
	c := *newHTTPTool(opts, nil).client
	c.Timeout = opts.HTTPTimeout
	return &c
}
