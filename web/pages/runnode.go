package pages

import (
	"errors"
	"net/http"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// FragRunNodeDialog renders the editor's "Run this node" dialog: the
// chain's latest runs, each checked as a source of the node's upstream
// outputs, the latest that has them chosen; when none has them, the older
// runs that reached the node, a page at a time (?before= the next page).
func (s *Chains) FragRunNodeDialog(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.ChainAt(ctx, ops.PageParam(c, "id"), 0)
	if err != nil {
		return err
	}
	node := ops.PageParam(c, "node")
	n := ch.Doc.Node(node)
	if n == nil {
		return s.formRefusal(c, "Cannot run this node", httpcore.ENOTFOUND, "not_found", "node "+node+" is not in the saved chain yet; wait for the save and try again")
	}
	var invalid *runs.InvalidChainError
	if err := s.Runs.CheckRun(ctx, ch); errors.As(err, &invalid) {
		return s.formRefusal(c, "The chain has errors; fix them before running", httpcore.EINVALID, chain.CodeInvalid, invalid.Error())
	}
	// A node that cannot run alone at all (a map body …) says so at once.
	_, err = s.Runs.PlanNodeRun(ctx, ch, node, engine.NodeRunSource{})
	var nre *engine.NodeRunError
	if err != nil && !(errors.As(err, &nre) && nre.Reason == engine.NodeRunMissingUpstream) {
		return s.formError(c, "Cannot run this node alone", err)
	}
	d := views.RunNodeData{ChainID: ch.ID, Version: ch.Version, NodeID: node, NeedsNone: err == nil}
	if n.Label != node {
		d.Label = n.Label
	}
	cands, err := s.NodeSourceRuns(ctx, ch, node, c.QueryParam("before"))
	if err != nil {
		return err
	}
	d.Older, d.Searched, d.Continued, d.Latest = cands.Older, cands.Searched, c.QueryParam("before") != "", cands.Latest
	for _, cd := range cands.Runs {
		src := views.NodeSource{Run: cd.Run}
		if cd.Err != nil {
			src.Problem = cd.Err.Error()
		} else if d.Default == "" {
			d.Default = cd.Run.ID
		}
		d.Sources = append(d.Sources, src)
	}
	return RenderPage(c, http.StatusOK, views.RunNodeDialog(d))
}
