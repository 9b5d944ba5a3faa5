package postgres

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/storetest"
)

func openTest(t testing.TB, opts Options) *DB {
	t.Helper()
	dsn := pgtest.Schema(t)
	db, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestContract: the PostgreSQL backend passes the contract every backend
// passes.
func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Backend {
		return openTest(t, Options{MaxConns: 4})
	})
}
