package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/labstack/echo/v4"
)

// Request and response helpers shared by every handler: reading bodies,
// strict JSON binding with errors that name the place, query and path
// parameters, ETags.

// etag is the ETag of a chain version (If-Match takes it back).
func etag(version int) string { return fmt.Sprintf(`"v%d"`, version) }

// readBody reads the whole request body. An over-limit body is the body
// limit middleware's 413, passed through unchanged.
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, apiError(EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
	}
	return b, nil
}

// bindJSON decodes a small JSON request body strictly into v. An empty body
// leaves v as is. Malformed JSON names the line and column.
func bindJSON(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	return bindJSONBytes(body, v)
}

func bindJSONBytes(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonBodyError(body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return apiError(EBADREQUEST, "bad_json", "malformed JSON: unexpected data after the JSON value", nil)
	}
	return nil
}

func jsonBodyError(body []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := engine.LineCol(body, int(syn.Offset)-1)
		return apiError(EBADREQUEST, "bad_json", fmt.Sprintf("malformed JSON at line %d, column %d: %s", line, col, syn.Error()),
			map[string]any{"line": line, "column": col})
	case errors.As(err, &typ):
		return apiError(EBADREQUEST, "bad_json", fmt.Sprintf("wrong type for %s: got JSON %s", typ.Field, typ.Value),
			map[string]any{"path": typ.Field})
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apiError(EBADREQUEST, "bad_json", "malformed JSON: the body ends before the value is complete", nil)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
		f = strings.Trim(f, `"`)
		return apiError(EBADREQUEST, "bad_json", fmt.Sprintf("unknown field %q", f), map[string]any{"path": f})
	}
	return apiError(EBADREQUEST, "bad_json", "malformed JSON: "+msg, nil)
}

// intParam parses an integer query or path parameter; def when absent.
func intParam(name, raw string, def, minimum, maximum int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("%s must be an integer, got %q", name, raw), map[string]any{"parameter": name})
	}
	if n < minimum || n > maximum {
		return 0, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("%s must be between %d and %d, got %d", name, minimum, maximum, n), map[string]any{"parameter": name})
	}
	return n, nil
}

// versionParam parses the {v} path parameter.
func versionParam(c echo.Context) (int, error) {
	raw := c.Param("v")
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, apiError(EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %q", raw), map[string]any{"parameter": "v"})
	}
	return n, nil
}
