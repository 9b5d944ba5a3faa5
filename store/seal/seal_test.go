package seal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpens(t *testing.T) {
	k, _, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := k.Seal([]byte("s3cret-token"), []byte("id1/token"))
	b, _ := k.Seal([]byte("s3cret-token"), []byte("id1/token"))
	if bytes.Equal(a, b) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if bytes.Contains(a, []byte("s3cret")) {
		t.Fatal("the sealed value contains the plain text")
	}
	got, err := k.Open(a, []byte("id1/token"))
	if err != nil || string(got) != "s3cret-token" {
		t.Fatalf("open: %q %v", got, err)
	}
}

func TestOpenRefusesWhatDoesNotBelong(t *testing.T) {
	k, _, _ := Generate()
	other, _, _ := Generate()
	sealed, _ := k.Seal([]byte("v"), []byte("id1/token"))
	flipped := append([]byte(nil), sealed...)
	flipped[len(flipped)-1] ^= 1
	cases := map[string]func() ([]byte, error){
		"another credential": func() ([]byte, error) { return k.Open(sealed, []byte("id2/token")) },
		"another field":      func() ([]byte, error) { return k.Open(sealed, []byte("id1/password")) },
		"another key":        func() ([]byte, error) { return other.Open(sealed, []byte("id1/token")) },
		"altered":            func() ([]byte, error) { return k.Open(flipped, []byte("id1/token")) },
		"truncated":          func() ([]byte, error) { return k.Open(sealed[:5], []byte("id1/token")) },
		"empty":              func() ([]byte, error) { return k.Open(nil, []byte("id1/token")) },
	}
	for name, open := range cases {
		if _, err := open(); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: %v, want ErrOpen", name, err)
		}
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "studio.key")
	_, text, _ := Generate()
	if err := WriteFile(path, text); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o, want 0600", info.Mode().Perm())
	}
	if err := WriteFile(path, text); err == nil {
		t.Fatal("an existing key file was replaced")
	}
	if _, err := LoadFile(path); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	if _, err := LoadFile(path); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Fatalf("a world-readable key file: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not hex"), 0o600)
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a malformed key file: %v (want its path named)", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.key")); err == nil || !strings.Contains(err.Error(), "missing.key") {
		t.Fatalf("a missing key file: %v", err)
	}
}
