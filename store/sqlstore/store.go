// Package sqlstore is the store both SQL backends (store/sqlite,
// store/postgres) are: every record of package store read and written
// once, over a small Dialect for what truly differs between them
// (placeholders, FOR UPDATE, unique-violation errors, the JSON expression of
// a node entry's status, how transactions begin and commit). Its SQL is
// written with ? placeholders, times as BIGINT unix microseconds and
// documents as TEXT holding JSON, the same in both schemas.
//
// It was sqlq, the queries both backends ran; it is named for what it is
// now, a store with a Dialect under it, of which a backend keeps only what
// is its own: opening and its settings, migrations, the file lock and
// backup (SQLite), leases, LISTEN and the pipelined appends (PostgreSQL).
// store/storetest is the contract both pass.
package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/chainstudio/studio/store/doccache"
)

// Dialect is what a backend's SQL and connections do differently; the Store
// written over it is the rest.
type Dialect interface {
	// WriteTx runs fn in a read-write transaction, committed when fn
	// returns nil and rolled back otherwise.
	WriteTx(ctx context.Context, fn func(*sql.Tx) error) error
	// ReadTx runs fn in a read-only transaction: one snapshot.
	ReadTx(ctx context.Context, fn func(*sql.Tx) error) error
	// Rebind turns the ? placeholders the shared SQL is written with into
	// the backend's own.
	Rebind(q string) string
	// Prepared returns a statement prepared for q on the connection write
	// transactions run on, or nil (Tx.ExecPrepared and Tx.QueryRowPrepared
	// then run q as is).
	Prepared(q string) *sql.Stmt
	// ForUpdate ends a SELECT whose rows a write depends on: " FOR UPDATE"
	// where write transactions run at once, "" where they are serial
	// already.
	ForUpdate() string
	// IsUniqueViolation reports whether err is a unique or primary key
	// constraint failure.
	IsUniqueViolation(err error) bool
	// NodeStatus is the expression that reads the "status" of the "node" of
	// a checkpoint entry's body c.body (see reachedNode).
	NodeStatus() string
}

// Store is the store both SQL backends are: chains and their versions,
// runs, checkpoint reads, event reads, pruning, triggers, users,
// credentials, interrupts and usage, written once over a Dialect. A backend
// embeds it and adds what is its own (opening, migrations, checkpoint and
// event writes, recovery, leases, backup).
type Store struct {
	d    Dialect
	r    Conn
	docs *doccache.Cache
	now  func() time.Time
	lock LockAdmins
	// reachedNode is the run-list condition on a node (runread.go), in
	// the dialect's JSON.
	reachedNode string
}

// New returns the Store over d. r runs the reads that need no snapshot;
// docs is the backend's cache of decoded chain documents; now is its clock.
func New(d Dialect, r Conn, docs *doccache.Cache, now func() time.Time) *Store {
	return &Store{d: d, r: r, docs: docs, now: now, lock: LockAdmins(d.ForUpdate()),
		reachedNode: reachedNode(d.NodeStatus())}
}

// Tx is a transaction of either backend, written with ? placeholders.
type Tx struct {
	*sql.Tx
	d Dialect
}

// NewTx wraps a backend's transaction for the shared SQL.
func NewTx(tx *sql.Tx, d Dialect) *Tx { return &Tx{Tx: tx, d: d} }

// ExecContext runs a write with the backend's placeholders.
func (t *Tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.Tx.ExecContext(ctx, t.d.Rebind(q), args...)
}

// QueryContext runs a query with the backend's placeholders.
func (t *Tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(ctx, t.d.Rebind(q), args...)
}

// QueryRowContext runs a one-row query with the backend's placeholders.
func (t *Tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(ctx, t.d.Rebind(q), args...)
}

// ExecPrepared is ExecContext for a statement run often: through the backend's
// prepared statement when it keeps one.
func (t *Tx) ExecPrepared(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := t.d.Prepared(q); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.ExecContext(ctx, q, args...)
}

// QueryRowPrepared is QueryRowContext for a query run often (see ExecPrepared).
func (t *Tx) QueryRowPrepared(ctx context.Context, q string, args ...any) *sql.Row {
	if st := t.d.Prepared(q); st != nil {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.QueryRowContext(ctx, q, args...)
}

func (s *Store) writeTx(ctx context.Context, fn func(*Tx) error) error {
	return s.d.WriteTx(ctx, func(tx *sql.Tx) error { return fn(&Tx{Tx: tx, d: s.d}) })
}

func (s *Store) readTx(ctx context.Context, fn func(*Tx) error) error {
	return s.d.ReadTx(ctx, func(tx *sql.Tx) error { return fn(&Tx{Tx: tx, d: s.d}) })
}

// rowQueryer reads one row: a *Tx or the read pool.
type rowQueryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Micros converts a time to the stored form: unix microseconds, UTC; the
// zero time is 0.
func Micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// FromMicros reads a time Micros stored.
func FromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

// NullMicros is Micros with the zero time stored as NULL.
func NullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

// FromNullMicros reads a time NullMicros stored.
func FromNullMicros(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return FromMicros(v.Int64)
}

// NullString stores "" as NULL.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NullInt stores 0 as NULL.
func NullInt(v int) any {
	if v == 0 {
		return nil
	}
	return v
}
