package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store/cplog"
	jsonv2 "github.com/go-json-experiment/json"
)

// Load returns a run's checkpoint log in order, each start entry with its
// chain; a run without one is a *engine.ChainCheckpointError.
func (s *Store) Load(ctx context.Context, runID string) ([]engine.Checkpoint, error) {
	var out []engine.Checkpoint
	err := s.readTx(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT n, body FROM checkpoints WHERE run_id = ? ORDER BY n`, runID)
		if err != nil {
			return err
		}
		defer rows.Close()
		type pending struct {
			at  int
			n   int64
			ref string
		}
		var refs []pending
		var body []byte
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n, &body); err != nil {
				return err
			}
			var cp cplog.Stored
			if err := jsonv2.Unmarshal(body, &cp); err != nil {
				return &engine.ChainCheckpointError{RunID: runID, Msg: fmt.Sprintf("entry %d is corrupt: %v", n, err)}
			}
			if cp.ChainSHA256 != "" && cp.Start != nil && cp.Start.Chain == nil {
				refs = append(refs, pending{len(out), n, cp.ChainSHA256})
			}
			out = append(out, cp.Checkpoint)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for _, p := range refs {
			chain, err := s.runChain(ctx, tx, p.ref)
			if err != nil {
				return &engine.ChainCheckpointError{RunID: runID, Msg: fmt.Sprintf("entry %d: %v", p.n, err)}
			}
			out[p.at].Start.Chain = chain
		}
		return nil
	})
	if err != nil {
		var ce *engine.ChainCheckpointError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, fmt.Errorf("store: load checkpoints of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		return nil, &engine.ChainCheckpointError{RunID: runID, Msg: "no such run"}
	}
	return out, nil
}

// ClaimInterrupt claims the run's unclaimed pause pauseID (with "", its
// oldest unclaimed pause) and returns its pause id. Of concurrent claims of
// one pause exactly one wins; the others (and a claim when that pause is not
// pending) get *engine.AlreadyResumedError.
func (s *Store) ClaimInterrupt(ctx context.Context, runID, pauseID string) (string, error) {
	var nodeID string
	err := s.writeTx(ctx, func(tx *Tx) error {
		var one int
		err := tx.QueryRowPrepared(ctx, `SELECT 1 FROM checkpoints WHERE run_id = ? LIMIT 1`, runID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return &engine.ChainCheckpointError{RunID: runID, Msg: "no such run"}
		}
		if err != nil {
			return err
		}
		var n int64
		err = tx.QueryRowPrepared(ctx, `SELECT n, node_id FROM run_interrupts WHERE run_id = ? AND claimed_at IS NULL AND (? = '' OR node_id = ?) ORDER BY n LIMIT 1`,
			runID, pauseID, pauseID).Scan(&n, &nodeID)
		if errors.Is(err, sql.ErrNoRows) {
			return &engine.AlreadyResumedError{RunID: runID, PauseID: pauseID}
		}
		if err != nil {
			return err
		}
		res, err := tx.ExecPrepared(ctx, `UPDATE run_interrupts SET claimed_at = ? WHERE run_id = ? AND n = ? AND claimed_at IS NULL`,
			Micros(s.now()), runID, n)
		if err != nil {
			return err
		}
		if k, err := res.RowsAffected(); err != nil {
			return err
		} else if k != 1 {
			return &engine.AlreadyResumedError{RunID: runID, PauseID: pauseID}
		}
		return nil
	})
	if err != nil {
		var ce *engine.ChainCheckpointError
		var ae *engine.AlreadyResumedError
		if errors.As(err, &ce) || errors.As(err, &ae) {
			return "", err
		}
		return "", fmt.Errorf("store: claim interrupt of run %s: %w", runID, err)
	}
	return nodeID, nil
}
