package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/storetest"
)

// Processes starting at once against one new database migrate it once: the
// advisory lock makes the others wait and then find the schema current.
func TestMigrateConcurrentOpens(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	const n = 6
	errs := make([]error, n)
	dbs := make([]*DB, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = Open(ctx, dsn, Options{MaxConns: 2})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var rows, max int
	if err := dbs[0].r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM schema_version`).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion() || max != SchemaVersion() {
		t.Fatalf("schema_version has %d rows up to %d, want %d once each", rows, max, SchemaVersion())
	}
}

// A database written by a newer studio is refused, with a message that says
// to upgrade, and is left as it was.
func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	db, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	newer := SchemaVersion() + 1
	if _, err := db.w.ExecContext(ctx, `INSERT INTO schema_version (version, applied_at) VALUES (?, 0)`, newer); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, dsn, Options{})
	var sv *SchemaVersionError
	if !errors.As(err, &sv) || sv.Have != newer || sv.Known != SchemaVersion() {
		t.Fatalf("open of a newer database: %v, want a SchemaVersionError", err)
	}
	if !strings.Contains(err.Error(), "upgrade the studio") {
		t.Fatalf("message %q does not say to upgrade", err)
	}
}

// Concurrent saves based on one version: exactly one is stored, every other
// is a version conflict naming the new current version (SQLite gets this
// from its single writer; here the chain's row lock does it).
func TestConcurrentSavesOneWins(t *testing.T) {
	t.Parallel()
	db := openTest(t, Options{MaxConns: 8})
	ctx := context.Background()
	ch, err := db.CreateChain(ctx, storetest.SampleChain("race", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			doc := storetest.SampleChain("race", 2)
			doc.Description = fmt.Sprint("edit ", i)
			_, errs[i] = db.SaveChain(ctx, ch.ID, 1, doc, "")
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		var vc *store.VersionConflictError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &vc) && vc.Current == 2:
		default:
			t.Fatalf("save: %v, want success or a conflict at version 2", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d saves succeeded, want exactly 1", ok)
	}
	got, err := db.GetChain(ctx, ch.ID)
	if err != nil || got.Version != 2 {
		t.Fatalf("chain at version %v, %v; want 2", got, err)
	}
}

// Writers appending the same seqs of one run at once: one write is stored,
// the others are seq conflicts, and the run's events read back once each.
func TestConcurrentAppendEventsOneRun(t *testing.T) {
	t.Parallel()
	db := openTest(t, Options{MaxConns: 8})
	ctx := context.Background()
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.AppendEvents(ctx, storetest.Events("r1", 1, 20))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrSeqConflict):
		default:
			t.Fatalf("append: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d appends succeeded, want 1", ok)
	}
	evs, err := db.EventsAfter(ctx, "r1", 0, 0)
	if err != nil || len(evs) != 20 {
		t.Fatalf("read back %d events, %v; want 20", len(evs), err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// Backup on PostgreSQL is refused with a message that names pg_dump.
func TestBackupSaysPgDump(t *testing.T) {
	t.Parallel()
	db := openTest(t, Options{})
	err := db.Backup(context.Background(), t.TempDir()+"/copy.db")
	if store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.Error(), "pg_dump") {
		t.Fatalf("backup: %v (code %q), want an invalid error naming pg_dump", err, store.ErrorCode(err))
	}
	if strings.Contains(err.Error(), "postgres@") {
		t.Fatalf("backup message %q shows the DSN's credentials", err)
	}
}

// A DSN that is not a URL pgx understands is refused without quoting it
// (it may hold a password).
func TestOpenBadDSN(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), "postgres://u:secret@[::1/x", Options{})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("open: %v", err)
	}
}

func TestRebind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`a = ? AND b = ?`:                   `a = $1 AND b = $2`,
		`x LIKE ? ESCAPE '\' AND y = '?'`:   `x LIKE $1 ESCAPE '\' AND y = '?'`,
		`run_id = ?1 AND seq <= ?2 + 1, ?1`: `run_id = $1 AND seq <= $2 + 1, $1`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

// When the server cannot be reached, reads and writes fail as unavailable
// (the API answers 503, try again), not as internal faults.
func TestServerGoneIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A pool on a loopback port nothing listens on: every connection fails
	// as it would once the server went away.
	cfg, err := pgxpool.ParseConfig("postgres://postgres@127.0.0.1:1/gone?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := newDB(pool, "127.0.0.1:1/gone", slog.Default(), 0)
	defer db.Close()
	_, err = db.GetChain(ctx, "x")
	if store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("get chain: %v (code %q), want unavailable", err, store.ErrorCode(err))
	}
	_, err = db.CreateChain(ctx, storetest.SampleChain("c", 1), "", true)
	if store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("create chain: %v (code %q), want unavailable", err, store.ErrorCode(err))
	}
	_, _, err = db.ListRuns(ctx, store.RunFilter{})
	if store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("list runs: %v (code %q), want unavailable", err, store.ErrorCode(err))
	}
	db.Close()
	if _, err := db.GetChain(ctx, "x"); store.ErrorCode(err) != store.EUNAVAILABLE {
		t.Errorf("get chain after close: %v, want unavailable", err)
	}
}

