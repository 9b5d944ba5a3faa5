package llm

import (
	"io"
	"net/http"
)

// LimitedClient returns a client that makes c's requests and fails a
// response body past limit bytes with a *TooLargeError, whatever reads it
// (an SDK's JSON decoder or its stream reader): a model or a server that
// sends without end costs at most limit bytes of reading.
func LimitedClient(c *http.Client, limit int64) *http.Client {
	cc := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cc.Transport = limitTransport{base: base, limit: limit}
	return &cc
}

type limitTransport struct {
	base  http.RoundTripper
	limit int64
}

func (t limitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil || res.Body == nil {
		return res, err
	}
	res.Body = &limitedBody{rc: res.Body, left: t.limit, limit: t.limit}
	return res, nil
}

type limitedBody struct {
	rc    io.ReadCloser
	left  int64
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte past the cap tells a body that ends exactly at it from
		// one that goes on.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, &TooLargeError{Limit: b.limit}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
