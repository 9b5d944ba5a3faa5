package postgres

import (
	"context"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/sqlstore"
)

// RecoverInterrupted ends or requeues the runs a crashed process left
// running or queued (sqlstore.RecoverInterrupted), but for runs whose lease
// is live: another process executes them (a cluster never calls this at
// start-up: the reaper takes dead processes' runs over instead).
func (db *DB) RecoverInterrupted(ctx context.Context) (int, error) {
	return sqlstore.RecoverInterrupted(ctx, db.Store, `COALESCE(lease_until, 0) < `+nowMicros, func(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error {
		db.lastN.Forget(runID)
		_, err := db.appendTx(ctx, tx, runID, cps, enc)
		return err
	})
}

// Backup is not done by the studio on PostgreSQL: the server's own tools
// make consistent copies of a live database (pg_dump, or a base backup with
// WAL archiving), and a studio process has no business writing its server's
// files. It returns an EINVALID store.Error that says so.
func (db *DB) Backup(ctx context.Context, path string) error {
	return store.Errorf(store.EINVALID, "store: backup: the database is on PostgreSQL (%s): back it up with pg_dump (pg_dump --format=custom --file=studio.dump DATABASE_URL), not with studio backup", db.dsn)
}
