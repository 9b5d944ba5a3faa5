// Package jsonlit encodes JSON that keeps <, > and & literal, for bytes that
// reach a file or an answer as they are.
package jsonlit

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal without HTML escaping: a RawMessage keeps its
// bytes when re-encoded, so an escape written here would reach the file.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
