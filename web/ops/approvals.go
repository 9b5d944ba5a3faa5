package ops

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// AnsweredBy names who answers, for the audit: the caller's identity
// (a user, "token" for the --token, "local" on an open loopback studio).
func AnsweredBy(c echo.Context) string {
	if n := httpcore.CallerOf(c).Name; n != "" {
		return n
	}
	return "anonymous"
}

// AuditAnswer fills in who sent an answer and from where (the API and the
// run page alike).
func AuditAnswer(c echo.Context, v *engine.ResumeValue) {
	v.By, v.Address = AnsweredBy(c), c.RealIP()
}

// InterruptsQuery reads the inbox's filter: chain, run, q (text), sort
// (waiting | deadline), limit.
func InterruptsQuery(c echo.Context) (store.InterruptFilter, error) {
	var f store.InterruptFilter
	limit, err := IntParam("limit", c.QueryParam("limit"), 50, 1, store.MaxInterruptsPage)
	if err != nil {
		return f, err
	}
	f.Limit, f.ChainID, f.RunID, f.Text = limit, c.QueryParam("chain"), c.QueryParam("run"), strings.TrimSpace(c.QueryParam("q"))
	if utf8.RuneCountInString(f.Text) > 200 {
		return f, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "q is longer than 200 characters", map[string]any{"parameter": "q"})
	}
	switch sort := c.QueryParam("sort"); sort {
	case "", store.SortWaiting, store.SortDeadline:
		f.Sort = sort
	default:
		return f, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("sort must be waiting or deadline, got %q", sort), map[string]any{"parameter": "sort"})
	}
	return f, nil
}

// RequireResumeRole: answering a pause needs actAnswer whatever the run's
// status (a running run holds pauses too: map items, branches, sub-chains
// answered while the rest runs); resuming a failed or cancelled run with
// no answer (running it again) needs actEdit. An answer to a pause whose
// interrupt names approvers must come from one of them (httpcore.RequireApprover).
func (s *Env) RequireResumeRole(c echo.Context, runID, pauseID string, answering bool) error {
	id := httpcore.CallerOf(c)
	if !answering {
		// An unknown run, or a paused one (which needs an answer), is left
		// to the resume itself to report.
		r, err := s.DB.GetRunInfo(c.Request().Context(), runID)
		if err != nil || r.Status == chain.StatusPaused {
			return nil
		}
		if !httpcore.RoleAllows(id.Role, httpcore.ActEdit) {
			return httpcore.RefuseRole(id, httpcore.ActEdit)
		}
		return nil
	}
	if !httpcore.RoleAllows(id.Role, httpcore.ActAnswer) {
		return httpcore.RefuseRole(id, httpcore.ActAnswer)
	}
	return httpcore.RequireApprover(c.Request().Context(), s.DB, id, runID, pauseID)
}
