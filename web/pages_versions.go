package web

import (
	"net/http"
	"strconv"

	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// pageVersions lists a chain's versions; ?v=N shows version N drawn with its
// differences from the current version.
func (s *Server) pageVersions(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.db.GetChain(ctx, pageParam(c, "id"))
	if err != nil {
		return pageNotFound(err, "chain")
	}
	versions, err := s.db.ListVersions(ctx, ch.ID)
	if err != nil {
		return err
	}
	var sel *store.ChainVersion
	var diff *inspect.ChainDiff
	if v, err := strconv.Atoi(c.QueryParam("v")); err == nil {
		if sel, err = s.db.GetVersion(ctx, ch.ID, v); err != nil {
			return pageNotFound(err, "version")
		}
		if diff, err = s.db.DiffVersions(ctx, ch.ID, v, ch.Version); err != nil {
			return err
		}
	}
	return renderPage(c, http.StatusOK, views.VersionsPage(ch, versions, sel, diff))
}

// pageRestore saves version v's content as a new version and opens the editor.
func (s *Server) pageRestore(c echo.Context) error {
	v, err := strconv.Atoi(c.Param("v"))
	if err != nil {
		return s.formRefusal(c, "Cannot restore", EBADREQUEST, "bad_parameter", "version must be a number")
	}
	ch, err := s.db.RestoreVersion(c.Request().Context(), pageParam(c, "id"), v, 0, "")
	if err != nil {
		return s.formError(c, "Cannot restore", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// pagePublishVersion publishes version v (the versions page's "Publish vN",
// a rollback as much as a release) and shows the versions page again.
func (s *Server) pagePublishVersion(c echo.Context) error {
	v, err := strconv.Atoi(c.Param("v"))
	if err != nil || v < 1 {
		return s.formRefusal(c, "Cannot publish", EBADREQUEST, "bad_parameter", "version must be a positive number")
	}
	ctx := c.Request().Context()
	ch, err := s.chainAt(ctx, pageParam(c, "id"), v)
	if err != nil {
		return s.formError(c, "Cannot publish", err)
	}
	if err := s.runs.CheckRun(ctx, ch.ID, ch.Doc); err != nil {
		return s.formError(c, "Cannot publish v"+strconv.Itoa(v), err)
	}
	pub, err := s.db.PublishChain(ctx, ch.ID, v, 0, callerOf(c).Name, "")
	if err != nil {
		return s.formError(c, "Cannot publish", err)
	}
	if pub.MCPExposed {
		s.mcp.exposureChanged(ctx)
	}
	return pageRedirect(c, "/chains/"+ch.ID+"/versions?v="+strconv.Itoa(v))
}
