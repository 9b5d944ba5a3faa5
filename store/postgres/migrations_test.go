package postgres

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/storetest"
)

// formerMigrationNames are the names the migration files had before they
// were named by what they do.
var formerMigrationNames = []string{"0001_init.sql", "0002_run_lease.sql", "0003_checkpoints_no_fk.sql", "0004_approvals.sql",
	"0005_users.sql", "0006_triggers.sql", "0007_model_calls.sql", "0008_hook_signatures.sql", "0009_credentials.sql"}

// A database migrated by a studio whose migration files had their former
// names opens under the new ones without running or refusing any: a
// database records the number of each migration applied, not its file.
func TestMigratedUnderFormerNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	former := fstest.MapFS{}
	for i, name := range formerMigrationNames {
		former[name] = &fstest.MapFile{Data: []byte(migrations()[i].SQL)}
	}
	dsn := pgtest.Schema(t)
	db, err := Open(ctx, dsn, Options{migrationFiles: former})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateChain(ctx, storetest.SampleChain("kept", 2), ""); err != nil {
		t.Fatal(err)
	}
	before := appliedMigrations(t, db)
	db.Close()
	db, err = Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatalf("open under the new names: %v", err)
	}
	defer db.Close()
	after := appliedMigrations(t, db)
	if len(after) != SchemaVersion() || !slices.Equal(after[:len(before)], before) {
		t.Fatalf("applied migrations (version, applied_at): %v before, %v after", before, after)
	}
	if _, err := db.GetChainByName(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
}

// appliedMigrations lists schema_version's rows as (version, applied_at) pairs.
func appliedMigrations(t *testing.T, db *DB) [][2]int64 {
	t.Helper()
	rows, err := db.r.QueryContext(context.Background(), `SELECT version, applied_at FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
