package builtin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine/tool"
)

// fakeCredentials resolves from a map, as the vault does for a run.
type fakeCredentials map[string]*tool.Secret

func (f fakeCredentials) Credential(_ context.Context, name string) (*tool.Secret, error) {
	if s, ok := f[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("credential %q does not exist", name)
}

// echoAll answers everything it was sent: headers, query, and (on /fail) a
// 500 whose body repeats the Authorization header, as careless servers do.
func echoAll(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
	json.NewEncoder(w).Encode(map[string]any{"headers": r.Header, "query": r.URL.RawQuery, "path": r.URL.Path})
}

// loopback is the allowed hosts of the credentials these tests send to
// their loopback fakes.
var loopback = []string{"127.0.0.1"}

// A credential goes only to its allowed hosts: a request elsewhere is
// refused before anything is sent, and so is a redirect from an allowed
// host to another one; a credential without a list goes nowhere.
func TestHTTPCredentialOnlyToAllowedHosts(t *testing.T) {
	var attackerHits atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { attackerHits.Add(1) }))
	defer attacker.Close()
	// localhost is another host than 127.0.0.1 to the check.
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, attackerURL+"/stolen", http.StatusFound)
			return
		}
		if r.URL.Path == "/hop" { // another allowed place: followed
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		echoAll(w, r)
	}))
	defer allowed.Close()
	call := httpFunc(Options{HTTPAllowPrivate: true})
	ctx := tool.WithCredentials(context.Background(), fakeCredentials{
		"gh":      {Name: "gh", Type: "bearer", Hosts: loopback, Values: map[string]any{"token": "tok-allowed-0123456789"}},
		"nowhere": {Name: "nowhere", Type: "bearer", Values: map[string]any{"token": "tok-nowhere-0123456789"}},
	})
	_, err := call(ctx, map[string]any{"url": attackerURL + "/x", "auth": map[string]any{"credential": "gh"}})
	if err == nil || !errors.Is(err, tool.ErrDenied) || !strings.Contains(err.Error(), `credential "gh"`) || !strings.Contains(err.Error(), strings.TrimPrefix(attackerURL, "http://")) {
		t.Fatalf("a request to a host not on the list: %v", err)
	}
	_, err = call(ctx, map[string]any{"url": allowed.URL + "/bounce", "auth": map[string]any{"credential": "gh"}})
	if err == nil || !errors.Is(err, tool.ErrDenied) || !strings.Contains(err.Error(), "redirect") || !strings.Contains(err.Error(), `credential "gh"`) {
		t.Fatalf("a redirect to a host not on the list: %v", err)
	}
	_, err = call(ctx, map[string]any{"url": allowed.URL + "/x", "auth": map[string]any{"credential": "nowhere"}})
	if err == nil || !strings.Contains(err.Error(), "no allowed hosts") {
		t.Fatalf("a credential without a list: %v", err)
	}
	if n := attackerHits.Load(); n != 0 {
		t.Fatalf("the host not on the list got %d requests", n)
	}
	out, err := call(ctx, map[string]any{"url": allowed.URL + "/hop", "auth": map[string]any{"credential": "gh"}})
	if err != nil || out.(map[string]any)["body"].(map[string]any)["path"] != "/ok" {
		t.Fatalf("a redirect within the allowed host: %v %v", out, err)
	}
}

