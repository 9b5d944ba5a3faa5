package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/chainstudio/studio/static"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// assetHash fingerprints the embedded static files; pages link assets as
// /static/v/<hash>/<file> (views.Asset), so they can be cached for a year.
var assetHash = func() string {
	h := sha256.New()
	_ = fs.WalkDir(static.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.FS.ReadFile(p)
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}()

func init() { views.AssetVersion = assetHash }

// serveStatic serves the embedded files under /static/.
func (s *Server) serveStatic(c echo.Context) error {
	name := path.Clean(strings.TrimPrefix(c.Param("*"), "/"))
	current := c.QueryParam("v") == assetHash
	if rest, ok := strings.CutPrefix(name, "v/"); ok { // v/<hash>/<file>
		version, file, found := strings.Cut(rest, "/")
		if !found {
			return echo.ErrNotFound
		}
		name, current = file, version == assetHash
	}
	if name == "." || strings.HasPrefix(name, "..") || strings.HasSuffix(name, ".go") {
		return echo.ErrNotFound
	}
	b, err := static.FS.ReadFile(name)
	if err != nil {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	if current {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("ETag", `"`+assetHash+`"`)
	if c.Request().Header.Get("If-None-Match") == `"`+assetHash+`"` {
		return c.NoContent(http.StatusNotModified)
	}
	ct := "application/octet-stream"
	switch path.Ext(name) {
	case ".js":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".txt":
		ct = "text/plain; charset=utf-8"
	case ".svg":
		ct = "image/svg+xml"
	}
	return c.Blob(http.StatusOK, ct, b)
}
