package web

import (
	"net/http"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
	"github.com/labstack/echo/v4"
)

// GET /inbox?q=&chain=&sort=&limit=: the pending interrupts across chains,
// each answered in place (static/js/inbox.js posts to the answer API).
func (s *Server) pageInbox(c echo.Context) error {
	ctx := c.Request().Context()
	f, err := interruptsQuery(c)
	if err != nil {
		return err
	}
	items, err := s.db.ListInterrupts(ctx, f)
	if err != nil {
		return err
	}
	chains, _, err := s.db.ListChains(ctx, store.ChainFilter{Limit: 1000})
	if err != nil {
		return err
	}
	return renderPage(c, http.StatusOK, views.InboxPage(items, views.InboxFilter{
		Text: f.Text, ChainID: f.ChainID, RunID: f.RunID, Sort: f.Sort, Chains: chains, Limit: f.Limit, Full: len(items) == f.Limit,
	}))
}
