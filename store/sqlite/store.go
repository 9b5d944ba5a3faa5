// Package sqlite is the store backend the studio ships: the records of
// package store (chains and their immutable version history, runs, per-node
// results, events and checkpoint logs) in one SQLite database file.
//
// The database is opened with one writer connection and a separate pool of
// read-only connections, in WAL mode, so that runs writing events never
// starve page loads. Every write goes through the writer inside a
// BEGIN IMMEDIATE transaction; WAL with synchronous=NORMAL keeps every
// committed transaction across a process crash (kill -9).
//
// The records' logic is package sqlstore's, shared with store/postgres over
// this package's dialect; what is left here is SQLite's own: opening with
// its pragmas, migrations, the file lock, the checkpoint and event writes
// through the writer's prepared statements, recovery after a crash and
// backup. store/storetest is the contract both backends pass.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/doccache"
	"github.com/chainstudio/studio/store/sqlstore"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configure Open. The zero value is usable.
type Options struct {
	// ReadConns is the size of the read-only connection pool; default 4.
	ReadConns int
	// BusyTimeout bounds how long a connection waits for a lock held by
	// another process; default 10s.
	BusyTimeout time.Duration
	// DocCacheSize is how many decoded chain versions are kept in memory
	// (versions are immutable, so the cache is never stale); default 32,
	// negative disables it.
	DocCacheSize int
	// Logger receives the few messages the store logs (event write failures).
	// Default slog.Default().
	Logger *slog.Logger

	// schemaUpTo stops migrations at that version (tests build databases
	// of an older schema with it); 0 means the latest.
	schemaUpTo int
	// migrationFiles replaces the embedded migrations folder (tests open
	// databases migrated from files of other names with it).
	migrationFiles fs.FS
}

// DB is an open studio database.
type DB struct {
	// Store is the logic both SQL backends share, over dialect.
	*sqlstore.Store

	w      *sql.DB // the one writer connection
	r      *sql.DB // read-only pool
	path   string
	log    *slog.Logger
	now    func() time.Time
	closed bool

	docs *doccache.Cache // decoded chain documents

	// lastN caches the position of the runs this process appends
	// checkpoints to.
	lastN sqlstore.Positions

	// Statements prepared once on the writer connection and reused by every
	// transaction (parsing SQL costs more than running it in SQLite): the
	// dialect's Prepared.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool
}

// SchemaVersionError: the database was written by a newer studio.
type SchemaVersionError = sqlstore.SchemaVersionError

// Open opens (creating if needed) the database at path and migrates it to the
// latest schema.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	if strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("store: open %s: path may not contain '?' or '#'", path)
	}
	if opts.ReadConns <= 0 {
		opts.ReadConns = 4
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DocCacheSize == 0 {
		opts.DocCacheSize = 32
	}
	busy := strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)
	common := "_pragma=busy_timeout(" + busy + ")&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	wdsn := path + "?" + common + "&_pragma=journal_mode(WAL)&_txlock=immediate"
	rdsn := path + "?" + common + "&_pragma=query_only(1)"

	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db := &DB{w: w, path: path, log: opts.Logger, now: time.Now, stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{},
		docs: doccache.New(opts.DocCacheSize)}
	if err := db.migrate(ctx, opts); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", rdsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(opts.ReadConns)
	r.SetMaxIdleConns(opts.ReadConns)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.r = r
	db.Store = sqlstore.New(dialect{db}, r, db.docs, db.now)
	return db, nil
}

// Ping implements store.Backend: one query on the read pool.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("store: ping %s: %w", db.path, err)
	}
	return nil
}

