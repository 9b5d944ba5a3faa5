package builtin

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chainstudio/studio/engine/tool"
)

// stubModelClient is a model client whose names resolve through names (IP
// literals pass as they are) and whose dialer stops every connection the
// guard lets through before it is made, unless pass says the address may
// really be dialed (a loopback fake). It records the addresses the guard
// let through.
func stubModelClient(allowPrivate bool, names map[string]string, pass func(string) bool) (*http.Client, *[]string) {
	client, dialer := newModelHTTPClient(allowPrivate)
	guard := dialer.Control
	var mu sync.Mutex
	reached := &[]string{}
	dialer.Control = func(network, address string, c syscall.RawConn) error {
		if err := guard(network, address, c); err != nil {
			return err
		}
		mu.Lock()
		*reached = append(*reached, address)
		mu.Unlock()
		if pass != nil && pass(address) {
			return nil
		}
		return errNotDialed
	}
	client.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if ip, ok := names[host]; ok {
			addr = net.JoinHostPort(ip, port)
		} else if net.ParseIP(host) == nil {
			return nil, errors.New("the stub resolver does not know " + host)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	return client, reached
}

func TestModelHTTPClientGuard(t *testing.T) {
	t.Parallel()
	names := map[string]string{
		"localhost":          "127.0.0.1",
		"models.example.com": "10.20.30.40", // a public-looking name that resolves to a private address
		"api.example.com":    "8.8.8.8",
	}
	for _, tc := range []struct {
		url    string
		reason string // a piece of the refusal; "" means the guard lets it through
	}{
		{"http://10.0.0.1:11434/v1/models", "10.0.0.1 is a private address (10.0.0.0/8)"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"},
		{"http://[::1]:11434/v1/models", "::1 is a loopback address"},
		{"http://localhost:11434/v1/models", "127.0.0.1 is a loopback address"},
		{"https://models.example.com/v1/models", "10.20.30.40 is a private address"},
		{"http://[::ffff:127.0.0.1]:8000/v1/models", "loopback"},
		{"https://api.example.com/v1/models", ""},
	} {
		t.Run(tc.url, func(t *testing.T) {
			t.Parallel()
			client, reached := stubModelClient(false, names, nil)
			res, err := client.Get(tc.url)
			if res != nil {
				res.Body.Close()
			}
			if tc.reason == "" {
				if !errors.Is(err, errNotDialed) {
					t.Fatalf("err = %v, want the stub's %v (the guard must allow it)", err, errNotDialed)
				}
				return
			}
			var refused *AddressRefusedError
			if !errors.As(err, &refused) || !errors.Is(err, tool.ErrDenied) {
				t.Fatalf("err = %v, want an AddressRefusedError", err)
			}
			msg := refused.Error()
			if !strings.Contains(msg, tc.reason) || !strings.HasSuffix(msg, "model calls reach loopback and private addresses only with --model-allow-private") {
				t.Fatalf("refusal = %q, want it to say %q and name the flag", msg, tc.reason)
			}
			if len(*reached) != 0 {
				t.Fatalf("the guard let through %v", *reached)
			}
		})
	}
}

// With the flag a loopback model server answers; the http tool's own
// guard is not opened by it (its flag is another).
func TestModelHTTPClientAllowPrivate(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[]}`)
	}))
	defer srv.Close()
	res, err := ModelHTTPClient(true).Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatalf("with the flag: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if _, err := ModelHTTPClient(false).Get(srv.URL + "/v1/models"); !errors.As(err, new(*AddressRefusedError)) {
		t.Fatalf("without the flag: err = %v, want a refusal", err)
	}
	// An MCP connection's refusal names its own flag.
	if _, err := MCPHTTPClient(false).Get(srv.URL + "/mcp"); err == nil || !strings.Contains(err.Error(), "MCP connections reach loopback and private addresses only with "+MCPAllowPrivateFlag) {
		t.Fatalf("an MCP client's refusal: %v", err)
	}
	if _, err := ModelHTTPClient(false).Get(srv.URL); err == nil || !strings.Contains(err.Error(), ModelAllowPrivateFlag) {
		t.Fatalf("a model client's refusal: %v", err)
	}
	if ModelHTTPClient(true).Timeout != 0 {
		t.Fatal("a model client has a client timeout: it would cut long streams")
	}
}

// A redirect is a new connection, checked like the first; a key header does
// not follow a redirect to another host.
func TestModelHTTPClientRedirects(t *testing.T) {
	t.Parallel()
	var gotKey string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key") + r.Header.Get("Authorization")
	}))
	defer other.Close()
	ou, _ := url.Parse(other.URL)
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-other":
			http.Redirect(w, r, "http://localhost:"+ou.Port()+"/", http.StatusFound)
		}
	}))
	defer first.Close()
	fu, _ := url.Parse(first.URL)

	// The first server alone is let through, as if it were public.
	client, _ := stubModelClient(false, nil, func(addr string) bool { return addr == fu.Host })
	_, err := client.Get(first.URL + "/to-metadata")
	if !errors.As(err, new(*AddressRefusedError)) {
		t.Fatalf("redirect to the metadata address: err = %v, want a refusal", err)
	}

	client = ModelHTTPClient(true)
	req, _ := http.NewRequest(http.MethodGet, first.URL+"/to-other", nil)
	req.Header.Set("X-Api-Key", "sk-secret")
	req.Header.Set("Authorization", "Bearer sk-secret")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if gotKey != "" {
		t.Fatalf("the key followed a redirect to another host: %q", gotKey)
	}
}

func TestModelURLRefused(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:11434/v1":  "127.0.0.1 is a loopback address",
		"http://localhost:1234/v1":   "localhost is a loopback name",
		"http://192.168.1.20:8000/":  "192.168.1.20 is a private address",
		"https://api.openai.com/v1":  "",
		"https://llm.example.com/v1": "",
		"not a url":                  "",
	} {
		got := ModelURLRefused(raw)
		if want == "" && got != "" || want != "" && (!strings.Contains(got, want) || !strings.Contains(got, ModelAllowPrivateFlag)) {
			t.Errorf("%s: %q, want %q and the flag", raw, got, want)
		}
	}
}
