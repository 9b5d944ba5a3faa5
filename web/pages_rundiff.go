package web

import (
	"net/http"
	"net/url"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// runDiffPageRoutes: the page comparing two runs, its canvas data, and the
// "Compare with…" control of a run's page.
func (s *Server) runDiffPageRoutes(e *echo.Echo) {
	e.GET("/runs/:id/diff/:other", s.pageRunDiff)
	e.GET("/runs/:id/diff/:other/data", s.pageRunDiffData)
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

// runDiffCanvasData is what the comparison's canvas draws: b's chain, the
// nodes and edges only a's chain had, the edges each run fired, and the
// comparison.
type runDiffCanvasData struct {
	Doc          *engine.Chain `json:"doc"`
	RemovedNodes []engine.Node `json:"removed_nodes"`
	RemovedEdges []engine.Edge `json:"removed_edges"`
	FiredA       []string      `json:"fired_a"`
	FiredB       []string      `json:"fired_b"`
	Diff         runDiffJSON   `json:"diff"`
}

func (s *Server) pageRunDiffData(c echo.Context) error {
	cmp, err := s.compareRuns(c.Request().Context(), pageParam(c, "id"), pageParam(c, "other"))
	if err != nil {
		return err
	}
	d := runDiffCanvasData{Doc: cmp.sideB.Chain, RemovedNodes: []engine.Node{}, RemovedEdges: []engine.Edge{},
		FiredA: allFired(cmp.sideA), FiredB: allFired(cmp.sideB), Diff: cmp.json}
	if d.Doc == nil {
		d.Doc = &engine.Chain{Nodes: []engine.Node{}}
	}
	inB := map[string]bool{}
	for _, n := range d.Doc.Nodes {
		inB[n.ID] = true
	}
	edgesB := map[string]bool{}
	for _, e := range d.Doc.Edges {
		edgesB[e.ID] = true
	}
	if a := cmp.sideA.Chain; a != nil {
		for _, n := range a.Nodes {
			if !inB[n.ID] {
				d.RemovedNodes = append(d.RemovedNodes, n)
			}
		}
		for _, e := range a.Edges {
			if !edgesB[e.ID] {
				d.RemovedEdges = append(d.RemovedEdges, e)
			}
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, d)
}

func allFired(s *inspect.RunSide) []string {
	out := []string{}
	for _, ids := range s.Fired {
		out = append(out, ids...)
	}
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
