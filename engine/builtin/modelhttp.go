package builtin

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"

	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/tool"
)

// ModelAllowPrivateFlag is the command-line flag that lets model calls reach
// loopback and private addresses; refusals name it so that the person who
// reads one knows what to set.
const ModelAllowPrivateFlag = "--model-allow-private"

// MCPAllowPrivateFlag is the flag that lets the studio connect to MCP
// servers at loopback and private addresses (MCPHTTPClient).
const MCPAllowPrivateFlag = "--mcp-allow-private"

// guardedUse is who goes through a guarded client and which flag opens it,
// for the refusals' words.
type guardedUse struct {
	who  string // "model calls"
	flag string
}

var (
	modelUse = guardedUse{who: "model calls", flag: ModelAllowPrivateFlag}
	mcpUse   = guardedUse{who: "MCP connections", flag: MCPAllowPrivateFlag}
)

// AddressRefusedError is a model call's connection refused by the address
// guard. It wraps tool.ErrDenied like the http tool's refusals.
type AddressRefusedError struct {
	Addr   netip.Addr
	Reason string // why the address is refused, in forbiddenAddr's words ("a loopback address")
	use    guardedUse
}

func (e *AddressRefusedError) Error() string {
	use := e.use
	if use.flag == "" {
		use = modelUse
	}
	return fmt.Sprintf("%s is %s; %s reach loopback and private addresses only with %s", e.Addr, e.Reason, use.who, use.flag)
}

func (e *AddressRefusedError) Unwrap() error { return tool.ErrDenied }

// ModelURLRefused says why the model guard will refuse a base URL, when
// that is known without resolving its host (an address literal or a
// localhost name), naming ModelAllowPrivateFlag; "" when it will not, or
// cannot be told without a lookup.
func ModelURLRefused(raw string) string { return urlRefused(raw, modelUse) }

// MCPURLRefused is ModelURLRefused for an MCP server's URL, naming
// MCPAllowPrivateFlag.
func MCPURLRefused(raw string) string { return urlRefused(raw, mcpUse) }

func urlRefused(raw string, use guardedUse) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	why := refusedHost(u.Hostname())
	if why == "" {
		return ""
	}
	return fmt.Sprintf("%s is %s; %s reach loopback and private addresses only when the studio starts with %s", u.Hostname(), why, use.who, use.flag)
}

// modelGuard is the address check every connection of a model client makes.
type modelGuard struct {
	allowPrivate bool
	use          guardedUse
}

// control runs on every connection attempt after DNS resolution (address
// is the IP the socket is about to connect to), so a name that resolves to
// a private address and a redirect to one are refused alike.
func (g modelGuard) control(_, address string, _ syscall.RawConn) error {
	if g.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &policyError{fmt.Sprintf("destination %q cannot be checked against the private-network policy", address)}
	}
	if reason := forbiddenAddr(ap.Addr()); reason != "" {
		return &AddressRefusedError{Addr: ap.Addr().WithZone(""), Reason: reason, use: g.use}
	}
	return nil
}

// modelKeyHeaders are the headers the providers' SDKs carry a key in.
// net/http drops Authorization on a redirect to another host, but not the
// others.
var modelKeyHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"}

// ModelHTTPClient is the HTTP client agents' model calls go through: the
// http tool's address guard on every connection (loopback, private,
// link-local and other special addresses refused unless allowPrivate), no
// proxy (it would hide the real destination from the guard), and no client
// timeout, since a streamed reply lasts as long as the model writes: the
// context bounds each call. allowPrivate is a flag of its own
// (ModelAllowPrivateFlag), apart from the http tool's, so that a local model
// server does not open the private network to every chain's http nodes.
func ModelHTTPClient(allowPrivate bool) *http.Client {
	c, _ := newGuardedClient(allowPrivate, modelUse)
	return c
}

// MCPHTTPClient is ModelHTTPClient for MCP servers' connections, whose
// refusals name MCPAllowPrivateFlag.
func MCPHTTPClient(allowPrivate bool) *http.Client {
	c, _ := newGuardedClient(allowPrivate, mcpUse)
	return c
}

// newModelHTTPClient returns the model client and its dialer, whose Control
// hook is the guard (tests wrap it so that nothing connects).
func newModelHTTPClient(allowPrivate bool) (*http.Client, *net.Dialer) {
	return newGuardedClient(allowPrivate, modelUse)
}

func newGuardedClient(allowPrivate bool, use guardedUse) (*http.Client, *net.Dialer) {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: modelGuard{allowPrivate: allowPrivate, use: use}.control}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to %q refused: only http and https are allowed", redact.URL(req.URL.String()))
			}
			// The key is for the model server it was sent to.
			if req.URL.Host != via[0].URL.Host {
				for _, name := range modelKeyHeaders {
					req.Header.Del(name)
				}
			}
			return nil
		},
	}
	return client, dialer
}
