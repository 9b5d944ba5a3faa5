package ops

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// Etag is the ETag of a chain version (If-Match takes it back).
func Etag(version int) string { return fmt.Sprintf(`"v%d"`, version) }

// IntParam parses an integer query or path parameter; def when absent.
func IntParam(name, raw string, def, minimum, maximum int) (int, error) {
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("%s must be an integer, got %q", name, raw), map[string]any{"parameter": name})
	}
	if n < minimum || n > maximum {
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("%s must be between %d and %d, got %d", name, minimum, maximum, n), map[string]any{"parameter": name})
	}
	return n, nil
}

// VersionParam parses the {v} path parameter.
func VersionParam(c echo.Context) (int, error) {
	raw := c.Param("v")
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 {
		return 0, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("version must be a positive integer, got %q", raw), map[string]any{"parameter": "v"})
	}
	return n, nil
}

// PageParam is the path parameter name, unescaped (a node id may hold a slash).
func PageParam(c echo.Context, name string) string {
	v, err := url.PathUnescape(c.Param(name))
	if err != nil {
		return c.Param(name)
	}
	return v
}
