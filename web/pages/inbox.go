package pages

import (
	"net/http"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// GET /inbox?q=&chain=&sort=&limit=: the pending interrupts across chains,
// each answered in place (static/js/inbox.js posts to the answer API).
func (s *Runs) PageInbox(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := ops.InterruptsQuery(c)
	if err != nil {
		return err
	}
	items, err := s.DB.ListInterrupts(ctx, f)
	if err != nil {
		return err
	}
	chains, _, err := s.DB.ListChains(ctx, store.ChainFilter{Limit: 1000})
	if err != nil {
		return err
	}
	// People read node labels: each card names its node by the label in
	// the chain (its current version), the id beside it; one read per
	// chain on the page.
	labels := map[string]views.Labels{}
	for _, it := range items {
		if _, seen := labels[it.ChainID]; seen || it.ChainID == "" {
			continue
		}
		labels[it.ChainID] = nil
		if ch, err := s.DB.GetChain(ctx, it.ChainID); err == nil {
			labels[it.ChainID] = views.NodeLabels(ch.Doc)
		}
	}
	return RenderPage(c, http.StatusOK, views.InboxPage(items, views.InboxFilter{
		Text: f.Text, ChainID: f.ChainID, RunID: f.RunID, Sort: f.Sort, Chains: chains, Limit: f.Limit, Full: len(items) == f.Limit,
		Labels: labels,
	}))
}
