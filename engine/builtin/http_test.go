package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func httpFunc(opts Options) func(context.Context, map[string]any) (any, error) {
	f := Tools(opts)["http"]
	return func(ctx context.Context, in map[string]any) (any, error) { return f(ctx, in, nil) }
}

func TestHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			io.WriteString(w, `{"ok":true,"n":2}`)
		case "/badjson":
			w.Header().Set("Content-Type", "application/problem+json")
			io.WriteString(w, `{not json`)
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		case "/status":
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "short and stout")
		case "/fail":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":"x"}`)
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{
				"method": r.Method, "body": string(b),
				"ct": r.Header.Get("Content-Type"), "token": r.Header.Get("X-Token"),
			})
		case "/big":
			io.WriteString(w, strings.Repeat("x", 2000))
		case "/bigchunked":
			for i := 0; i < 20; i++ {
				io.WriteString(w, strings.Repeat("x", 100))
				w.(http.Flusher).Flush()
			}
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	}))
	defer srv.Close()
	call := httpFunc(Options{HTTPAllowPrivate: true, MaxResponseBytes: 1000})

	for _, tc := range []struct {
		name  string
		in    map[string]any
		check func(t *testing.T, out map[string]any)
	}{
		{"json decoded", map[string]any{"url": srv.URL + "/json"}, func(t *testing.T, out map[string]any) {
			if out["status"] != 200.0 {
				t.Errorf("status = %#v", out["status"])
			}
			if !reflect.DeepEqual(out["body"], map[string]any{"ok": true, "n": 2.0}) {
				t.Errorf("body = %#v", out["body"])
			}
			h := out["headers"].(map[string]any)
			if h["X-Multi"] != "a, b" {
				t.Errorf("X-Multi = %#v", h["X-Multi"])
			}
		}},
		{"invalid json kept raw", map[string]any{"url": srv.URL + "/badjson"}, func(t *testing.T, out map[string]any) {
			if out["body"] != "{not json" {
				t.Errorf("body = %#v", out["body"])
			}
		}},
		{"text", map[string]any{"url": srv.URL + "/text"}, func(t *testing.T, out map[string]any) {
			if out["body"] != "hello" {
				t.Errorf("body = %#v", out["body"])
			}
		}},
		{"4xx is not an error", map[string]any{"url": srv.URL + "/status"}, func(t *testing.T, out map[string]any) {
			if out["status"] != 418.0 || out["body"] != "short and stout" {
				t.Errorf("out = %#v", out)
			}
		}},
		{"5xx is not an error", map[string]any{"url": srv.URL + "/fail"}, func(t *testing.T, out map[string]any) {
			if out["status"] != 500.0 || !reflect.DeepEqual(out["body"], map[string]any{"error": "x"}) {
				t.Errorf("out = %#v", out)
			}
		}},
		{"json body", map[string]any{"url": srv.URL + "/echo", "method": "post", "body": map[string]any{"a": 1.0}, "headers": map[string]any{"X-Token": "t"}},
			func(t *testing.T, out map[string]any) {
				want := map[string]any{"method": "POST", "body": `{"a":1}`, "ct": "application/json", "token": "t"}
				if !reflect.DeepEqual(out["body"], want) {
					t.Errorf("body = %#v", out["body"])
				}
			}},
		{"string body", map[string]any{"url": srv.URL + "/echo", "method": "PUT", "body": "raw", "headers": map[string]any{"Content-Type": "text/csv"}},
			func(t *testing.T, out map[string]any) {
				want := map[string]any{"method": "PUT", "body": "raw", "ct": "text/csv", "token": ""}
				if !reflect.DeepEqual(out["body"], want) {
					t.Errorf("body = %#v", out["body"])
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.(map[string]any))
		})
	}

	for _, tc := range []struct {
		name string
		in   map[string]any
		want []string
	}{
		{"no url", map[string]any{}, []string{`http: field "url" is required`}},
		{"url not string", map[string]any{"url": 1.0}, []string{`http: field "url" must be a string, got number`}},
		{"bad scheme", map[string]any{"url": "file:///etc/passwd"}, []string{`http: field "url" must use http or https, got scheme "file"`}},
		{"no host", map[string]any{"url": "http:///x"}, []string{`http: field "url" has no host`}},
		{"bad method", map[string]any{"url": srv.URL, "method": "GE T"}, []string{`http: field "method" is not a valid HTTP method: "GE T"`}},
		{"bad header value type", map[string]any{"url": srv.URL, "headers": map[string]any{"X-N": 1.0}}, []string{`http: field "headers": value of "X-N" must be a string, got number`}},
		{"headers not object", map[string]any{"url": srv.URL, "headers": "x"}, []string{`http: field "headers" must be an object of strings, got string`}},
		{"bad header name", map[string]any{"url": srv.URL, "headers": map[string]any{"X Y": "1"}}, []string{`http: field "headers": "X Y" is not a valid header name`}},
		{"header injection", map[string]any{"url": srv.URL, "headers": map[string]any{"X-Y": "1\r\nX-Z: 2"}}, []string{`value of "X-Y" contains a line break`}},
		{"bad timeout", map[string]any{"url": srv.URL, "timeout": -1.0}, []string{`http: field "timeout" must be a positive number of seconds, got -1`}},
		{"too large", map[string]any{"url": srv.URL + "/big"}, []string{"http: GET " + srv.URL + "/big: response body of 2000 bytes exceeds the limit of 1000 bytes"}},
		{"too large chunked", map[string]any{"url": srv.URL + "/bigchunked"}, []string{"response body exceeds the limit of 1000 bytes"}},
		{"timeout", map[string]any{"url": srv.URL + "/slow", "timeout": 0.1}, []string{"http: GET " + srv.URL + "/slow timed out after 0.1s"}},
		{"connection refused", map[string]any{"url": "http://127.0.0.1:1/"}, []string{"http: GET http://127.0.0.1:1/ failed:", "connection refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := call(context.Background(), tc.in)
			wantErr(t, err, tc.want...)
			if time.Since(start) > 2*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}

	t.Run("timeout capped by HTTPTimeout", func(t *testing.T) {
		call := httpFunc(Options{HTTPAllowPrivate: true, HTTPTimeout: 100 * time.Millisecond})
		_, err := call(context.Background(), map[string]any{"url": srv.URL + "/slow", "timeout": 60.0})
		wantErr(t, err, "timed out after 0.1s")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v does not wrap context.DeadlineExceeded", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := call(ctx, map[string]any{"url": srv.URL + "/slow"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestHTTPPrivateAddressesRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "should not be reached")
	}))
	defer srv.Close()
	call := httpFunc(Options{})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, u := range []string{
		srv.URL,
		"http://localhost:" + port + "/",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:" + port + "/",
		"http://10.1.2.3:9/",
		"http://192.168.0.1:9/",
		"http://0.0.0.0:" + port + "/",
		"http://[::ffff:127.0.0.1]:" + port + "/",
	} {
		t.Run(u, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := call(ctx, map[string]any{"url": u})
			wantDenied(t, err, "http: GET "+u+" refused: destination", "the host does not allow private network destinations", "started with --http-allow-private")
		})
	}
}

