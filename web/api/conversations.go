package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// Agents' conversations: what an agent with memory keeps by session key.
// They hold what people wrote, so reading needs the role that reads run
// inputs, and clearing one an editor's.

type conversationJSON struct {
	Scope   string    `json:"scope"`
	Session string    `json:"session"`
	Turns   int       `json:"turns"`
	LastAt  time.Time `json:"last_at"`
}

type turnJSON struct {
	ID   int64     `json:"id"`
	Role string    `json:"role"`
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// GET /v1/conversations: the sessions kept, the most recently added to
// first (scope= one agent's or node's; limit=, default 100, at most 1000).
func (s *Runs) ListConversations(c echo.Context) error {
	limit, err := ops.IntParam("limit", c.QueryParam("limit"), store.DefaultConversationList, 1, store.MaxConversationList)
	if err != nil {
		return err
	}
	scope := c.QueryParam("scope")
	list, err := s.DB.ListConversations(c.Request().Context(), store.ConversationFilter{Scope: scope, Limit: limit})
	if err != nil {
		return httpcore.StoreErr(err, "conversations")
	}
	out := make([]conversationJSON, len(list))
	for i, r := range list {
		out[i] = conversationJSON{Scope: r.Scope, Session: r.Session, Turns: r.Turns, LastAt: r.LastAt}
	}
	return c.JSON(http.StatusOK, map[string]any{"conversations": out, "limit": limit})
}

// GET /v1/conversations/{scope}/{session}: a session's turns, oldest
// first (the newest limit=, default and at most MaxConversationTurns).
func (s *Runs) GetConversation(c echo.Context) error {
	scope, session := ops.PageParam(c, "scope"), ops.PageParam(c, "session")
	limit, err := ops.IntParam("limit", c.QueryParam("limit"), store.MaxConversationTurns, 1, store.MaxConversationTurns)
	if err != nil {
		return err
	}
	turns, total, err := s.DB.LoadTurns(c.Request().Context(), scope, session, limit)
	if err != nil {
		return httpcore.StoreErr(err, "conversation "+ops.Quote(session))
	}
	if total == 0 {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("conversation %s of %s not found", ops.Quote(session), ops.Quote(scope)), nil)
	}
	out := make([]turnJSON, len(turns))
	for i, t := range turns {
		out[i] = turnJSON{ID: t.ID, Role: t.Role, Text: t.Text, At: t.At}
	}
	return c.JSON(http.StatusOK, map[string]any{"scope": scope, "session": session, "total": total, "turns": out})
}

// DELETE /v1/conversations/{scope}/{session} (editors): forgets a
// session; 204, or 404 when it keeps nothing.
func (s *Runs) ClearConversation(c echo.Context) error {
	scope, session := ops.PageParam(c, "scope"), ops.PageParam(c, "session")
	if _, err := s.DB.ClearConversation(c.Request().Context(), scope, session); err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("conversation %s of %s", ops.Quote(session), ops.Quote(scope)))
	}
	return c.NoContent(http.StatusNoContent)
}
