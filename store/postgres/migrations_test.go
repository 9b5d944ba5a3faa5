package postgres

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/storetest"
)

// formerMigrationNames are the names the migration files had before they
// were named by what they do.
var formerMigrationNames = []string{"0001_init.sql", "0002_run_lease.sql", "0003_checkpoints_no_fk.sql", "0004_approvals.sql",
	"0005_users.sql", "0006_triggers.sql", "0007_model_calls.sql", "0008_hook_signatures.sql", "0009_credentials.sql"}

func TestMigratedUnderFormerNames(t *testing.T) {
	t.Parallel()
	former := fstest.MapFS{}
	for i, name := range formerMigrationNames {
		former[name] = &fstest.MapFile{Data: []byte(migrations()[i].SQL)}
	}
	// Migrations added since had no former name.
	for _, m := range migrations()[len(formerMigrationNames):] {
		former[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
	}
	dsn := pgtest.Schema(t)
	storetest.MigratedUnderFormerNames(t, former, SchemaVersion(),
		func(files fs.FS) (*DB, error) { return Open(context.Background(), dsn, Options{migrationFiles: files}) },
		func(db *DB) storetest.Queryer { return db.r })
}
