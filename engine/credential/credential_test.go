package credential

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"strings"
	"testing"
)

func TestScrubberReplacesEveryForm(t *testing.T) {
	secret := "p@ss word/+=0123"
	s := NewScrubber([]string{secret})
	for _, form := range []string{
		secret,
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)),
		url.QueryEscape(secret),
		url.PathEscape(secret),
	} {
		got := s.String("before " + form + " after")
		if strings.Contains(got, form) || got != "before "+Mask+" after" {
			t.Errorf("%q: %q", form, got)
		}
	}
	v := s.Value(map[string]any{"h": []any{"Bearer " + secret, 3.0}, secret: true})
	m := v.(map[string]any)
	if _, leaked := m[secret]; leaked || m["h"].([]any)[0] != "Bearer "+Mask {
		t.Fatalf("value: %#v", v)
	}
}

func TestScrubberKeepsShortSecretsOut(t *testing.T) {
	// A two-letter secret would blank those letters everywhere.
	if got := NewScrubber([]string{"ab"}).String("abc"); got != "abc" {
		t.Fatalf("%q", got)
	}
}

func TestBasicSecretsIncludeThePair(t *testing.T) {
	typ, _ := Lookup(Basic)
	got := typ.Secrets(Values{"username": "ann", "password": "pw"})
	if len(got) != 2 || got[1] != "ann:pw" {
		t.Fatalf("%v", got)
	}
}

func TestSchemasMarkSecretsWriteOnly(t *testing.T) {
	for _, typ := range Types() {
		props := typ.Schema()["properties"].(map[string]any)
		for _, f := range typ.Fields {
			p := props[f.Name].(map[string]any)
			if (p["writeOnly"] == true) != f.Secret {
				t.Errorf("%s.%s: writeOnly %v, secret %v", typ.Name, f.Name, p["writeOnly"], f.Secret)
			}
		}
	}
}

// TestScrubberReplacesEncodedEchoes: a server that echoes a credential
// encoded (inside a base64 blob at any alignment, hex, another case, a JSON
// or HTML string) does not get it past the scrubber.
func TestScrubberReplacesEncodedEchoes(t *testing.T) {
	secret := `Tok<en>&"/'9f8A7b6C5d4E3f2A1b`
	s := NewScrubber([]string{secret})
	jsonSafe, _ := json.Marshal(map[string]string{"echo": secret})
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"echo": secret})
	variants := map[string]string{
		"base64 blob, offset 0": base64.StdEncoding.EncodeToString([]byte(`{"authorization":"Bearer ` + secret + `","x":1}`)),
		"base64 blob, offset 1": base64.StdEncoding.EncodeToString([]byte(`{"authorization":"Bearer  ` + secret + `","x":1}`)),
		"base64 blob, offset 2": base64.StdEncoding.EncodeToString([]byte(`{"authorization":"Bearer   ` + secret + `","x":1}`)),
		"base64url blob":        base64.RawURLEncoding.EncodeToString([]byte("a=" + secret + ";")),
		"hex":                   "sent: " + hex.EncodeToString([]byte(secret)),
		"HEX":                   "sent: " + strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"upper-cased":           "AUTHORIZATION: BEARER " + strings.ToUpper(secret),
		"JSON-escaped":          string(jsonSafe),
		"JSON, no HTML escapes": plain.String(),
		"JSON, escaped slashes": strings.ReplaceAll(string(jsonSafe), "/", `\/`),
		"HTML-escaped":          "<pre>" + html.EscapeString(secret) + "</pre>",
	}
	leaks := func(out string) bool {
		// Decode what can be decoded and look for the secret in it.
		for _, try := range []func(string) ([]byte, error){base64.StdEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString} {
			if b, err := try(strings.TrimPrefix(out, "sent: ")); err == nil && strings.Contains(strings.ToLower(string(b)), strings.ToLower(secret)) {
				return true
			}
		}
		var m map[string]string
		if json.Unmarshal([]byte(out), &m) == nil && m["echo"] == secret {
			return true
		}
		low := strings.ToLower(html.UnescapeString(out))
		return strings.Contains(low, strings.ToLower(secret)) || strings.Contains(low, "9f8a7b6c5d4e3f2a1b")
	}
	for name, v := range variants {
		if !leaks(v) {
			t.Fatalf("%s: the test's leak check misses the unscrubbed echo %q", name, v)
		}
		got := s.String(v)
		if !strings.Contains(got, Mask) || leaks(got) {
			t.Errorf("%s: scrubbed %q to %q", name, v, got)
		}
	}
	// Ordinary text stays as it is.
	if got := s.String("Bearer tokens and hex like 9f8a are fine"); got != "Bearer tokens and hex like 9f8a are fine" {
		t.Errorf("ordinary text changed: %q", got)
	}
}
