package credential

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestAllowsURLMatchesHostsWildcardsAndBaseURLs(t *testing.T) {
	bearer, _ := Lookup(Bearer)
	hosts := []string{"api.example.com", "*.corp.example", "127.0.0.1:8080", "https://gw.example.net/v1/"}
	for _, c := range []struct {
		url string
		ok  bool
	}{
		{"https://api.example.com/anything", true},
		{"http://API.example.com:9000/x", true}, // a host entry takes any port
		{"https://evil.example.com/", false},
		{"https://api.example.com.evil.test/", false},
		{"https://a.b.corp.example/", true},
		{"https://corp.example/", false}, // the wildcard is for subdomains only
		{"https://xcorp.example/", false},
		{"http://127.0.0.1:8080/hook", true},
		{"http://127.0.0.1:8081/hook", false},
		{"https://gw.example.net/v1/chat", true},
		{"https://gw.example.net/v1", true},
		{"https://gw.example.net/v10/chat", false},
		{"https://gw.example.net/v1/../admin", false},
		{"https://gw.example.net/v1/%2e%2e/admin", false},
		{"http://gw.example.net/v1/chat", false}, // another scheme
		{"https://gw.example.net:8443/v1/chat", false},
		{"ftp://api.example.com/", false},
	} {
		err := bearer.AllowsURL("tok", nil, hosts, mustURL(t, c.url))
		if (err == nil) != c.ok {
			t.Errorf("%s: got %v, want allowed=%v", c.url, err, c.ok)
		}
	}
}

func TestAllowsURLRefusalNamesCredentialAndHost(t *testing.T) {
	bearer, _ := Lookup(Bearer)
	err := bearer.AllowsURL("github", nil, nil, mustURL(t, "https://attacker.test:4444/x"))
	var he *HostError
	if !errors.As(err, &he) || !he.NoList {
		t.Fatalf("an HTTP credential without a list must go nowhere: %v", err)
	}
	for _, want := range []string{`credential "github"`, "attacker.test:4444", "no allowed hosts", "Settings → Credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	err = bearer.AllowsURL("github", nil, []string{"api.github.com"}, mustURL(t, "https://attacker.test/"))
	if err == nil || !strings.Contains(err.Error(), "api.github.com") || !strings.Contains(err.Error(), "attacker.test") {
		t.Fatalf("refusal: %v", err)
	}
}

func TestDefaultHostsOfProviderKeys(t *testing.T) {
	oa, _ := Lookup(OpenAI)
	if err := oa.AllowsURL("k", nil, nil, mustURL(t, "https://api.openai.com/v1/chat/completions")); err != nil {
		t.Fatal(err)
	}
	if err := oa.AllowsURL("k", nil, nil, mustURL(t, "http://127.0.0.1:9999/v1/chat/completions")); err == nil {
		t.Fatal("an OpenAI key must not go to another host without an admin's list")
	}
	if err := oa.AllowsURL("k", nil, []string{"127.0.0.1"}, mustURL(t, "http://127.0.0.1:9999/v1")); err != nil {
		t.Fatalf("the admin's list replaces the default: %v", err)
	}
	oc, _ := Lookup(OpenAICompatible)
	v := Values{"base_url": "http://127.0.0.1:11434/v1"}
	if err := oc.AllowsURL("k", v, nil, mustURL(t, "http://127.0.0.1:11434/v1/chat/completions")); err != nil {
		t.Fatal(err)
	}
	if err := oc.AllowsURL("k", v, nil, mustURL(t, "http://127.0.0.1:11435/v1/chat/completions")); err == nil {
		t.Fatal("an openai_compatible key goes to its base_url only")
	}
}

func TestCleanHostsRefusesWhatIsNotAHost(t *testing.T) {
	got, err := CleanHosts([]string{" API.example.com ", "api.example.com", "", "*.Example.org", "https://GW.example.net", "[::1]:8080"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "api.example.com *.example.org https://gw.example.net/ [::1]:8080" {
		t.Fatalf("cleaned: %q", got)
	}
	for _, bad := range []string{"*.com", "a.*.example.com", "https://u:p@x.example/", "https://x.example/?k=v", "ftp://x.example/", "x.example/path", "x.example:http", "https://*.x.example/"} {
		if _, err := CleanHosts([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
