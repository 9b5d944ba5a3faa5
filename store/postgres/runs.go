package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
	"github.com/jackc/pgx/v5"
)

// CreateRunTx records a run, as CreateRun does, inside tx: the caller
// commits it together with its own rows (a River job), so that a worker
// never sees a job whose run is not committed.
func (db *DB) CreateRunTx(ctx context.Context, tx pgx.Tx, r store.Run) error {
	r, input, err := sqlstore.NewRun(r, db.now())
	if err != nil {
		return err
	}
	// A trigger's firing first, in the transaction of the run's job: a
	// schedule tick another process already fired writes nothing.
	if f, ok := sqlstore.RunFiring(r); ok {
		if f.Created.IsZero() {
			f.Created = r.Started
		}
		if _, err := tx.Exec(ctx, rebind(sqlstore.InsertFiringSQL), sqlstore.FiringArgs(f)...); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: create run %s: %w (tick %s)", r.ID, store.ErrAlreadyFired, f.Tick.Format(time.RFC3339))
			}
			return fmt.Errorf("store: create run %s: record its firing: %w", r.ID, err)
		}
		if _, err := tx.Exec(ctx, rebind(sqlstore.TrimFiringsSQL), sqlstore.TrimFiringsArgs(f.TriggerID)...); err != nil {
			return fmt.Errorf("store: create run %s: trim firings: %w", r.ID, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO runs (id, chain_id, chain_version, chain_name, parent_run_id, kind, input, status, started_at, trigger_kind, trigger_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, sqlstore.NullString(r.ChainID), sqlstore.NullInt(r.ChainVersion), r.ChainName, sqlstore.NullString(r.ParentRunID), r.Kind, input, string(r.Status), sqlstore.Micros(r.Started),
		sqlstore.NullString(r.TriggerKind), sqlstore.NullString(r.TriggerID)); err != nil {
		return fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	return nil
}

// CancelQueuedTx marks a run that no worker has started yet cancelled,
// inside tx (with its job's cancel). It reports false when the run is no
// longer queued.
func (db *DB) CancelQueuedTx(ctx context.Context, tx pgx.Tx, runID string) (bool, error) {
	now := sqlstore.Micros(db.now())
	tag, err := tx.Exec(ctx, `UPDATE runs SET status = 'cancelled', ended_at = $2, duration_ms = ($2 - started_at) / 1000
WHERE id = $1 AND status = 'queued'`, runID, now)
	if err != nil {
		return false, fmt.Errorf("store: cancel run %s: %w", runID, err)
	}
	return tag.RowsAffected() == 1, nil
}
