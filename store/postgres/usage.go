package postgres

import (
	"context"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

var _ store.UsageStore = (*DB)(nil)

// RunUsage implements store.UsageStore.
func (db *DB) RunUsage(ctx context.Context, runID string) ([]store.ModelCall, error) {
	return sqlstore.RunUsage(ctx, db.r, runID)
}

// Usage implements store.UsageStore.
func (db *DB) Usage(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error) {
	return sqlstore.Usage(ctx, db.r, f)
}

// SetRunTrace implements store.UsageStore.
func (db *DB) SetRunTrace(ctx context.Context, runID, traceparent string) error {
	return db.writeTx(ctx, func(tx *Tx) error { return sqlstore.SetRunTrace(ctx, tx, runID, traceparent) })
}

// RunTrace implements store.UsageStore.
func (db *DB) RunTrace(ctx context.Context, runID string) (string, error) {
	return sqlstore.RunTrace(ctx, db.r, runID)
}
