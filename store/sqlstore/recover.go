package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
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
	end := &engine.EndRecord{Status: chain.StatusFailed}
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

// RecoverInterrupted is store.Housekeeping's RecoverInterrupted over s: it
// ends or requeues every run a previous process left "running" or "queued"
// (only a crash leaves one: a clean stop cancels them), as Recovery decides,
// in one transaction per run. free is the backend's condition on a run's row
// that no live process holds it (a lease on PostgreSQL; TRUE where one
// process owns the database); end appends a run's end entry inside tx, as
// the backend appends entries. Paused runs are left alone. It returns how
// many runs it marked.
func RecoverInterrupted(ctx context.Context, s *Store, free string, end func(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error) (int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM runs WHERE status IN ('running', 'queued') AND `+free+` ORDER BY started_at, id`)
	if err != nil {
		return 0, fmt.Errorf("store: recover interrupted runs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: recover interrupted runs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: recover interrupted runs: %w", err)
	}
	n := 0
	for _, id := range ids {
		marked := false
		err := s.writeTx(ctx, func(tx *Tx) error {
			var status string
			var isFree bool
			if err := tx.QueryRowPrepared(ctx, `SELECT status, `+free+` FROM runs WHERE id = ?`+s.d.ForUpdate(), id).Scan(&status, &isFree); err != nil {
				return err
			}
			if status != string(chain.StatusRunning) && status != string(chain.StatusQueued) || !isFree {
				return nil // changed since the scan
			}
			seq, err := MaxSeqOf(ctx, tx, id)
			if err != nil {
				return err
			}
			what, err := Recovery(ctx, tx, id, seq, s.now())
			if err != nil {
				return err
			}
			if what.Requeue {
				_, err := tx.ExecPrepared(ctx, `UPDATE runs SET status = 'queued' WHERE id = ?`, id)
				return err
			}
			cps := []engine.Checkpoint{*what.End}
			enc, err := cplog.Encode(cps)
			if err != nil {
				return err
			}
			marked = true
			return end(ctx, tx, id, cps, enc)
		})
		if err != nil {
			return n, fmt.Errorf("store: recover interrupted run %s: %w", id, err)
		}
		if marked {
			n++
		}
	}
	return n, nil
}
