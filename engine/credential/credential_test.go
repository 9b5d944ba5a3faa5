package credential

import (
	"encoding/base64"
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
