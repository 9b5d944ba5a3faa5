package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// PendingPauses lists every pause a paused run waits on (a node may hold
// several: map items, branches, a sub-chain's), from the log the resume
// reads; none for a run that is not paused.
func (s *Env) PendingPauses(ctx context.Context, r *store.Run) ([]engine.Pending, error) {
	return httpcore.PendingPauses(ctx, s.DB, r)
}

// MaxRunsPage bounds a page of the runs list (API and page).
const MaxRunsPage = 100

// RunsQuery reads the runs list's filters and cursors (the API and the
// /runs page take the same parameters): status, chain (a chain id; chain_id
// is the older spelling), before / after (cursors), limit.
func RunsQuery(c echo.Context, defLimit int) (store.RunFilter, error) {
	var f store.RunFilter
	limit, err := IntParam("limit", c.QueryParam("limit"), defLimit, 1, MaxRunsPage)
	if err != nil {
		return f, err
	}
	f.Limit = limit
	f.ChainID = c.QueryParam("chain")
	if f.ChainID == "" {
		f.ChainID = c.QueryParam("chain_id")
	}
	if st := c.QueryParam("status"); st != "" {
		if !ValidRunStatus(chain.RunStatus(st)) {
			return f, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("status must be one of %s, got %q", strings.Join(RunStatusNames(), ", "), st), map[string]any{"parameter": "status"})
		}
		f.Status = chain.RunStatus(st)
	}
	f.Before, f.After = c.QueryParam("before"), c.QueryParam("after")
	if cur := c.QueryParam("cursor"); cur != "" { // the next page, as every list spells it
		if f.Before != "" {
			return f, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "cursor and before cannot be used together", map[string]any{"parameter": "before"})
		}
		f.Before = cur
	}
	if f.Before != "" && f.After != "" {
		return f, httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", "before and after cannot be used together", map[string]any{"parameter": "after"})
	}
	return f, nil
}

var RunStatuses = []chain.RunStatus{chain.StatusQueued, chain.StatusRunning, chain.StatusPaused, chain.StatusCompleted, chain.StatusPartial,
	chain.StatusFailed, chain.StatusCancelled, chain.StatusTimedOut}

func ValidRunStatus(s chain.RunStatus) bool { return slices.Contains(RunStatuses, s) }

func RunStatusNames() []string {
	out := make([]string, len(RunStatuses))
	for i, s := range RunStatuses {
		out[i] = string(s)
	}
	return out
}

// RunsCursorErr names the cursor a bad page request carried.
func RunsCursorErr(c echo.Context, err error) error {
	if errors.Is(err, store.ErrInvalid) {
		p := "before"
		if c.QueryParam("after") != "" {
			p = "after"
		} else if c.QueryParam("cursor") != "" {
			p = "cursor"
		}
		return httpcore.Error(httpcore.EBADREQUEST, "bad_parameter", fmt.Sprintf("%s is not a cursor from a previous page: %q", p, c.QueryParam(p)), map[string]any{"parameter": p})
	}
	return err
}

// BlankKey finds a key no expression could read (state."" is not a path).
func BlankKey(m map[string]any) (string, bool) {
	for k := range m {
		if strings.TrimSpace(k) == "" {
			return k, true
		}
	}
	return "", false
}

// RunKindAgent is the run kind of POST /v1/agents/{name}/run in the history.
const RunKindAgent = "agent"

func (s *Env) RunView(ctx context.Context, r *store.Run) (RunJSON, error) {
	out := RunJSON{RunFields: ToRunFields(r), Pending: []engine.Pending{}, Active: s.Runs.Active(r.ID)}
	ElideRun(out.RunFields)
	if r.Status == chain.StatusQueued {
		out.QueuePosition = s.Runs.QueuePosition(r.ID)
		if out.QueuePosition > 0 {
			out.QueueReason = s.Runs.MemoryWait()
		}
	}
	pending, err := s.PendingPauses(ctx, r)
	out.Pending = append(out.Pending, pending...)
	return out, err
}

// StartedStatus is what a run just handed to the run service is doing:
// queued while it waits for a slot, running otherwise.
func (s *Env) StartedStatus(id string) chain.RunStatus {
	if s.Runs.QueuePosition(id) > 0 {
		return chain.StatusQueued
	}
	return chain.StatusRunning
}
