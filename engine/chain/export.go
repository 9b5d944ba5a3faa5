package chain

import (
	"bytes"
	"encoding/json"
)

// MarshalExport is the byte form of every exported file (a chain document or
// an A2E chain/req), written for people and for git: 2-space indent, a final
// newline, and <, > and & kept literal (encoding/json would write \u003e, an
// expression's ">" unreadable in a diff). Struct fields come in the model's
// declaration order and map keys sorted, so exporting the same chain twice
// gives the same bytes.
func MarshalExport(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