// TestHTTPCheckWarnsOfRefusedURLs: the designer warns, before any run, of a
// static URL the address guard will refuse, naming the flag that opens it;
// it looks no name up.
func TestHTTPCheckWarnsOfRefusedURLs(t *testing.T) {
	check := Checks(Options{})["http"]
	for url, want := range map[string]string{
		"http://127.0.0.1:9/x":           "127.0.0.1 is a loopback address",
		"http://localhost:8080/":         "localhost is a loopback name",
		"http://api.localhost/":          "a loopback name",
		"http://[::1]:9/":                "::1 is a loopback address",
		"http://10.1.2.3/":               "10.1.2.3 is a private address",
		"http://169.254.169.254/latest/": "link-local",
		"https://api.example.com/v1":     "",
		"https://8.8.8.8/":               "",
		"{{.url}}":                       "",
	} {
		probs := check(map[string]any{"url": url})
		if want == "" {
			if len(probs) != 0 {
				t.Errorf("%s: %+v, want no warning", url, probs)
			}
			continue
		}
		if len(probs) != 1 || !probs[0].Warning || probs[0].Rule != RuleHostPolicy || probs[0].Field != "input.url" ||
			!strings.Contains(probs[0].Message, want) || !strings.Contains(probs[0].Message, HTTPAllowPrivateFlag) {
			t.Errorf("%s: %+v, want a host_policy warning saying %q and naming %s", url, probs, want, HTTPAllowPrivateFlag)
		}
	}
	if probs := Checks(Options{HTTPAllowPrivate: true})["http"](map[string]any{"url": "http://127.0.0.1/"}); len(probs) != 0 {
		t.Errorf("with %s: %+v", HTTPAllowPrivateFlag, probs)
	}
}

