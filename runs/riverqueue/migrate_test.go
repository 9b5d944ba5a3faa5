package riverqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// TestMigrateConcurrent: processes starting together against one database
// migrate River's schema once, and a second start finds it current.
func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 2})
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = riverqueue.Migrate(ctx, db)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := riverqueue.Migrate(ctx, db); err != nil {
		t.Fatalf("again: %v", err)
	}
	var jobs int
	// river_job in the test's own schema (its search_path), empty.
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job`).Scan(&jobs); err != nil {
		t.Fatalf("river_job: %v", err)
	}
	var applied int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM river_migration`).Scan(&applied); err != nil {
		t.Fatalf("river_migration: %v", err)
	}
	if applied == 0 {
		t.Fatal("no River migration recorded")
	}
}
