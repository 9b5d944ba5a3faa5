package postgres

import (
	"context"
	"fmt"

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
// Paused runs are left alone, and so are runs whose lease is live: another
// process executes them (a cluster never calls this at start-up: the
// reaper takes dead processes' runs over instead). It returns how many runs
// it marked.
func (db *DB) RecoverInterrupted(ctx context.Context) (int, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT id FROM runs WHERE status IN ('running', 'queued') AND COALESCE(lease_until, 0) < `+nowMicros+` ORDER BY started_at, id`)
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
			var live bool
			if err := tx.QueryRowContext(ctx, `SELECT status, COALESCE(lease_until, 0) >= `+nowMicros+` FROM runs WHERE id = ? FOR UPDATE`, id).Scan(&status, &live); err != nil {
				return err
			}
			// "queued": a run waiting for a slot when the process died (a
			// clean stop cancels them).
			if status != string(engine.StatusRunning) && status != "queued" || live {
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
				_, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'queued' WHERE id = ?`, id)
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

// Backup is not done by the studio on PostgreSQL: the server's own tools
// make consistent copies of a live database (pg_dump, or a base backup with
// WAL archiving), and a studio process has no business writing its server's
// files. It returns an EINVALID store.Error that says so.
func (db *DB) Backup(ctx context.Context, path string) error {
	return store.Errorf(store.EINVALID, "store: backup: the database is on PostgreSQL (%s): back it up with pg_dump (pg_dump --format=custom --file=studio.dump DATABASE_URL), not with studio backup", db.dsn)
}