func TestHTTPRedirectToPrivateRefused(t *testing.T) {
	t.Parallel()
	// The "public" server is exempted from the guard; the redirect targets are not.
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	}))
	defer private.Close()
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "public")
		case "/to-private":
			http.Redirect(w, r, private.URL+"/", http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		}
	}))
	defer public.Close()
	pu, _ := url.Parse(public.URL)
	publicAddr := netip.MustParseAddrPort(pu.Host)
	h := newHTTPTool(Options{}.withDefaults(), func(ap netip.AddrPort) bool { return ap == publicAddr })

	out, err := h.call(context.Background(), map[string]any{"url": public.URL + "/ok"}, nil)
	if err != nil {
		t.Fatalf("exempted server: %v", err)
	}
	if out.(map[string]any)["body"] != "public" {
		t.Fatalf("out = %#v", out)
	}
	for _, path := range []string{"/to-private", "/to-metadata"} {
		_, err := h.call(context.Background(), map[string]any{"url": public.URL + path}, nil)
		wantDenied(t, err, "refused: destination")
	}
	_, err = h.call(context.Background(), map[string]any{"url": public.URL + "/to-file"}, nil)
	wantErr(t, err, `redirect to "file:///etc/passwd" refused: only http and https are allowed`)
}

func TestForbiddenAddr(t *testing.T) {
	t.Parallel()
	for addr, bad := range map[string]bool{
		"127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"169.254.169.254": true, "fe80::1": true, "fe80::1%eth0": true,
		"10.0.0.1": true, "172.16.0.1": true, "172.31.255.255": true, "192.168.1.1": true, "fc00::1": true, "fd12::1": true,
		"0.0.0.0": true, "0.1.2.3": true, "::": true,
		"224.0.0.1": true, "ff02::1": true,
		"::ffff:10.0.0.1": true, "64:ff9b::7f00:1": true,
		"8.8.8.8": false, "172.32.0.1": false, "2001:4860:4860::8888": false, "64:ff9b::808:808": false,
	} {
		if got := forbiddenAddr(netip.MustParseAddr(addr)) != ""; got != bad {
			t.Errorf("forbiddenAddr(%s) = %v, want %v", addr, got, bad)
		}
	}
}

