package testutil

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// Stalled is a set of raw TCP connections that sent one HTTP request each
// and never read the answer: the client a server must not hold memory for.
type Stalled struct {
	Conns []*net.TCPConn
}

// OpenStalled dials addr (a loopback HOST:PORT) n times with a 4 KiB
// receive buffer, sends request (a complete HTTP/1.1 request, see
// GetRequest) on each, and reads nothing. The connections are closed when
// the test ends.
func OpenStalled(tb testing.TB, addr string, n int, request string) *Stalled {
	tb.Helper()
	s := &Stalled{}
	tb.Cleanup(s.Close)
	if err := s.Add(addr, n, request); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Add opens n more stalled connections.
func (s *Stalled) Add(addr string, n int, request string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("testutil: stalled connections go to loopback only, not %q", addr)
	}
	for range n {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		tc := c.(*net.TCPConn)
		s.Conns = append(s.Conns, tc)
		if err := tc.SetReadBuffer(4096); err != nil {
			return err
		}
		if _, err := io.WriteString(tc, request); err != nil {
			return err
		}
	}
	return nil
}

// GetRequest is a GET of path on host with the given extra header lines
// ("Name: value").
func GetRequest(host, path string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// Close closes every connection.
func (s *Stalled) Close() {
	for _, c := range s.Conns {
		c.Close()
	}
}
