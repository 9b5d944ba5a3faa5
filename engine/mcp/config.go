// Package mcp is Chain Studio's client of Model Context Protocol servers: it
// connects to the servers an operator configures (streamable HTTP, the older
// SSE transport, or a local program over stdio), keeps a bounded catalog of
// their tools, and calls them. It is safe by default: HTTP goes through the
// caller's guarded client, programs run only when allow-listed and with a bare
// environment, and every list and result is bounded.
package mcp

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Transports a Server can use.
const (
	TransportHTTP  = "http"  // streamable HTTP, falling back to SSE when the server only has that
	TransportSSE   = "sse"   // the older HTTP+SSE transport (protocol 2024-11-05) only
	TransportStdio = "stdio" // a local program speaking JSON-RPC on stdin and stdout
)

// AllowCommandFlag is the flag an operator uses to allow-list a stdio
// server's program; refusals name it.
const AllowCommandFlag = "--allow-mcp-command"

// Server is one configured MCP server.
type Server struct {
	// Name is the server's part of its tools' ids (mcp:<name>/<tool>):
	// letters, digits, '-' and '_', at most 64.
	Name      string
	Transport string // TransportHTTP, TransportSSE or TransportStdio

	// URL and Headers are for http and sse. Header values (an API key, a
	// bearer token) are resolved by the caller, from a credential.
	URL     string
	Headers map[string]string
	// Allow, when set, is asked about every request before it is sent
	// (redirects and an SSE server's message endpoint included): the
	// Headers carry a credential, which goes only where Allow says.
	Allow func(*url.URL) error `json:"-"`

	// Command, Args and Env are for stdio. Command is a bare name looked up
	// in PATH or an absolute path. The program sees PATH and Env only.
	Command string
	Args    []string
	Env     map[string]string
}

// Options are the host's policy and limits, shared by every server of a
// Manager. Zero limits take the defaults below.
type Options struct {
	// HTTPClient carries every http and sse request. It is required for
	// those transports so that the caller's address guard always applies.
	// It should have no Timeout: a session's event stream lasts as long as
	// the session (builtin.ModelHTTPClient has none).
	HTTPClient *http.Client
	// AllowCommand reports whether a stdio server may run the program at
	// the resolved absolute path. Nil allows none.
	AllowCommand func(path string) bool
	// RefuseEnv reports why a variable may never be given to a stdio
	// program ("" when it may). LD_* and DYLD_* are refused in any case;
	// the host passes builtin.LoaderEnv to refuse what proc refuses.
	RefuseEnv func(name string) string

	MaxTools       int           // tools kept per server (default 512)
	MaxSchemaBytes int           // a tool's input or output schema, encoded (default 64 KiB)
	MaxResultBytes int           // a call's result, encoded (default 1 MiB)
	MaxListBytes   int           // one tools/list page or any other message (default 16 MiB)
	ConnectTimeout time.Duration // connect and handshake (default 15s)
	ListTimeout    time.Duration // listing every page of tools (default 30s)
	// RetryDelay is the first wait before reconnecting to a failed server;
	// it doubles up to a minute (default 2s).
	RetryDelay time.Duration
	Logger     *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxTools       = 512
	DefaultMaxSchemaBytes = 64 << 10
	DefaultMaxResultBytes = 1 << 20
	DefaultMaxListBytes   = 16 << 20
	DefaultConnectTimeout = 15 * time.Second
	DefaultListTimeout    = 30 * time.Second
	DefaultRetryDelay     = 2 * time.Second
	maxRetryDelay         = time.Minute
)

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxTools, DefaultMaxTools)
	def(&o.MaxSchemaBytes, DefaultMaxSchemaBytes)
	def(&o.MaxResultBytes, DefaultMaxResultBytes)
	def(&o.MaxListBytes, DefaultMaxListBytes)
	defd(&o.ConnectTimeout, DefaultConnectTimeout)
	defd(&o.ListTimeout, DefaultListTimeout)
	defd(&o.RetryDelay, DefaultRetryDelay)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// maxNameLen bounds a server's name.
const maxNameLen = 64

