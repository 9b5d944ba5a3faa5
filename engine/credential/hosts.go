package credential

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"
)

// A credential is bound to where it may be sent: an admin's list of allowed
// hosts, each entry a host ("api.example.com", "127.0.0.1:8080"), a
// wildcard over a domain's subdomains ("*.example.com") or a base URL
// ("https://api.example.com/v1/": scheme, host and a path prefix). A
// credential without a list may go only to its type's default hosts
// (DefaultHosts): a provider key to its provider's API, an
// openai_compatible credential to its own base_url, an HTTP credential
// nowhere. The http tool, model providers and MCP clients check every
// request they attach a credential to, redirects included, with AllowsURL.

// MaxHosts bounds a credential's list; MaxHostEntry one entry (bytes).
const (
	MaxHosts     = 32
	MaxHostEntry = 512
)

// defaultHosts are the documented API hosts of the provider key types.
var defaultHosts = map[string][]string{
	OpenAI:    {"api.openai.com"},
	Anthropic: {"api.anthropic.com"},
	Gemini:    {"generativelanguage.googleapis.com"},
}

// DefaultHosts are where a credential of type t with values may be sent
// when an admin has set no list: a provider key's API host, an
// openai_compatible credential's base_url, nothing for the HTTP types.
func (t Type) DefaultHosts(values Values) []string {
	if t.Name == OpenAICompatible {
		u, err := url.Parse(values.String("base_url"))
		if err != nil || u.Host == "" {
			return nil
		}
		base := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path}
		return []string{base.String()}
	}
	return append([]string(nil), defaultHosts[t.Name]...)
}

// CleanHosts checks a list an admin entered and returns it trimmed,
// lower-cased and without repeats. The error names the entry.
func CleanHosts(hosts []string) ([]string, error) {
	out := []string{}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		e, err := cleanEntry(h)
		if err != nil {
			return nil, fmt.Errorf("allowed host %q: %w", h, err)
		}
		dup := false
		for _, x := range out {
			dup = dup || x == e
		}
		if !dup {
			out = append(out, e)
		}
	}
	if len(out) > MaxHosts {
		return nil, fmt.Errorf("%d allowed hosts, at most %d", len(out), MaxHosts)
	}
	return out, nil
}

func cleanEntry(e string) (string, error) {
	if len(e) > MaxHostEntry {
		return "", fmt.Errorf("%d bytes, at most %d", len(e), MaxHostEntry)
	}
	if strings.ContainsAny(e, " \t\r\n\x00") {
		return "", fmt.Errorf("contains a space or a line break")
	}
	if strings.Contains(e, "://") {
		u, err := url.Parse(e)
		if err != nil {
			return "", fmt.Errorf("not a URL")
		}
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			return "", fmt.Errorf("a base URL must be http:// or https://")
		case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
			return "", fmt.Errorf("a base URL has no user, query or fragment: scheme, host and path only")
		case u.Hostname() == "" || strings.Contains(u.Host, "*"):
			return "", fmt.Errorf("a base URL needs a host without wildcards (write *.example.com as an entry of its own)")
		}
		if err := checkPort(u.Port()); err != nil {
			return "", err
		}
		b := url.URL{Scheme: u.Scheme, Host: strings.ToLower(u.Host), Path: u.Path}
		if b.Path == "" {
			b.Path = "/"
		}
		return b.String(), nil
	}
	host, port := splitEntry(e)
	if strings.ContainsAny(host, "/?#@") || host == "" {
		return "", fmt.Errorf("want a host (api.example.com), *.example.com or a base URL (https://api.example.com/v1/)")
	}
	if err := checkPort(port); err != nil {
		return "", err
	}
	if strings.Contains(host, "*") {
		rest, ok := strings.CutPrefix(host, "*.")
		if !ok || strings.Contains(rest, "*") || !strings.Contains(rest, ".") {
			return "", fmt.Errorf("a wildcard is a leading *. before a domain of two labels or more (*.example.com)")
		}
	}
	host = strings.ToLower(host)
	if port == "" {
		return host, nil
	}
	return net.JoinHostPort(host, port), nil
}

// splitEntry splits a host entry into its host and port ("" when none).
func splitEntry(e string) (host, port string) {
	if h, p, err := net.SplitHostPort(e); err == nil {
		return h, p
	}
	return strings.TrimSuffix(strings.TrimPrefix(e, "["), "]"), ""
}

func checkPort(p string) error {
	if p == "" {
		return nil
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return fmt.Errorf("port %q is not a number", p)
		}
	}
	if len(p) > 5 {
		return fmt.Errorf("port %q is out of range", p)
	}
	return nil
}

// HostError refuses to send a credential to a host: it names the
// credential and the host, and says how an admin allows it.
type HostError struct {
	Credential string
	Host       string   // the host the request was going to
	Allowed    []string // the list in force (the admin's, or the type's defaults)
	NoList     bool     // no admin list and no default: the credential goes nowhere
}

func (e *HostError) Error() string {
	if e.NoList {
		return fmt.Sprintf("credential %q may not be sent to %s: it has no allowed hosts, so it is sent nowhere (an admin adds the host to its allowed hosts in Settings → Credentials)", e.Credential, e.Host)
	}
	return fmt.Sprintf("credential %q may not be sent to %s: its allowed hosts are %s (an admin adds the host to them in Settings → Credentials)", e.Credential, e.Host, strings.Join(e.Allowed, ", "))
}

// AllowsURL reports whether the credential named name, of type t, with
// values and the admin's list hosts (empty: the type's defaults), may be
// sent with a request to u: nil, or a *HostError.
func (t Type) AllowsURL(name string, values Values, hosts []string, u *url.URL) error {
	list := hosts
	if len(list) == 0 {
		list = t.DefaultHosts(values)
	}
	for _, e := range list {
		if MatchHost(e, u) {
			return nil
		}
	}
	return &HostError{Credential: name, Host: u.Host, Allowed: list, NoList: len(list) == 0}
}

// MatchHost reports whether u is within one allowed-hosts entry. A host
// entry matches the host on any port unless it names one, over http or
// https; a base URL matches its scheme, host, port and the path below its
// own (by whole segments, after resolving . and ..).
func MatchHost(entry string, u *url.URL) bool {
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(entry, "://") {
		b, err := url.Parse(entry)
		if err != nil || !strings.EqualFold(b.Scheme, u.Scheme) || strings.ToLower(b.Hostname()) != host || portOf(b) != portOf(u) {
			return false
		}
		prefix := strings.TrimSuffix(b.Path, "/")
		if prefix == "" {
			return true
		}
		p := path.Clean("/" + u.Path)
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	eh, ep := splitEntry(entry)
	eh = strings.ToLower(eh)
	if ep != "" && ep != portOf(u) {
		return false
	}
	if rest, ok := strings.CutPrefix(eh, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == eh
}

// portOf is u's port, or its scheme's default.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
