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

// RecoverInterrupted ends or requeues the runs a crashed process left
// running or queued (sqlstore.RecoverInterrupted). Call it at startup,
// before starting runs: the file lock makes this process the database's only
// one, so every such run is free.
func (db *DB) RecoverInterrupted(ctx context.Context) (int, error) {
	return sqlstore.RecoverInterrupted(ctx, db.Store, `TRUE`, func(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error {
		db.lastN.Forget(runID)
		_, err := db.appendTx(ctx, tx, runID, cps, enc)
		return err
	})
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