// ValidName reports why name cannot name a server ("" when it can).
func ValidName(name string) string {
	if name == "" {
		return "the name is empty"
	}
	if len(name) > maxNameLen {
		return fmt.Sprintf("the name is longer than %d characters", maxNameLen)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Sprintf("the name has %q; use letters, digits, '-' and '_'", r)
		}
	}
	return ""
}

// reservedHeaders are set by the transports themselves; a configured header
// must not replace them.
var reservedHeaders = map[string]bool{
	"Accept": true, "Content-Type": true, "Content-Length": true, "Host": true,
	"Mcp-Session-Id": true, "Mcp-Protocol-Version": true, "Last-Event-Id": true,
	"Connection": true, "Transfer-Encoding": true,
}

// check validates s against its transport and the host's policy; for stdio
// it returns the resolved program and the child's environment. Nothing runs.
func (s Server) check(o Options) (prog string, env []string, err error) {
	if why := ValidName(s.Name); why != "" {
		return "", nil, fmt.Errorf("mcp server %q: %s", s.Name, why)
	}
	fail := func(format string, a ...any) (string, []string, error) {
		return "", nil, fmt.Errorf("mcp server %q: "+format, append([]any{s.Name}, a...)...)
	}
	switch s.Transport {
	case TransportHTTP, TransportSSE:
		if o.HTTPClient == nil {
			return fail("no HTTP client was given (the caller must pass one behind the address guard)")
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("url %q is not an http or https URL", s.URL)
		}
		if u.User != nil {
			return fail("url must not carry a user or password; give them as a header")
		}
		for k, v := range s.Headers {
			if !validHeaderName(k) {
				return fail("header %q is not a valid header name", k)
			}
			if reservedHeaders[http.CanonicalHeaderKey(k)] {
				return fail("header %q is set by the transport and cannot be configured", k)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return fail("header %q: the value has a line break or NUL byte", k)
			}
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			return fail("command, args and env are for the stdio transport, not %s", s.Transport)
		}
		return "", nil, nil
	case TransportStdio:
		if s.URL != "" || len(s.Headers) > 0 {
			return fail("url and headers are for the http and sse transports, not stdio")
		}
		if s.Command == "" {
			return fail("the stdio transport needs a command")
		}
		prog, err := resolveCommand(s.Command)
		if err != nil {
			return fail("command %q: %v", s.Command, err)
		}
		if o.AllowCommand == nil || !o.AllowCommand(prog) {
			return fail("command %q (%s) is not on the allow-list: start the studio with %s %s", s.Command, prog, AllowCommandFlag, prog)
		}
		for _, a := range s.Args {
			if strings.ContainsRune(a, 0) {
				return fail("an argument contains a NUL byte")
			}
		}
		env, err := childEnv(s.Env, o.RefuseEnv)
		if err != nil {
			return fail("%v", err)
		}
		return prog, env, nil
	default:
		return fail("transport %q is not one of http, sse, stdio", s.Transport)
	}
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// resolveCommand turns a bare name (looked up in PATH) or an absolute path
// into a cleaned absolute path with its folder's symbolic links resolved, as
// proc does, so that the allow-list compares like with like.
func resolveCommand(name string) (string, error) {
	var p string
	switch {
	case filepath.IsAbs(name):
		p = filepath.Clean(name)
	case strings.ContainsAny(name, `/\`):
		return "", errors.New("a relative path is not allowed; give a bare name or an absolute path")
	default:
		lp, err := exec.LookPath(name)
		if err != nil {
			return "", errors.New("not found in PATH")
		}
		if p, err = filepath.Abs(lp); err != nil {
			return "", err
		}
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	return p, nil
}

// ResolveCommand is resolveCommand for the host, so that its allow-list
// holds paths in the same form AllowCommand receives.
func ResolveCommand(name string) (string, error) { return resolveCommand(name) }

// Check validates s against its transport and the options' policy as
// NewManager does (a stdio program must be on the allow-list), without
// running or connecting to anything: the host checks a server when it is
// registered, and again when it connects.
func (s Server) Check(o Options) error {
	_, _, err := s.check(o.withDefaults())
	return err
}
