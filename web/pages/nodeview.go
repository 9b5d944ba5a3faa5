package pages

import (
	"net/http"
	"strconv"

	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// FragNodeView renders the editor's node view's data for one node of the
// saved chain: what it received in a run and what it did there
// (?run= the run, else the latest that reached it). ?part=input renders
// the run's input alone; ?all= names the part shown whole (received, input,
// node_input, output) instead of its preview.
func (s *Chains) FragNodeView(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.ChainAt(ctx, ops.PageParam(c, "id"), 0)
	if err != nil {
		return err
	}
	node := ops.PageParam(c, "node")
	all := c.QueryParam("all")
	switch all {
	case "", views.NVReceived, views.NVRunInput, views.NVNodeInput, views.NVOutput:
	default:
		return s.formRefusal(c, "Cannot show this part", httpcore.EBADREQUEST, "bad_parameter",
			"all must be received, input, node_input or output, not "+strconv.Quote(all))
	}
	part := c.QueryParam("part")
	if part != "" && part != views.NVRunInput {
		return s.formRefusal(c, "Cannot show this part", httpcore.EBADREQUEST, "bad_parameter", "part must be input, not "+strconv.Quote(part))
	}
	v, err := s.NodeView(ctx, ch, node, c.QueryParam("run"), !s.SeesCredentialed(c))
	if err != nil {
		return s.formError(c, "Cannot show this node's data", err)
	}
	n := ch.Doc.Node(node)
	d := views.NodeViewData{
		ChainID: ch.ID, NodeID: node, Run: v.Run, Record: v.Record,
		Received: v.Received, HasReceived: v.HasReceived, Missing: v.Missing, From: v.From, Withheld: v.Withheld,
		ShowsInput: len(n.Input) > 0 || len(n.InputMap) > 0, All: all,
	}
	if part == views.NVRunInput {
		return RenderPage(c, http.StatusOK, views.NodeViewRunInput(d))
	}
	return RenderPage(c, http.StatusOK, views.NodeViewBody(d))
}

// FragNodeViewRuns renders the node view's run picker: the runs the "Run
// this node" dialog offers (ops.NodeSourceRuns; ?before= the next page of
// older runs that reached the node), ?run= the one shown.
func (s *Chains) FragNodeViewRuns(c echo.Context) error {
	ctx := c.Request().Context()
	ch, err := s.ChainAt(ctx, ops.PageParam(c, "id"), 0)
	if err != nil {
		return err
	}
	node := ops.PageParam(c, "node")
	if ch.Doc.Node(node) == nil {
		return s.formRefusal(c, "Cannot list runs", httpcore.ENOTFOUND, "not_found", "node "+strconv.Quote(node)+" is not in the saved chain")
	}
	cands, err := s.NodeSourceRuns(ctx, ch, node, c.QueryParam("before"))
	if err != nil {
		return s.formError(c, "Cannot list runs", err)
	}
	d := views.RunNodeData{ChainID: ch.ID, NodeID: node, Older: cands.Older}
	for _, cd := range cands.Runs {
		src := views.NodeSource{Run: cd.Run}
		if cd.Err != nil {
			src.Problem = cd.Err.Error()
		}
		d.Sources = append(d.Sources, src)
	}
	return RenderPage(c, http.StatusOK, views.NodeViewRuns(d, c.QueryParam("run")))
}
