package main

import (
	"context"
	"log/slog"
	"net/url"

	"github.com/chainstudio/studio/runs/riverqueue"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/sqlite"
)

// backend is an open store with what serve does around it.
type backend struct {
	store.Backend
	// name is the database as logs show it: the file, or the URL without
	// its password.
	name string
	// listening records the server's address where other commands look for
	// it (the SQLite lock file); nil when there is no such place.
	listening func(url string) error
	release   func() // after Close: drops the SQLite single-owner lock
	// pg is the PostgreSQL store (nil on SQLite): runs go through River
	// and any number of processes share the database.
	pg *postgres.DB
}

// openBackend opens the database dsn names: PostgreSQL for a postgres:// or
// postgresql:// URL, else the SQLite file at that path. A SQLite file has
// one owner process (a lock file next to it), taken before start-up
// recovery, which would otherwise fail another server's live runs. A
// PostgreSQL database is shared by any number of `serve` and `worker`
// processes: runs are River jobs, and migrations (the studio's and
// River's) run under one advisory lock (docs/deploy.md).
func openBackend(ctx context.Context, dsn string, log *slog.Logger) (*backend, error) {
	if postgres.IsDSN(dsn) {
		db, err := postgres.Open(ctx, dsn, postgres.Options{Logger: log})
		if err != nil {
			return nil, err
		}
		// River's tables come with the studio's, only on PostgreSQL.
		if err := riverqueue.Migrate(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
		return &backend{Backend: db, name: redactDSN(dsn), release: func() {}, pg: db}, nil
	}
	owner, err := sqlite.Lock(dsn)
	if err != nil {
		return nil, err
	}
	db, err := sqlite.Open(ctx, dsn, sqlite.Options{Logger: log})
	if err != nil {
		owner.Close()
		return nil, err
	}
	return &backend{Backend: db, name: dsn, listening: owner.SetAddress, release: func() { owner.Close() }}, nil
}

// Close closes the store, then releases what openBackend took.
func (b *backend) Close() error {
	err := b.Backend.Close()
	b.release()
	return err
}

// redactDSN is a PostgreSQL URL without its password.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}
