package enginetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
)

// JSON is v as JSON with <, > and & kept literal, for failure messages.
func JSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// MustDecode decodes a chain document under the default limits, failing t
// when it does not decode.
func MustDecode(t testing.TB, doc string) *engine.Chain {
	t.Helper()
	c, err := engine.Decode([]byte(doc), engine.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}
