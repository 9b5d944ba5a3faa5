package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/sqlstore"
)

// RecoverInterrupted ends or requeues every run a previous process left
// "running" or "queued" (only a crash leaves one: a clean stop cancels
// them), as sqlstore.Recovery decides in one transaction per run: a run with a
// start entry is marked failed with code interrupted_by_restart by an "end"
// checkpoint, so that a resume continues it; a saved chain's run that never
// started stays queued for the run service to queue again; any other run
// that never started is failed with interrupted_before_start (start it
// again). Call it at startup, before starting runs.
// Paused runs are left alone. It returns how many runs it marked.
func (db *DB) RecoverInterrupted(ctx context.Context) (int, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM runs WHERE status IN ('running', 'queued') ORDER BY started_at, id`)
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
		err := db.writeTx(ctx, func(tx *Tx) error {
			var status string
			if err := tx.QueryRowPrepared(ctx, `SELECT status FROM runs WHERE id = ?`, id).Scan(&status); err != nil {
				return err
			}
			if status != string(engine.StatusRunning) && status != string(engine.StatusQueued) {
				return nil // changed since the scan
			}
			seq, err := sqlstore.MaxSeqOf(ctx, tx, id)
			if err != nil {
				return err
			}
			what, err := sqlstore.Recovery(ctx, tx, id, seq, db.now())
			if err != nil {
				return err
			}
			if what.Requeue {
				_, err := tx.ExecPrepared(ctx, `UPDATE runs SET status = 'queued' WHERE id = ?`, id)
				return err
			}
			cp := *what.End
			cps := []engine.Checkpoint{cp}
			enc, err := cplog.Encode(cps)
			if err != nil {
				return err
			}
			marked = true
			db.lastN.Delete(id)
			_, err = db.appendTx(ctx, tx, id, cps, enc)
			return err
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

// Backup writes a consistent copy of the database to path (VACUUM INTO). An
// existing file is never overwritten.
func (db *DB) Backup(ctx context.Context, path string) error {
	if path == "" {
		return fmt.Errorf("store: backup: %w: empty path", store.ErrInvalid)
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("store: backup to %s: %w", path, os.ErrExist)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	if _, err := db.w.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("store: backup to %s: %w", path, err)
	}
	return nil
}