// Close closes the database. Close any EventWriter on it first.
func (db *DB) Close() error {
	if db.closed {
		return nil
	}
	db.closed = true
	db.stmtMu.Lock()
	for _, st := range db.stmts {
		st.Close()
	}
	db.stmts = nil
	db.stmtMu.Unlock()
	err1 := db.r.Close()
	// A checkpoint on close folds the WAL back into the main file.
	_, _ = db.w.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	err2 := db.w.Close()
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Path returns the database file's path.
func (db *DB) Path() string { return db.path }

// SchemaVersion returns the schema version this binary knows.
func SchemaVersion() int { return len(migrations()) }

func migrations() []sqlstore.Migration { return sqlstore.Migrations(migrationFS, "migrations") }

// migrate applies every migration this binary knows that the database lacks,
// each in its own transaction, and refuses a database from a newer studio.
func (db *DB) migrate(ctx context.Context, opts Options) error {
	ms, upTo := migrations(), opts.schemaUpTo
	if opts.migrationFiles != nil {
		ms = sqlstore.Migrations(opts.migrationFiles, ".")
	}
	if upTo > 0 && upTo < len(ms) {
		ms = ms[:upTo]
	}
	if _, err := db.w.ExecContext(ctx, sqlstore.CreateSchemaVersion); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for {
		done, err := db.migrateOne(ctx, ms)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

func (db *DB) migrateOne(ctx context.Context, ms []sqlstore.Migration) (done bool, err error) {
	err = db.writeTx(ctx, func(tx *Tx) error {
		var have sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&have); err != nil {
			return err
		}
		cur := int(have.Int64)
		if cur > len(ms) {
			return &SchemaVersionError{Have: cur, Known: len(ms)}
		}
		if cur == len(ms) {
			done = true
			return nil
		}
		m := ms[cur]
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`, m.Version, sqlstore.Micros(db.now())); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		return nil
	})
	return done, err
}

// Tx is a transaction on this database (the shared SQL's, sqlstore.Tx).
type Tx = sqlstore.Tx

// writeTx runs fn in a write transaction on the writer connection
// (BEGIN IMMEDIATE, from the DSN's _txlock). fn must only use tx.
func (db *DB) writeTx(ctx context.Context, fn func(tx *Tx) error) error {
	return dialect{db}.WriteTx(ctx, func(tx *sql.Tx) error { return fn(sqlstore.NewTx(tx, dialect{db})) })
}

// readTx runs fn in a read transaction on the reader pool, so that several
// queries see one snapshot.
func (db *DB) readTx(ctx context.Context, fn func(tx *Tx) error) error {
	return dialect{db}.ReadTx(ctx, func(tx *sql.Tx) error { return fn(sqlstore.NewTx(tx, dialect{db})) })
}

// dialect is SQLite's sqlstore.Dialect: one writer whose transactions are
// serial (no FOR UPDATE), ? placeholders as they are, and the writer's
// prepared statements.
type dialect struct{ db *DB }

func (d dialect) WriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		d.db.prepareWanted()
		return err
	}
	err = tx.Commit()
	d.db.prepareWanted()
	return err
}

func (d dialect) ReadTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := d.db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

func (dialect) Rebind(q string) string { return q }

func (d dialect) Prepared(q string) *sql.Stmt { return d.db.stmt(q) }

func (dialect) ForUpdate() string { return "" }

func (dialect) IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

func (dialect) NodeStatus() string { return `json_extract(c.body, '$.node.status')` }

// stmt returns the cached prepared statement for q, or nil the first time
// (q is then prepared after the current transaction, when the writer
// connection is free).
func (db *DB) stmt(q string) *sql.Stmt {
	db.stmtMu.Lock()
	defer db.stmtMu.Unlock()
	if st := db.stmts[q]; st != nil {
		return st
	}
	if db.wanted != nil {
		db.wanted[q] = true
	}
	return nil
}

func (db *DB) prepareWanted() {
	db.stmtMu.Lock()
	if len(db.wanted) == 0 || db.stmts == nil {
		db.stmtMu.Unlock()
		return
	}
	var qs []string
	for q := range db.wanted {
		qs = append(qs, q)
		delete(db.wanted, q)
	}
	db.stmtMu.Unlock()
	// Prepare without holding stmtMu: preparing waits for the writer
	// connection, which another transaction (that may call stmt) holds.
	for _, q := range qs {
		st, err := db.w.Prepare(q)
		if err != nil {
			continue
		}
		db.stmtMu.Lock()
		if db.stmts == nil || db.stmts[q] != nil {
			st.Close()
		} else {
			db.stmts[q] = st
		}
		db.stmtMu.Unlock()
	}
}

// isUniqueViolation reports whether err is a UNIQUE/PRIMARY KEY constraint
// failure (SQLite extended codes 2067 and 1555; text match as a fallback).
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		switch c.Code() {
		case 2067, 1555:
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "PRIMARY KEY constraint failed")
}

// The SQLite database is a whole store backend.
var _ store.Backend = (*DB)(nil)
