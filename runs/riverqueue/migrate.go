// Package riverqueue runs the studio's runs as River jobs on PostgreSQL:
// River's schema, its client and the run queue built on it. Only the
// PostgreSQL wiring in cmd/studio uses it; the embedded SQLite studio never
// loads River.
package riverqueue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// DB is what River needs of the studio's PostgreSQL store
// (store/postgres.DB): its pool, and a transaction under the lock the
// studio's migrations take.
type DB interface {
	Pool() *pgxpool.Pool
	WithMigrationLock(ctx context.Context, fn func(context.Context) error) error
}

// Migrate brings River's tables up to the version this binary knows, in one
// transaction per migration (River's need it: one adds an enum value the
// next uses) while holding the studio's migration lock, so that processes
// starting together apply each River migration once.
func Migrate(ctx context.Context, db DB) error {
	m, err := rivermigrate.New(riverpgxv5.New(db.Pool()), nil)
	if err != nil {
		return fmt.Errorf("river: migrator: %w", err)
	}
	return db.WithMigrationLock(ctx, func(ctx context.Context) error {
		if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("river: migrate: %w", err)
		}
		// A run's jobs are found by its id (cancel, the reaper): an index
		// on the argument, for the studio's job kind only.
		if _, err := db.Pool().Exec(ctx, `CREATE INDEX IF NOT EXISTS river_job_studio_run ON river_job ((args->>'run_id'), id) WHERE kind = '`+JobKind+`'`); err != nil {
			return fmt.Errorf("river: index jobs by run: %w", err)
		}
		return nil
	})
}
