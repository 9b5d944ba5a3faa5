package edit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
)

// js is v as JSON with <, > and & literal, for failure messages.
func js(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func mustDecode(t testing.TB, doc string) *engine.Chain {
	t.Helper()
	c, err := engine.Decode([]byte(doc), engine.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}
