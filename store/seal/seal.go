// Package seal encrypts credential values at rest: AES-256-GCM from the
// standard library, a fresh random nonce for every value, and associated
// data (the credential's id and the field's name) bound to each, so that a
// sealed value copied to another credential or field does not open.
//
// A key is 32 random bytes, kept in a file as 64 hex digits (or given in
// the environment the same way). The file is created with mode 0600 and a
// key file others can read is refused.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of a key in bytes (AES-256).
const KeySize = 32

// version prefixes every sealed value so that a later format can be told apart.
const version byte = 1

// ErrOpen is returned when a value does not open: the wrong key, or a value
// that was changed, truncated or moved to another credential or field.
var ErrOpen = errors.New("seal: the value does not open with this key (wrong key, or the value was altered)")

// Key seals and opens values.
type Key struct{ aead cipher.AEAD }

// NewKey makes a key from 32 bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("seal: a key is %d bytes, got %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Key{aead: aead}, nil
}

// ParseKey reads a key written as 64 hex digits (surrounding space ignored).
func ParseKey(text string) (*Key, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(text))
	if err != nil || len(raw) != KeySize {
		return nil, fmt.Errorf("seal: a key is %d hex digits (%d random bytes)", 2*KeySize, KeySize)
	}
	return NewKey(raw)
}

// Generate returns a new random key and its text form.
func Generate() (*Key, string, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("seal: random key: %w", err)
	}
	k, err := NewKey(raw)
	if err != nil {
		return nil, "", err
	}
	return k, hex.EncodeToString(raw), nil
}

// LoadFile reads the key in path. A file that group or others can read is
// refused: the key opens every credential.
func LoadFile(path string) (*Key, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("credentials key file %s: %w", path, err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("credentials key file %s is readable by others (mode %04o): chmod 600 it", path, info.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("credentials key file %s: %w", path, err)
	}
	k, err := ParseKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("credentials key file %s: %w", path, err)
	}
	return k, nil
}

// WriteFile writes a new key's text to path with mode 0600, refusing to
// replace a file that exists; the write is synced before it returns.
func WriteFile(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("credentials key file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("credentials key file %s exists already: %w", path, err)
		}
		return fmt.Errorf("credentials key file %s: %w", path, err)
	}
	if _, err := f.WriteString(text + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("credentials key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("credentials key file %s: %w", path, err)
	}
	return f.Close()
}

// Seal encrypts plain, binding aad to it.
func (k *Key) Seal(plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plain)+k.aead.Overhead())
	out = append(out, version)
	out = append(out, nonce...)
	return k.aead.Seal(out, nonce, plain, aad), nil
}

// Open decrypts a sealed value with the aad it was sealed with.
func (k *Key) Open(sealed, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < 1+n+k.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := k.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
