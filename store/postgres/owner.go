package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Owner holds a database (its studio schema) for one studio process: a
// session advisory lock on a connection of its own, taken out of the pool.
// The lock goes when the connection does, however the process ends (the
// server notices a dead client and drops its session), so nothing stale is
// ever left to clear by hand. In this version one studio process serves a
// PostgreSQL database, as with SQLite: start-up recovery would otherwise
// fail another process's live runs.
type Owner struct {
	conn *pgx.Conn
}

// InUseError: another studio process holds the database.
type InUseError struct {
	DB     string // host:port/database (schema)
	Holder string // who holds it, from pg_stat_activity
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("database %s is in use by another studio (%s); stop it or use another --db (one studio process per PostgreSQL database in this version)", e.DB, e.Holder)
}

// appName is the application_name of a studio's connections (unless the
// URL sets one): pg_stat_activity shows who is connected, and a refused
// second process names the first with it.
func appName() string {
	host, _ := os.Hostname()
	return "chain-studio pid " + strconv.Itoa(os.Getpid()) + " on " + host
}

// Lock takes the database for this process, or returns an *InUseError
// naming the holder. Release it with Close.
func (db *DB) Lock(ctx context.Context) (*Owner, error) {
	pc, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: lock %s: %w", db.dsn, unavailable(err))
	}
	conn := pc.Hijack() // out of the pool: the lock lives as long as this connection
	fail := func(err error) (*Owner, error) {
		conn.Close(context.Background())
		return nil, err
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fail(fmt.Errorf("store: lock %s: %w", db.dsn, err))
	}
	// One key per schema, so that studios in different schemas of one
	// database (the tests) do not hold each other.
	h := fnv.New64a()
	h.Write([]byte("chain-studio owner\x00" + schema))
	key := int64(h.Sum64())
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		return fail(fmt.Errorf("store: lock %s: %w", db.dsn, err))
	}
	if got {
		return &Owner{conn: conn}, nil
	}
	// A bigint advisory key shows in pg_locks as classid (high half),
	// objid (low half), objsubid 1.
	var app, addr string
	var since time.Time
	err = conn.QueryRow(ctx, `SELECT COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'local socket'), a.backend_start
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid = $1::bigint::oid AND l.objid = $2::bigint::oid AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
LIMIT 1`, int64(uint64(key)>>32), int64(uint64(key)&0xffffffff)).Scan(&app, &addr, &since)
	holder := "its session is not visible to this role"
	if err == nil {
		if app == "" {
			app = "a client without application_name"
		}
		holder = fmt.Sprintf("%s, connected from %s since %s", app, addr, since.UTC().Format(time.RFC3339))
	}
	where := db.dsn
	if schema != "public" {
		where += " (schema " + schema + ")"
	}
	return fail(&InUseError{DB: where, Holder: holder})
}

// Close releases the database.
func (o *Owner) Close() error {
	if o == nil || o.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := o.conn.Close(ctx)
	o.conn = nil
	return err
}