// TestForbiddenAddrSpecialRanges: everything that is not globally reachable
// unicast is refused, embedded IPv4 addresses included; global unicast and
// the registry's globally reachable special ranges pass.
func TestForbiddenAddrSpecialRanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		want string // a piece of the reason; "" means allowed
	}{
		{"100.64.0.1", "shared address space"}, {"100.100.100.200", "shared address space"}, {"100.127.255.255", "shared address space"},
		{"198.18.0.1", "benchmarking"}, {"198.19.255.255", "benchmarking"},
		{"192.0.0.1", "IETF protocol assignment"}, {"192.0.0.170", "IETF protocol assignment"},
		{"240.0.0.1", "reserved"}, {"254.1.2.3", "reserved"}, {"255.255.255.255", "broadcast"},
		{"192.0.2.7", "documentation"}, {"198.51.100.7", "documentation"}, {"203.0.113.7", "documentation"},
		{"192.88.99.1", "6to4 relay"}, {"239.255.255.250", "multicast"},
		{"fec0::1", "site-local"}, {"fe80::1%eth0", "link-local"}, {"fd00:ec2::254", "unique local"},
		{"::a00:1", "IPv4-compatible"}, {"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:100.64.0.1", "shared address space (100.64.0.0/10"}, {"::ffff:127.0.0.1", "loopback"},
		{"64:ff9b::a9fe:a9fe", "link-local address (this includes cloud metadata endpoints) (embedded in a NAT64 address"},
		{"64:ff9b::6440:1", "shared address space"},
		{"64:ff9b:1::808:808", "local-use NAT64"},
		{"2002:a9fe:a9fe::1", "link-local address (this includes cloud metadata endpoints) (embedded in a 6to4 address"},
		{"2002:7f00:1::", "loopback"},
		// Teredo: server 65.54.227.120, client 127.0.0.1 (stored XOR 0xff: 80ff:fffe).
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback address (embedded in a Teredo address"},
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", "private address (10.0.0.0/8) (embedded in a Teredo address"},
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", "private address"}, // private Teredo server
		{"2001:db8::1", "documentation"}, {"3fff::1", "documentation"}, {"2001:2::1", "benchmarking"},
		{"100::1", "discard-only"}, {"5f00::1", "segment routing"}, {"2001:10::1", "ORCHID"},
		{"ff05::2", "multicast"}, {"::", "unspecified"}, {"::1", "loopback"},
		{"4000::1", "reserved IPv6"}, {"1::1", "reserved IPv6"}, {"e000::1", "reserved IPv6"},

		{"8.8.8.8", ""}, {"1.1.1.1", ""}, {"100.63.255.255", ""}, {"100.128.0.0", ""}, {"198.17.255.255", ""}, {"198.20.0.0", ""},
		{"192.0.0.9", ""}, {"192.0.0.10", ""}, {"192.31.196.1", ""}, {"223.255.255.255", ""},
		{"2606:4700:4700::1111", ""}, {"2001:4860:4860::8888", ""}, {"2001:4:112::1", ""}, {"2001:20::1", ""},
		{"::ffff:8.8.8.8", ""}, {"64:ff9b::808:808", ""}, {"2002:808:808::1", ""},
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", ""}, // Teredo client 8.8.8.8
	} {
		got := forbiddenAddr(netip.MustParseAddr(tc.addr))
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("forbiddenAddr(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

// errNotDialed stands for a connection the guard let through: the stubbed
// Control hook returns it before connect(2), so no packet leaves the machine.
var errNotDialed = errors.New("guard passed; stub dialer does not connect")

// TestHTTPGuardStubDialer runs the tool's real dialer on special addresses
// with its Control hook wrapped so that a connection the guard allows is
// stopped before it is made: refused ones must fail with the policy error.
func TestHTTPGuardStubDialer(t *testing.T) {
	t.Parallel()
	h := newHTTPTool(Options{}.withDefaults(), nil)
	guard := h.dialer.Control
	var reached []string
	h.dialer.Control = func(network, address string, c syscall.RawConn) error {
		if err := guard(network, address, c); err != nil {
			return err
		}
		reached = append(reached, address)
		return errNotDialed
	}
	for _, u := range []string{
		"http://100.64.0.1/", "http://100.100.100.200/latest/meta-data/", "http://198.18.0.1/", "http://192.0.0.8/",
		"http://240.0.0.1/", "http://255.255.255.255/", "http://[fec0::1]/", "http://[::a9fe:a9fe]/",
		"http://[::ffff:100.64.0.1]/", "http://[64:ff9b::a9fe:a9fe]/", "http://[64:ff9b:1::a9fe:a9fe]/",
		"http://[2002:a9fe:a9fe::1]/", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "http://[2001:db8::1]/",
	} {
		_, err := h.call(context.Background(), map[string]any{"url": u, "timeout": 2.0}, nil)
		wantDenied(t, err, "refused: destination", "does not allow private network destinations")
	}
	if len(reached) != 0 {
		t.Fatalf("the guard let through %v", reached)
	}
	for _, u := range []string{"http://8.8.8.8/", "http://[2606:4700:4700::1111]/", "http://[64:ff9b::808:808]/"} {
		_, err := h.call(context.Background(), map[string]any{"url": u, "timeout": 2.0}, nil)
		if !errors.Is(err, errNotDialed) {
			t.Errorf("%s: err = %v, want the stub's %v (the guard must allow it)", u, err, errNotDialed)
		}
	}
}

// Errors name the URL without its user info and query values.
func TestHTTPErrorsRedactURL(t *testing.T) {
	t.Parallel()
	h := newHTTPTool(Options{}.withDefaults(), nil)
	_, err := h.call(context.Background(), map[string]any{"url": "http://admin:hunter2@127.0.0.1:9/x?api_key=SECRET&q=1"}, nil)
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "admin") ||
		!strings.Contains(err.Error(), "http://***@127.0.0.1:9/x?api_key=***&q=***") {
		t.Fatalf("err = %v", err)
	}
}
