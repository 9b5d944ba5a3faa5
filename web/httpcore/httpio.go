package httpcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/labstack/echo/v4"
)

// Reading request bodies: whole, as strict JSON with errors that name the
// place, or as a chain document.

// ReadBody reads the whole request body. An over-limit body is the body
// limit middleware's 413, passed through unchanged.
func ReadBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, Error(EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
	}
	return b, nil
}

// BindJSON decodes a small JSON request body strictly into v. An empty body
// leaves v as is. Malformed JSON names the line and column.
func BindJSON(c echo.Context, v any) error {
	body, err := ReadBody(c)
	if err != nil {
		return err
	}
	return BindJSONBytes(body, v)
}

// BindJSONBytes is BindJSON of a body already read.
func BindJSONBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return JSONBodyError(body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Error(EBADREQUEST, "bad_json", "malformed JSON: unexpected data after the JSON value", nil)
	}
	return nil
}

// JSONBodyError words a decoding error of body as a 400 naming the place.
func JSONBodyError(body []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := chain.LineCol(body, int(syn.Offset)-1)
		return Error(EBADREQUEST, "bad_json", fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, syn.Error()),
			map[string]any{"line": line, "column": col})
	case errors.As(err, &typ):
		return Error(EBADREQUEST, "bad_json", fmt.Sprintf("wrong type for %s: got JSON %s", typ.Field, typ.Value),
			map[string]any{"path": typ.Field})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Error(EBADREQUEST, "bad_json", "malformed JSON: the body ends before the value is complete", nil)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		f = strings.Trim(f, `"`)
		return Error(EBADREQUEST, "bad_json", fmt.Sprintf("unknown field %q", f), map[string]any{"path": f})
	}
	return Error(EBADREQUEST, "bad_json", "malformed JSON: "+msg, nil)
}

// DecodeDocument reads a chain document (studio or A2E chain/req) from a
// body, within limits.
func DecodeDocument(body []byte, limits chain.Limits) (*chain.Chain, *chain.Request, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil, Error(EBADREQUEST, chain.CodeDecode, "the body is empty: send a chain document or an A2E chain/req message", nil)
	}
	doc, req, err := chain.DecodeDocument(body, limits)
	if err != nil {
		return nil, nil, DecodeErr(err)
	}
	return doc, req, nil
}

// DecodeErr turns a document decode failure into a 400 naming the place.
func DecodeErr(err error) error {
	var de *chain.DecodeError
	if errors.As(err, &de) {
		return Error(EBADREQUEST, chain.CodeDecode, "the body is not a valid chain document: "+de.Error(),
			map[string]any{"path": de.Path, "message": de.Msg})
	}
	return Error(EBADREQUEST, chain.CodeDecode, "the body is not a valid chain document: "+err.Error(), nil)
}