// A node result goes in with one INSERT when this process knows the run's
// last entry; when another process appended meanwhile, that INSERT is
// refused by the entry key and the append is redone from the database: the
// log has every entry once, in order.
func TestNodeAppendAfterAnotherWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := openTwo(t)
	t0 := time.Now().UTC()
	node := func(id string, seq int64) []engine.Checkpoint {
		return []engine.Checkpoint{{RunID: "r", Kind: engine.CheckpointNode, EventSeq: seq, Time: t0, Node: &engine.NodeRecord{
			NodeID: id, Status: engine.PhaseDone, Output: id, Attempts: 1, Started: t0, Ended: t0}}}
	}
	start := storetest.CheckpointLog("r")[0]
	if err := a.Append(ctx, "r", start); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "r", node("n0", 2)); err != nil { // a now caches entry 2
		t.Fatal(err)
	}
	if err := b.Append(ctx, "r", node("n1", 3)); err != nil { // b takes entry 3
		t.Fatal(err)
	}
	if err := a.Append(ctx, "r", node("n2", 4)); err != nil { // a's cache is stale
		t.Fatal(err)
	}
	log, err := a.Load(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cp := range log {
		if cp.Node != nil {
			got = append(got, cp.Node.NodeID)
		}
	}
	if fmt.Sprint(got) != "[n0 n1 n2]" || len(log) != 4 {
		t.Fatalf("log has %d entries, nodes %v; want start + n0 n1 n2", len(log), got)
	}
	r, err := b.GetRun(ctx, "r")
	if err != nil || len(r.Nodes) != 3 {
		t.Fatalf("run: %v, %v", r, err)
	}
}

// An event writer with NotifyEvents sends one notification per stored
// batch; a listener hears it, and hears again after its connection is
// killed (the reconnect resyncs).
func TestListenEventsHint(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := Open(ctx, dsn, Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.NotifyEvents(true)
	hints := db.ListenEvents(ctx)
	wait := func(what string) {
		t.Helper()
		select {
		case <-hints:
		case <-time.After(5 * time.Second):
			t.Fatalf("no hint %s", what)
		}
	}
	wait("at start (resync)")
	if _, err := db.CreateRun(ctx, store.Run{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	w := db.NewEventWriter(store.EventWriterOptions{})
	defer w.Close()
	w.Emit(engine.Event{RunID: "r1", Seq: 1, NodeID: "a", Phase: engine.PhaseStart})
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wait("after a stored batch")
	// Kill the listening session: the listener comes back and resyncs.
	// Only this process's (its application_name names its pid): other
	// packages' tests listen on the same server at the same time.
	var killed int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'LISTEN `+EventsChannel+`'
AND application_name = current_setting('application_name') AND pid <> pg_backend_pid()`).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("killed %d listening sessions: %v", killed, err)
	}
	wait("after the listener's connection was killed")
}

// Two processes on one database: a webhook signature one of them accepted
// is a replay for the other.
func TestHookSignatureAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := openTwo(t)
	now := time.Now()
	d := sha256.Sum256([]byte("t=1,v1=abc"))
	if err := a.UseHookSignature(ctx, "h", d[:], now, now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := b.UseHookSignature(ctx, "h", d[:], now, now.Add(5*time.Minute)); !errors.Is(err, store.ErrSignatureUsed) {
		t.Fatalf("the other process used the signature again: %v, want ErrSignatureUsed", err)
	}
}

// openTwo opens two stores on one new schema, as two processes would.
func openTwo(t *testing.T) (*DB, *DB) {
	t.Helper()
	dsn := pgtest.Schema(t)
	var dbs [2]*DB
	for i := range dbs {
		db, err := Open(context.Background(), dsn, Options{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs[0], dbs[1]
}
