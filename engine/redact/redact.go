// Package redact hides the secrets a URL can carry before it is shown,
// stored or logged: user info (user:password@) and query values (api_key=…).
package redact

import (
	"net/url"
	"strings"
)

// Mask replaces every hidden part.
const Mask = "***"

// URL returns raw with its user info and every query value (and fragment)
// replaced by ***; scheme, host, port and path are kept, and so are the query
// keys, so that the form still says where a request went:
//
//	http://admin:pass@host:8080/v1?api_key=K&x=1  →  http://***@host:8080/v1?api_key=***&x=***
//
// A URL that does not parse is replaced whole: it might be anything.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<URL hidden: " + Mask + ">"
	}
	if u.Opaque != "" {
		return u.Scheme + ":" + Mask
	}
	var b strings.Builder
	if u.Scheme != "" {
		b.WriteString(u.Scheme + ":")
	}
	if u.Host != "" || u.User != nil || strings.HasPrefix(raw[len(u.Scheme):], "://") {
		b.WriteString("//")
		if u.User != nil {
			b.WriteString(Mask + "@")
		}
		b.WriteString(u.Host)
	}
	b.WriteString(u.EscapedPath())
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + query(u.RawQuery))
	}
	if u.Fragment != "" {
		b.WriteString("#" + Mask)
	}
	return b.String()
}

// query keeps each key of a raw query and masks its value; a part without
// "=" is all value (?SECRET), so it is masked whole.
func query(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok {
			parts[i] = k + "=" + Mask
		} else if p != "" {
			parts[i] = Mask
		}
	}
	return strings.Join(parts, "&")
}
