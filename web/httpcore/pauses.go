package httpcore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// RunLogs reads a run's checkpoint log: what its pauses and their
// interrupts' approvers are read from (store.CheckpointStore).
type RunLogs interface {
	Load(ctx context.Context, runID string) ([]engine.Checkpoint, error)
}

// PendingPauses lists every pause a paused run waits on (a node may hold
// several: map items, branches, a sub-chain's), from the log the resume
// reads; none for a run that is not paused.
func PendingPauses(ctx context.Context, logs RunLogs, r *store.Run) ([]engine.Pending, error) {
	if r.Status != chain.StatusPaused {
		return nil, nil
	}
	log, err := logs.Load(ctx, r.ID)
	if err != nil {
		return nil, fmt.Errorf("run %s: pending pauses: %w", r.ID, err)
	}
	return engine.PendingPauses(log), nil
}

// maxApproverDepth bounds how deep RequireApprover follows a pause into
// sub-chains (skills nest at most engine's depth limit; deeper is unusual).
const maxApproverDepth = 16

// RequireApprover refuses an answer to a pause whose interrupt node lists
// approvers (config.approvers: names or roles) from a caller who is none of
// them: 403 not_an_approver naming who may. On a studio without users or a
// token (the local single user) there is no one else to be, so it passes.
// An unknown run or pause is left to the resume itself to report.
func RequireApprover(ctx context.Context, logs RunLogs, id Identity, runID, pauseID string) error {
	if id.Via == "local" {
		return nil
	}
	// A pause inside a sub-chain ("<skill>/<inner id>", "<map>[k]/<inner
	// id>") is the sub-chain run's own pause: its interrupt's approvers are
	// in that run's log (a bounded walk down the nesting).
	var p engine.Pending
	var a *engine.ApprovalInfo
	for depth := 0; depth < maxApproverDepth; depth++ {
		log, err := logs.Load(ctx, runID)
		if err != nil {
			return nil
		}
		inner, err := engine.PauseToAnswer(runID, pauseID, log)
		if err != nil {
			return nil
		}
		if depth == 0 {
			p = inner
		}
		if a = inner.Approval(); a != nil || inner.SubRun() == "" {
			break
		}
		_, rest, ok := strings.Cut(inner.PauseID, "/")
		if !ok {
			break
		}
		runID, pauseID = inner.SubRun(), rest
	}
	if a == nil || len(a.Approvers) == 0 || slices.Contains(a.Approvers, id.Name) || slices.Contains(a.Approvers, id.Role) {
		return nil
	}
	return Error(EFORBIDDEN, "not_an_approver",
		fmt.Sprintf("pause %q may be answered only by %s; %s (%s) is not one of them", p.PauseID, strings.Join(a.Approvers, ", "), id.Name, id.Role),
		map[string]any{"approvers": a.Approvers, "pause_id": p.PauseID, "node_id": p.NodeID, "user": id.Name, "role": id.Role})
}
