package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

const (
	interruptedMessage = "the studio stopped while this run was running; resume it to continue from its last checkpoint"
	notStartedMessage  = "the studio stopped before this run started: nothing of it ran and there is nothing to resume; start it again"
)

// Interrupted is what start-up recovery does with one run a previous
// process left queued or running, decided in the recovery's transaction
// (Recovery).
type Interrupted struct {
	// Requeue: the run never started (no start entry, no events) and its
	// row says all it runs (a saved chain version and its input): it stays
	// queued, and the run service queues it again (runs.Service.Requeue).
	Requeue bool
	// End is the end entry to append otherwise: failed, interrupted_by_restart
	// when its log has a start entry to resume from, interrupted_before_start
	// (start it again: nothing promises a resume) when it has none.
	End *engine.Checkpoint
}

// Recovery decides what start-up recovery does with run id; seq is its
// highest stored event seq, now the time of the end entry.
func Recovery(ctx context.Context, tx Queryer, id string, seq int64, now time.Time) (Interrupted, error) {
	var kind string
	var chainID sql.NullString
	var version sql.NullInt64
	var started bool
	rows, err := tx.QueryContext(ctx, `SELECT kind, chain_id, chain_version,
  EXISTS (SELECT 1 FROM checkpoints WHERE run_id = ? AND kind = 'start')
FROM runs WHERE id = ?`, id, id)
	if err != nil {
		return Interrupted{}, err
	}
	found := rows.Next()
	if found {
		err = rows.Scan(&kind, &chainID, &version, &started)
	}
	if rerr := rows.Err(); err == nil {
		err = rerr
	}
	rows.Close()
	if err != nil {
		return Interrupted{}, err
	}
	if !found {
		return Interrupted{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	end := &engine.EndRecord{Status: engine.StatusFailed}
	switch {
	case started:
		nodes, err := runNodes(ctx, tx, id, "")
		if err != nil {
			return Interrupted{}, err
		}
		for _, nr := range nodes {
			if nr.Status == engine.PhaseDone || nr.Status == engine.PhaseError {
				end.NodesRun++
			}
		}
		end.Error = &engine.RunError{Code: store.CodeInterruptedByRestart, Message: interruptedMessage}
	case kind == store.KindRun && chainID.Valid && chainID.String != "" && version.Int64 > 0 && seq == 0:
		return Interrupted{Requeue: true}, nil
	default:
		// A re-run, a node run or an ad-hoc run waiting in the queue: what
		// it would run lived in the stopped process only.
		end.Error = &engine.RunError{Code: store.CodeInterruptedBeforeStart, Message: notStartedMessage}
	}
	return Interrupted{End: &engine.Checkpoint{RunID: id, Kind: engine.CheckpointEnd, EventSeq: seq, Time: now.UTC(), End: end}}, nil
}
