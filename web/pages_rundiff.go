package web

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// runDiffPageRoutes: the page comparing two runs and the "Compare with…"
// control of a run's page. The page's canvas reads /v1: the comparison
// (GET /v1/runs/{id}/diff/{other}) and the two runs' chains.
func (s *Server) runDiffPageRoutes(e *echo.Echo) {
	e.GET("/runs/:id/diff/:other", s.pageRunDiff)
	e.GET("/runs/:id/compare-with", s.fragCompareWith)
	e.GET("/runs/:id/compare", s.pageCompare)
}

// Bounds of the "Compare with…" list: the runs just newer and just older
// than the run, found within the chain's newest compareScanPages pages.
const (
	compareNeighbours = 10
	compareScanPages  = 10
	compareScanPage   = 100
)

// pageRunDiff shows two runs compared: b's chain drawn with each node
// coloured by what differs, and a table per node.
func (s *Server) pageRunDiff(c echo.Context) error {
	cmp, err := s.compareRuns(c.Request().Context(), pageParam(c, "id"), pageParam(c, "other"))
	if err != nil {
		return err
	}
	labels := views.NodeLabels(cmp.sideA.Chain)
	for id, l := range views.NodeLabels(cmp.sideB.Chain) {
		labels[id] = l
	}
	return renderPage(c, http.StatusOK, views.RunDiffPage(views.RunDiffView{
		A: cmp.runA, B: cmp.runB, Diff: cmp.json.RunDiff, SameVersion: cmp.json.SameVersion, Labels: labels,
	}))
}

// allFired is every edge a run fired, sorted (each node's list holds its
// own outgoing edges, so no id is in two lists).
func allFired(s *inspect.RunSide) []string {
	out := []string{}
	for _, ids := range s.Fired {
		out = append(out, ids...)
	}
	slices.Sort(out)
	return out
}

// fragCompareWith is the "Compare with…" control of a run's page: a select
// of the chain's runs just newer and just older than this one, the
// previous run chosen.
func (s *Server) fragCompareWith(c echo.Context) error {
	ctx := c.Request().Context()
	r, err := s.db.GetRunInfo(ctx, pageParam(c, "id"))
	if err != nil {
		return pageNotFound(err, "run")
	}
	var newer, older []store.Run
	if r.ChainID != "" {
		found, before := false, ""
	scan:
		for range compareScanPages {
			list, next, err := s.db.ListRuns(ctx, store.RunFilter{ChainID: r.ChainID, Limit: compareScanPage, Before: before})
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
	return renderPage(c, http.StatusOK, views.CompareWith(r.ID, opts))
}

// pageCompare is the "Compare with…" form's target: the chosen run is a
// (the baseline), this run b.
func (s *Server) pageCompare(c echo.Context) error {
	id, with := pageParam(c, "id"), c.QueryParam("with")
	if with == "" {
		return apiError(EBADREQUEST, "bad_parameter", "with is required: the run to compare this run with", map[string]any{"parameter": "with"})
	}
	return c.Redirect(http.StatusSeeOther, "/runs/"+url.PathEscape(with)+"/diff/"+url.PathEscape(id))
}
