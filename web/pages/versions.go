package pages

import (
	"net/http"
	"strconv"

	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// PageVersions lists a chain's versions; ?v=N shows version N drawn with its
// differences from the current version.
func (s *Chains) PageVersions(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.DB.GetChain(ctx, ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "chain")
	}
	versions, err := s.DB.ListVersions(ctx, ch.ID)
	if err != nil {
		return err
	}
	var sel *store.ChainVersion
	var diff *inspect.ChainDiff
	if v, err := strconv.Atoi(c.QueryParam("v")); err == nil {
		if sel, err = s.DB.GetVersion(ctx, ch.ID, v); err != nil {
			return ops.PageNotFound(err, "version")
		}
		// ch.Doc is the current version's document.
		diff = inspect.Diff(sel.Doc, ch.Doc)
	}
	return RenderPage(c, http.StatusOK, views.VersionsPage(ch, versions, sel, diff))
}

// PageRestore saves version v's content as a New version and opens the editor.
func (s *Chains) PageRestore(c echo.Context) error {
	v, err := strconv.Atoi(c.Param("v"))
	if err != nil {
		return s.formRefusal(c, "Cannot restore", httpcore.EBADREQUEST, "bad_parameter", "version must be a number")
	}
	ch, err := s.DB.RestoreVersion(c.Request().Context(), ops.PageParam(c, "id"), v, 0, "")
	if err != nil {
		return s.formError(c, "Cannot restore", err)
	}
	return pageRedirect(c, "/chains/"+ch.ID)
}

// PagePublishVersion publishes version v (the versions page's "Publish vN",
// a rollback as much as a release) and shows the versions page again.
func (s *Chains) PagePublishVersion(c echo.Context) error {
	v, err := strconv.Atoi(c.Param("v"))
	if err != nil || v < 1 {
		return s.formRefusal(c, "Cannot publish", httpcore.EBADREQUEST, "bad_parameter", "version must be a positive number")
	}
	ctx := c.Request().Context()
	ch, err := s.ChainAt(ctx, ops.PageParam(c, "id"), v)
	if err != nil {
		return s.formError(c, "Cannot publish", err)
	}
	if _, err := s.PublishVersion(c, ch, 0, ""); err != nil {
		return s.formError(c, "Cannot publish v"+strconv.Itoa(v), err)
	}
	return pageRedirect(c, "/chains/"+ch.ID+"/versions?v="+strconv.Itoa(v))
}
