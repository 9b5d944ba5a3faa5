package httpcore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"time"
)

// RetryAfter is a Retry-After value: whole seconds, at least 1.
func RetryAfter(d time.Duration) string {
	return fmt.Sprint(max(1, int(math.Ceil(d.Seconds()))))
}

// NewUserToken returns a new user token (256 random bits, hex, with a
// "stu_" prefix that secret scanners and people can recognise) and the
// SHA-256 the store keeps instead of it.
func NewUserToken() (token string, hash []byte, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("make a token: %w", err)
	}
	token = "stu_" + hex.EncodeToString(b[:])
	return token, TokenHash(token), nil
}

// TokenHash is the SHA-256 of a token, the form the store keeps and looks
// tokens up by. A plain hash suffices: the tokens are random and long, so
// there is nothing to guess from it (a password would need a slow hash).
func TokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
