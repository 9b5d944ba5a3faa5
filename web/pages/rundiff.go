package pages

import (
	"net/http"
	"net/url"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// Bounds of the "Compare with…" list: the runs just newer and just older
// than the run, found within the chain's newest compareScanPages pages.
const (
	compareNeighbours = 10
	compareScanPages  = 10
	compareScanPage   = 100
)

// PageRunDiff shows two runs compared: b's chain drawn with each node
// coloured by what differs, and a table per node.
func (s *Runs) PageRunDiff(c echo.Context) error {
	cmp, err := s.CompareRuns(c.Request().Context(), ops.PageParam(c, "id"), ops.PageParam(c, "other"), !s.SeesCredentialed(c))
	if err != nil {
		return err
	}
	labels := views.NodeLabels(cmp.SideA.Chain)
	for id, l := range views.NodeLabels(cmp.SideB.Chain) {
		labels[id] = l
	}
	return RenderPage(c, http.StatusOK, views.RunDiffPage(views.RunDiffView{
		A: cmp.RunA, B: cmp.RunB, Diff: cmp.JSON.RunDiff, SameVersion: cmp.JSON.SameVersion, Labels: labels,
	}))
}

// FragCompareWith is the "Compare with…" control of a run's page: a select
// of the chain's runs just newer and just older than this one, the
// previous run chosen.
func (s *Runs) FragCompareWith(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.DB.GetRunInfo(ctx, ops.PageParam(c, "id"))
	if err != nil {
		return ops.PageNotFound(err, "run")
	}
	var newer, older []store.Run
	if r.ChainID != "" {
		found, before := false, ""
	scan:
		for range compareScanPages {
			list, next, err := s.DB.ListRuns(ctx, store.RunFilter{ChainID: r.ChainID, Limit: compareScanPage, Before: before})
			if err != nil {
				return err
			}
			for _, x := range list {
				switch {
				case x.ID == r.ID:
					found = true
				case !found:
					if newer = append(newer, x); len(newer) > compareNeighbours {
						newer = newer[1:] // keep the ones closest to the run
					}
				default:
					if older = append(older, x); len(older) == compareNeighbours {
						break scan
					}
				}
			}
			if next == "" {
				break
			}
			before = next
		}
	}
	opts := make([]views.CompareOption, 0, len(newer)+len(older))
	// The previous run is the default; the first run of a chain has none, so
	// the next one is.
	for i := range newer {
		opts = append(opts, views.CompareOption{Run: newer[i], Newer: true, Default: len(older) == 0 && i == len(newer)-1})
	}
	for i := range older {
		opts = append(opts, views.CompareOption{Run: older[i], Default: i == 0})
	}
	return RenderPage(c, http.StatusOK, views.CompareWith(r.ID, opts))
}

// PageCompare is the "Compare with…" form's target: the chosen run is a
// (the baseline), this run b.
func (s *Runs) PageCompare(c echo.Context) error {
	id, with := ops.PageParam(c, "id"), c.QueryParam("with")
	if with == "" {
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "with is required: the run to compare this run with", map[string]any{"parameter": "with"})
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+url.PathEscape(with)+"/diff/"+url.PathEscape(id))
}
