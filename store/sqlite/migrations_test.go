package sqlite

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/chainstudio/studio/store/storetest"
)

// formerMigrationNames are the names the migration files had before they
// were named by what they do.
var formerMigrationNames = []string{"0001_init.sql", "0002_run_storage.sql", "0003_version_kind.sql", "0004_approvals.sql",
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
	path := filepath.Join(t.TempDir(), "former.db")
	storetest.MigratedUnderFormerNames(t, former, SchemaVersion(),
		func(files fs.FS) (*DB, error) {
			return Open(context.Background(), path, Options{migrationFiles: files})
		},
		func(db *DB) storetest.Queryer { return db.r })
}

// A database from before publishing existed opens with each chain's newest
// version published, so its triggers and runs by name go on running what
// they ran.
func TestChainsBeforePublishingArePublishedAtTheirNewest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	before := fstest.MapFS{}
	for _, m := range migrations() {
		if strings.HasSuffix(m.Name, "_add_published_versions.sql") {
			break
		}
		before[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
	}
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, Options{migrationFiles: before})
	if err != nil {
		t.Fatal(err)
	}
	// Written as that studio wrote them: a chain at version 2.
	if _, err := db.w.ExecContext(ctx, `INSERT INTO chains (id, name, description, current_version, node_count, created_at, updated_at)
VALUES ('c1', 'old', '', 2, 3, 1, 2)`); err != nil {
		t.Fatal(err)
	}
	for v, n := range []int{2, 3} {
		doc, _ := json.Marshal(storetest.SampleChain("old", n))
		if _, err := db.w.ExecContext(ctx, `INSERT INTO chain_versions (chain_id, version, name, node_count, message, kind, doc, created_at)
VALUES ('c1', ?, 'old', ?, '', 'save', ?, 1)`, v+1, n, string(doc)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ch := struct{ ID string }{"c1"}
	db, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, err := db.GetChain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Published.Version != 2 || got.Unpublished() || got.Published.At.IsZero() {
		t.Fatalf("after the upgrade: published %+v of version %d", got.Published, got.Version)
	}
}
