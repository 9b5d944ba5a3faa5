// Package postgres is the store backend on PostgreSQL: the same records and
// the same contract (store/storetest) as store/sqlite, for a studio whose
// database is a PostgreSQL server (studio serve --db postgres://…).
//
// The records' logic is package sqlstore's, shared with store/sqlite over
// this package's dialect: times are BIGINT unix microseconds, documents are
// TEXT holding JSON. Every read path decodes a whole document in Go, so
// jsonb would only add a parse on each write and a re-serialisation on each
// read. Connections come from a pgxpool.Pool, used through database/sql
// (pgx's stdlib adapter) so that the shared queries run unchanged; pgx
// caches each statement's plan per connection. What is left here is
// PostgreSQL's own: opening, migrations under an advisory lock, run leases
// and fencing, LISTEN/NOTIFY, the pipelined checkpoint and event appends,
// and the transactions River's jobs commit with.
//
// Unlike SQLite, several transactions write at once: writes that read then
// write lock the row they depend on (SELECT … FOR UPDATE) or write
// conditionally (UPDATE … WHERE claimed_at IS NULL), so that two writers
// never both succeed where one must lose.
package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/doccache"
	"github.com/chainstudio/studio/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Options configure Open. The zero value is usable.
type Options struct {
	// MaxConns bounds the connection pool; default 10. Keep the sum over
	// every process below the server's max_connections.
	MaxConns int
	// DocCacheSize is how many decoded chain versions are kept in memory;
	// default 32, negative disables it.
	DocCacheSize int
	// Logger receives the few messages the store logs. Default slog.Default().
	Logger *slog.Logger

	// schemaUpTo stops migrations at that version (tests); 0 means the latest.
	schemaUpTo int
	// migrationFiles replaces the embedded migrations folder (tests open
	// databases migrated from files of other names with it).
	migrationFiles fs.FS
}

// DB is an open studio database on PostgreSQL.
type DB struct {
	// Store is the logic both SQL backends share, over dialect.
	*sqlstore.Store

	pool   *pgxpool.Pool
	sql    *sql.DB
	w, r   *conn // both the pool: named as in the SQLite backend
	dsn    string
	log    *slog.Logger
	now    func() time.Time
	closed atomic.Bool

	docs *doccache.Cache

	// cpEnc encodes checkpoint entries, each chain once (cplog.Encoder).
	cpEnc cplog.Encoder

	// notifyEvents: each batch the event writer stores sends a NOTIFY on
	// EventsChannel (processes watching runs executing here read sooner).
	notifyEvents atomic.Bool

	// lastN caches the position of the runs this process appends
	// checkpoints to.
	lastN sqlstore.Positions

	// fences holds the epoch of each run this process executes under a
	// lease (run id → *fence): its writes check it (lease.go).
	fences sync.Map
}

// SchemaVersionError: the database was written by a newer studio.
type SchemaVersionError = sqlstore.SchemaVersionError

// IsDSN reports whether s names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a SQLite file.
func IsDSN(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at dsn and migrates it to the latest schema.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 10
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.DocCacheSize == 0 {
		opts.DocCacheSize = 32
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's message may quote the DSN with its password: keep it out.
		return nil, fmt.Errorf("store: open postgres: %w: the database URL is not valid", store.ErrInvalid)
	}
	cfg.MaxConns = int32(opts.MaxConns)
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without one, a server that drops packets holds start-up (and
		// every new connection) for the operating system's TCP timeout.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName()
	}
	where := cfg.ConnConfig.Host + ":" + strconv.Itoa(int(cfg.ConnConfig.Port)) + "/" + cfg.ConnConfig.Database
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: open postgres %s: %w", where, err)
	}
	db := newDB(pool, where, opts.Logger, opts.DocCacheSize)
	if err := db.migrate(ctx, opts); err != nil {
		db.sql.Close()
		pool.Close()
		return nil, fmt.Errorf("store: open postgres %s: %w", where, err)
	}
	return db, nil
}

// newDB is the store on pool; where names the database in messages.
func newDB(pool *pgxpool.Pool, where string, log *slog.Logger, docCacheSize int) *DB {
	sdb := stdlib.OpenDBFromPool(pool)
	c := &conn{sdb}
	db := &DB{pool: pool, sql: sdb, w: c, r: c, dsn: where, log: log, now: time.Now, docs: doccache.New(docCacheSize)}
	db.Store = sqlstore.New(dialect{db}, c, db.docs, db.now)
	return db
}

// Ping implements store.Backend: one round trip on a pooled connection.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close closes the pool. Close any EventWriter on it first.
func (db *DB) Close() error {
	if db.closed.Swap(true) {
		return nil
	}
	err := db.sql.Close()
	db.pool.Close()
	if err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Where returns host:port/database, without credentials.
func (db *DB) Where() string { return db.dsn }

// SchemaVersion returns the schema version this binary knows.
func SchemaVersion() int { return len(migrations()) }

func migrations() []sqlstore.Migration { return sqlstore.Migrations(migrationFS, "migrations") }

// migrationLock is the key of the advisory lock migrations hold, so that
// processes starting at once against one database migrate it once.
const migrationLock = 0x5354_5544_494f // "STUDIO"

// migrate applies, in one transaction under a transaction-scoped advisory
// lock, every migration this binary knows that the database lacks, and
// refuses a database from a newer studio.
func (db *DB) migrate(ctx context.Context, opts Options) error {
	ms, upTo := migrations(), opts.schemaUpTo
	if opts.migrationFiles != nil {
		ms = sqlstore.Migrations(opts.migrationFiles, ".")
	}
	if upTo > 0 && upTo < len(ms) {
		ms = ms[:upTo]
	}
	return db.writeTx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(migrationLock)); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		if _, err := tx.ExecContext(ctx, sqlstore.CreateSchemaVersion); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		var have sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_version`).Scan(&have); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		cur := int(have.Int64)
		if cur > len(ms) {
			return &SchemaVersionError{Have: cur, Known: len(ms)}
		}
		for _, m := range ms[cur:] {
			if _, err := tx.Tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, ?)`, m.Version, sqlstore.Micros(db.now())); err != nil {
				return fmt.Errorf("migration %s: %w", m.Name, err)
			}
		}
		return nil
	})
}