func TestHTTPCredentialTypes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echoAll))
	defer srv.Close()
	call := httpFunc(Options{HTTPAllowPrivate: true})
	creds := fakeCredentials{
		"bearer":  {Name: "bearer", Type: "bearer", Hosts: loopback, Values: map[string]any{"token": "tok-bearer-0123456789"}},
		"header":  {Name: "header", Type: "api_key", Hosts: loopback, Values: map[string]any{"in": "header", "name": "X-API-Key", "value": "key-header-0123456789"}},
		"query":   {Name: "query", Type: "api_key", Hosts: loopback, Values: map[string]any{"in": "query", "name": "api_key", "value": "key query/+&0123"}},
		"basic":   {Name: "basic", Type: "basic", Hosts: loopback, Values: map[string]any{"username": "ann", "password": "pw-basic-0123456789"}},
		"headers": {Name: "headers", Type: "headers", Hosts: loopback, Values: map[string]any{"headers": map[string]any{"X-Team": "core", "X-Secret": "hdr-secret-0123456789"}}},
		"model":   {Name: "model", Type: "openai", Values: map[string]any{"api_key": "sk-model"}},
	}
	ctx := tool.WithCredentials(context.Background(), creds)
	cases := []struct {
		name   string
		check  func(h http.Header, q url.Values) bool
		secret string
	}{
		{"bearer", func(h http.Header, _ url.Values) bool {
			return h.Get("Authorization") == "Bearer tok-bearer-0123456789"
		}, "tok-bearer-0123456789"},
		{"header", func(h http.Header, _ url.Values) bool { return h.Get("X-API-Key") == "key-header-0123456789" }, "key-header-0123456789"},
		{"query", func(_ http.Header, q url.Values) bool { return q.Get("api_key") == "key query/+&0123" }, "key query/+&0123"},
		{"basic", func(h http.Header, _ url.Values) bool {
			return h.Get("Authorization") == "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:pw-basic-0123456789"))
		}, "pw-basic-0123456789"},
		{"headers", func(h http.Header, _ url.Values) bool {
			return h.Get("X-Secret") == "hdr-secret-0123456789" && h.Get("X-Team") == "core"
		}, "hdr-secret-0123456789"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// What the server received is checked on its side through the
			// echo, before scrubbing: a request the stub sees as
			// authenticated answers 200 with the header; the node's output
			// must not hold it in any form.
			var seen struct {
				h http.Header
				q url.Values
			}
			check := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen.h, seen.q = r.Header.Clone(), r.URL.Query()
				echoAll(w, r)
			}))
			defer check.Close()
			out, err := call(ctx, map[string]any{"url": check.URL + "/x?keep=1", "auth": map[string]any{"credential": tc.name}})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(seen.h, seen.q) {
				t.Fatalf("the server did not get the credential: %v %v", seen.h, seen.q)
			}
			b, _ := json.Marshal(out)
			text := string(b)
			for _, form := range []string{tc.secret, base64.StdEncoding.EncodeToString([]byte(tc.secret)), url.QueryEscape(tc.secret)} {
				if strings.Contains(text, form) {
					t.Fatalf("the output holds the secret (%q): %s", form, text)
				}
			}
			if tc.name == "basic" && strings.Contains(text, base64.StdEncoding.EncodeToString([]byte("ann:pw-basic-0123456789"))) {
				t.Fatalf("the output holds the basic auth header: %s", text)
			}
			if !strings.Contains(text, "[credential]") {
				t.Fatalf("nothing was scrubbed, so the echo did not carry it: %s", text)
			}
		})
	}

	if _, err := call(ctx, map[string]any{"url": srv.URL, "auth": map[string]any{"credential": "model"}}); err == nil || !strings.Contains(err.Error(), "cannot carry") {
		t.Fatalf("a model key on an http node: %v", err)
	}
	if _, err := call(ctx, map[string]any{"url": srv.URL, "auth": map[string]any{"credential": "nope"}}); err == nil || !strings.Contains(err.Error(), `"nope" does not exist`) {
		t.Fatalf("unknown credential: %v", err)
	}
	if _, err := call(context.Background(), map[string]any{"url": srv.URL, "auth": map[string]any{"credential": "bearer"}}); !errors.Is(err, tool.ErrNoCredentials) {
		t.Fatalf("no credential store: %v", err)
	}
	for _, bad := range []any{"github", map[string]any{"credential": 3}, map[string]any{"credential": "x", "token": "inline"}} {
		if _, err := call(ctx, map[string]any{"url": srv.URL, "auth": bad}); err == nil || !strings.Contains(err.Error(), "auth") {
			t.Errorf("auth %v: %v", bad, err)
		}
	}
	if _, err := call(ctx, map[string]any{"url": srv.URL, "auth": map[string]any{}}); err != nil {
		t.Fatalf("an empty auth (a cleared form) is no auth: %v", err)
	}
}

// A redirect to another host does not carry an API key's header or a
// custom header set there (net/http drops only Authorization).
func TestHTTPCredentialNotSentAcrossRedirect(t *testing.T) {
	var got http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer other.Close()
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// 127.0.0.1 and localhost are different hosts to the client.
		http.Redirect(w, r, strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/", http.StatusFound)
	}))
	defer first.Close()
	call := httpFunc(Options{HTTPAllowPrivate: true})
	creds := fakeCredentials{
		"h": {Name: "h", Type: "api_key", Hosts: []string{"127.0.0.1", "localhost"}, Values: map[string]any{"in": "header", "name": "X-API-Key", "value": "redirect-secret-1"}},
		"s": {Name: "s", Type: "headers", Hosts: []string{"127.0.0.1", "localhost"}, Values: map[string]any{"headers": map[string]any{"X-Secret": "redirect-secret-2"}}},
	}
	ctx := tool.WithCredentials(context.Background(), creds)
	for _, name := range []string{"h", "s"} {
		got = nil
		if _, err := call(ctx, map[string]any{"url": first.URL + "/", "auth": map[string]any{"credential": name}}); err != nil {
			t.Fatal(err)
		}
		if got == nil {
			t.Fatal("the redirect was not followed")
		}
		if got.Get("X-API-Key") != "" || got.Get("X-Secret") != "" {
			t.Fatalf("%s: the other host got the credential: %v", name, got)
		}
	}
}
