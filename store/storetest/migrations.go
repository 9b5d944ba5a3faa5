package storetest

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"testing"

	"github.com/chainstudio/studio/store"
)

// Queryer reads rows: a SQL backend's read pool.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// MigratedUnderFormerNames checks that a SQL database migrated by a studio
// whose migration files had other names opens under the current ones
// without running or refusing any of them: a database records the number of
// each migration applied, not its file. former holds the current
// migrations under their former names; open opens the test's database,
// migrating it from files when they are not nil; reader is the backend's
// read pool; known is how many migrations the backend has.
func MigratedUnderFormerNames[DB store.Backend](t *testing.T, former fs.FS, known int, open func(files fs.FS) (DB, error), reader func(DB) Queryer) {
	t.Helper()
	ctx := context.Background()
	db, err := open(former)
	if err != nil {
		t.Fatalf("open under the former names: %v", err)
	}
	if _, err := db.CreateChain(ctx, SampleChain("kept", 2), "", true); err != nil {
		t.Fatal(err)
	}
	before := appliedMigrations(t, reader(db))
	db.Close()
	db, err = open(nil)
	if err != nil {
		t.Fatalf("open under the new names: %v", err)
	}
	defer db.Close()
	after := appliedMigrations(t, reader(db))
	if len(after) != known || len(before) > known || !slices.Equal(after[:len(before)], before) {
		t.Fatalf("applied migrations (version, applied_at): %v before, %v after", before, after)
	}
	if _, err := db.GetChainByName(ctx, "kept"); err != nil {
		t.Fatal(err)
	}
}

// appliedMigrations lists schema_version's rows as (version, applied_at).
func appliedMigrations(t *testing.T, q Queryer) [][2]int64 {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), `SELECT version, applied_at FROM schema_version ORDER BY version`)
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