// writeTx runs fn in a read-write transaction.
func (db *DB) writeTx(ctx context.Context, fn func(tx *Tx) error) error {
	return dialect{db}.WriteTx(ctx, func(tx *sql.Tx) error { return fn(sqlstore.NewTx(tx, dialect{db})) })
}

// readTx runs fn in a read-only transaction, so that several queries see
// one snapshot.
func (db *DB) readTx(ctx context.Context, fn func(tx *Tx) error) error {
	return dialect{db}.ReadTx(ctx, func(tx *sql.Tx) error { return fn(sqlstore.NewTx(tx, dialect{db})) })
}

// dialect is PostgreSQL's sqlstore.Dialect: transactions that write at once
// (so FOR UPDATE where a write depends on what it read), $n placeholders,
// and a failure to reach the server read as EUNAVAILABLE. pgx caches each
// statement's plan per connection, so nothing is prepared here.
type dialect struct{ db *DB }

func (d dialect) WriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if d.db.closed.Load() {
		return errClosed
	}
	tx, err := d.db.sql.BeginTx(ctx, nil)
	if err != nil {
		return unavailable(err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (d dialect) ReadTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if d.db.closed.Load() {
		return errClosed
	}
	tx, err := d.db.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return unavailable(err)
	}
	defer tx.Rollback()
	return fn(tx)
}

func (dialect) Rebind(q string) string { return rebind(q) }

func (dialect) Prepared(string) *sql.Stmt { return nil }

func (dialect) ForUpdate() string { return " FOR UPDATE" }

func (dialect) IsUniqueViolation(err error) bool { return isUniqueViolation(err) }

func (dialect) NodeStatus() string { return `(c.body::jsonb -> 'node' ->> 'status')` }

var errClosed = fmt.Errorf("%w: the store is closed", store.ErrUnavailable)

// errUnreachable is what clients read when the server cannot be reached:
// the cause (host, user, network error) goes to the log only.
var errUnreachable = fmt.Errorf("%w: the database server cannot be reached; try again later", store.ErrUnavailable)

// unavailable marks a failure to reach the server as EUNAVAILABLE (the
// API answers 503, try again), not as an internal fault.
func unavailable(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		slog.Warn("store: PostgreSQL unreachable", "err", err)
		return errUnreachable
	}
	return err
}

// Tx is a transaction on this database (the shared SQL's, sqlstore.Tx):
// its queries are written with '?' placeholders and rebound to $n.
type Tx = sqlstore.Tx

// conn is the pool with the same rebinding.
type conn struct{ db *sql.DB }

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, rebind(q), args...)
}

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rows, err := c.db.QueryContext(ctx, rebind(q), args...)
	return rows, unavailable(err)
}

func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.db.QueryRowContext(ctx, rebind(q), args...)
}

var rebound sync.Map // query → rebound query

// rebind turns '?' placeholders into $1, $2, … in order, and '?N' into $N;
// quoted strings are left alone.
func rebind(q string) string {
	if v, ok := rebound.Load(q); ok {
		return v.(string)
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	inStr := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'':
			inStr = !inStr
			b.WriteByte(c)
		case c == '?' && !inStr:
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + q[i+1:j])
				i = j - 1
			} else {
				n++
				b.WriteString("$" + strconv.Itoa(n))
			}
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	if len(q) < 4096 { // the queries built with many ids are not worth keeping
		rebound.Store(q, out)
	}
	return out
}

// isUniqueViolation reports whether err is a unique or primary key
// violation (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// The PostgreSQL database is a whole store backend, and keeps the leases of
// the processes that share it.
var (
	_ store.Backend    = (*DB)(nil)
	_ store.LeaseStore = (*DB)(nil)
)

// Pool is the connection pool, for what runs beside the store on the same
// database (River's client and its migrations, wired by cmd/studio).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// WithTx runs fn in a pgx transaction on the pool and commits it when fn
// returns nil, so that work outside the store (a River job insert) commits
// with the store's own rows or not at all.
func (db *DB) WithTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if db.closed.Load() {
		return errClosed
	}
	return pgx.BeginFunc(ctx, db.pool, fn)
}

// WithMigrationLock runs fn while this process holds the advisory lock the
// studio's own migrations take (as a session lock on a connection of its
// own), so that other schemas migrated at start-up (River's, whose
// migrations need one transaction each) are applied once when processes
// start together.
func (db *DB) WithMigrationLock(ctx context.Context, fn func(ctx context.Context) error) error {
	if db.closed.Load() {
		return errClosed
	}
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return unavailable(err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// A fresh context: the caller's may be done, and a lock left held
		// would stay with the pooled connection.
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(uctx, `SELECT pg_advisory_unlock($1)`, int64(migrationLock)); err != nil {
			c.Conn().Close(uctx) // drops the session, and the lock with it
		}
	}()
	return fn(ctx)
}

// appName is the application_name of a studio's connections (unless the
// URL sets one): pg_stat_activity then shows which process is connected.
func appName() string {
	host, _ := os.Hostname()
	return "chain-studio pid " + strconv.Itoa(os.Getpid()) + " on " + host
}
