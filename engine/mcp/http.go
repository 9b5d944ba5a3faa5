package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
)

// limitKey carries, in a request's context, how large the HTTP response to
// it may be and where to note that it was larger.
type limitKey struct{}

type bodyLimit struct {
	max     int64
	tripped atomic.Bool
}

func withBodyLimit(ctx context.Context, max int) (context.Context, *bodyLimit) {
	l := &bodyLimit{max: int64(max)}
	return context.WithValue(ctx, limitKey{}, l), l
}

// errBodyTooLarge ends the reading of a response past its limit.
var errBodyTooLarge = errors.New("the server's response is larger than the limit")

// roundTripper adds the configured headers to every request and bounds the
// body of responses to the session's own POSTs (a long-lived event stream is
// bounded per event by the transport instead).
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	defMax  int64          // the bound when the request carries none
	sniff   *progressTable // told of the progress notifications read
	allow   func(*url.URL) error
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.allow != nil {
		// Every request passes here, the first, each redirect and the SSE
		// message endpoint the server names: none leaves the credential's
		// allowed hosts.
		if err := rt.allow(req.URL); err != nil {
			return nil, err
		}
	}
	if len(rt.headers) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		for k, v := range rt.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if rt.sniff != nil {
		resp.Body = &progressSniffer{r: resp.Body, table: rt.sniff}
	}
	if req.Method != http.MethodPost {
		return resp, nil
	}
	l, _ := req.Context().Value(limitKey{}).(*bodyLimit)
	max := rt.defMax
	if l != nil {
		max = l.max
	}
	resp.Body = &limitedBody{rc: resp.Body, left: max, limit: l}
	return resp, nil
}

type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit *bodyLimit
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One more byte tells a body of exactly the limit from a larger one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 && err != nil {
			return 0, err
		}
		if b.limit != nil {
			b.limit.tripped.Store(true)
		}
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// httpClient is the caller's client with the server's headers and the body
// bound added; the caller's transport (and so its address guard) stays
// underneath. sniff, when not nil, is told of the progress notifications
// the responses carry; allow, when not nil, checks each request's URL
// against the credential's allowed hosts.
func httpClient(base *http.Client, headers map[string]string, allow func(*url.URL) error, defMax int, sniff *progressTable) *http.Client {
	c := *base
	tr := c.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	c.Transport = &roundTripper{base: tr, headers: headers, allow: allow, defMax: int64(defMax), sniff: sniff}
	return &c
}

// LimitError reports a list or result over one of the Options' limits.
type LimitError struct {
	What  string // "result", "tools/list page"
	Limit string // the option: "MaxResultBytes"
	Max   int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the server's %s is larger than the limit of %d bytes (%s)", e.What, e.Max, e.Limit)
}
