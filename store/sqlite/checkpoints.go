package sqlite

import (
	"context"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/sqlstore"
)

// DB implements engine.Checkpointer.
var _ engine.Checkpointer = (*DB)(nil)

// Append adds checkpoint entries to a run's log in one transaction, and keeps
// the run row and its pending interrupts up to date. Node results are not
// stored apart from the log: GetRun folds them from it.
func (db *DB) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	if len(cps) == 0 {
		return nil
	}
	enc, err := cplog.Encode(cps)
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	err = db.appendCommit(ctx, runID, cps, enc)
	if err != nil {
		if _, cached := db.lastN.Of(runID); cached {
			// The cached position may be stale (another process appended):
			// retry once from the database.
			db.lastN.Forget(runID)
			err = db.appendCommit(ctx, runID, cps, enc)
		}
	}
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	return nil
}

// appendCommit appends in one transaction and maintains the lastN cache.
func (db *DB) appendCommit(ctx context.Context, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error {
	var last int64
	err := db.writeTx(ctx, func(tx *Tx) error {
		var err error
		last, err = db.appendTx(ctx, tx, runID, cps, enc)
		return err
	})
	if err != nil {
		db.lastN.Forget(runID)
		return err
	}
	db.lastN.Appended(runID, cps, last)
	return nil
}

// appendTx appends entries inside tx and returns the last entry's number.
// For a run this process is writing, the run row's existence and the log's
// last entry number come from the lastN cache instead of two queries.
func (db *DB) appendTx(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) (int64, error) {
	var n int64
	if v, ok := db.lastN.Of(runID); ok && cps[0].Start == nil {
		n = v
	} else {
		if err := sqlstore.EnsureRun(ctx, tx, runID, sqlstore.CheckpointTime(&cps[0], db.now), cps[0].Start); err != nil {
			return 0, err
		}
		if err := tx.QueryRowPrepared(ctx, `SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = ?`, runID).Scan(&n); err != nil {
			return 0, err
		}
	}
	return sqlstore.InsertCheckpoints(ctx, tx, runID, n, cps, enc, db.now)
}
