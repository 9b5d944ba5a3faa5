package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

func openTest(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "studio test.db")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func integrityCheck(t testing.TB, db *DB) {
	t.Helper()
	var s string
	if err := db.r.QueryRow(`PRAGMA integrity_check`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s != "ok" {
		t.Fatalf("integrity_check = %q", s)
	}
}

func TestOpenMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, path := openTest(t)
	var v int
	if err := db.r.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() || v < 1 {
		t.Fatalf("schema version %d, want %d", v, SchemaVersion())
	}
	var mode string
	db.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Fatalf("journal_mode = %q", mode)
	}
	var fk int
	db.r.QueryRow(`PRAGMA foreign_keys`).Scan(&fk)
	if fk != 1 {
		t.Fatal("foreign keys off on the reader")
	}
	// The reader pool refuses writes.
	if _, err := db.r.Exec(`DELETE FROM chains`); err == nil {
		t.Fatal("reader accepted a write")
	}
	if _, err := db.CreateChain(ctx, sampleChain("a", 2), "first", true); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Reopen: idempotent, data intact.
	db2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rows int
	db2.r.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&rows)
	if rows != SchemaVersion() {
		t.Fatalf("%d schema_version rows after reopen", rows)
	}
	if _, err := db2.GetChainByName(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// A newer schema is refused.
	if _, err := db2.w.Exec(`INSERT INTO schema_version (version, applied_at) VALUES (?, 0)`, SchemaVersion()+5); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	_, err = Open(ctx, path, Options{})
	want := fmt.Sprintf("database schema version %d is newer than this studio (knows up to %d); upgrade the studio", SchemaVersion()+5, SchemaVersion())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("open of newer schema: %v", err)
	}
	var sv *SchemaVersionError
	if !errors.As(err, &sv) {
		t.Fatalf("not a SchemaVersionError: %T", err)
	}
}

// TestEventsLargeAndInterleaved: events of several runs in one write, some
// with outputs of 100 KB, are stored in bounded rows and read back whole from
// any seq; a write whose events go backwards for a run is refused whole.
func TestEventsLargeAndInterleaved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	big := strings.Repeat("x", 100<<10)
	var all []engine.Event
	for i := 0; i < 20; i++ {
		for _, run := range []string{"a", "b"} {
			e := mkEvents(run, i+1, 1)[0]
			if run == "a" && i%2 == 0 {
				e.Output = map[string]any{"blob": big, "i": float64(i)}
			}
			all = append(all, e)
		}
	}
	if err := db.AppendEvents(ctx, all); err != nil {
		t.Fatal(err)
	}
	var rows, largest int
	db.r.QueryRow(`SELECT COUNT(*), MAX(LENGTH(body)) FROM event_batches WHERE run_id = 'a'`).Scan(&rows, &largest)
	if rows < 4 || largest > sqlstore.MaxBatchBody+110<<10 {
		t.Fatalf("run a stored in %d rows, largest %d bytes", rows, largest)
	}
	var wantA []engine.Event
	for _, e := range all {
		if e.RunID == "a" {
			wantA = append(wantA, e)
		}
	}
	for _, after := range []int64{0, 1, 5, 6, 13, 19, 20} {
		got, err := db.EventsAfter(ctx, "a", after, 0)
		if err != nil {
			t.Fatal(err)
		}
		if want := wantA[after:]; len(want) == 0 {
			if len(got) != 0 {
				t.Fatalf("after %d: %d events, want none", after, len(got))
			}
		} else {
			jsonEqual(t, got, want)
		}
	}
	if got, _ := db.EventsAfter(ctx, "a", 4, 3); len(got) != 3 || got[0].Seq != 5 || got[2].Seq != 7 {
		t.Fatalf("a after 4, limit 3: %d events", len(got))
	}
	if n, _ := db.MaxSeq(ctx, "b"); n != 20 {
		t.Fatalf("max seq of b %d", n)
	}
	// Backwards within one write: refused, nothing of it kept.
	back := append(mkEvents("c", 5, 2), mkEvents("c", 3, 1)...)
	err := db.AppendEvents(ctx, back)
	var seqErr *store.EventSeqError
	if !errors.As(err, &seqErr) || seqErr.Seq != 3 || !strings.Contains(err.Error(), "event seq 3 of run c does not come after seq 6") {
		t.Fatalf("backwards write: %v", err)
	}
	if n, _ := db.MaxSeq(ctx, "c"); n != 0 {
		t.Fatalf("part of a refused write was kept: max seq %d", n)
	}
}

func TestEventWriterFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	if err := db.AppendEvents(ctx, mkEvents("r", 1, 5)); err != nil {
		t.Fatal(err)
	}
	w := NewEventWriter(db, store.EventWriterOptions{Interval: time.Millisecond, MaxRetries: 2})
	defer w.Close()
	// seq 3 is already stored: this batch can never be written.
	for _, e := range mkEvents("r", 3, 5) {
		w.Emit(e)
	}
	err := w.Flush(ctx)
	if err == nil || !strings.Contains(err.Error(), "were not stored") {
		t.Fatalf("flush after a failed write: %v", err)
	}
	if w.Dropped() != 5 {
		t.Fatalf("dropped %d", w.Dropped())
	}
	// The writer carries on with later events, and the error was reported once.
	for _, e := range mkEvents("r", 6, 5) {
		w.Emit(e)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.MaxSeq(ctx, "r"); n != 10 {
		t.Fatalf("max seq %d", n)
	}
}

func TestClaimInterruptTwoProcessesWorth(t *testing.T) {
	t.Parallel()
	// Two DB handles on one file (as two studio processes would have): the
	// conditional UPDATE still lets exactly one claim win.
	ctx := context.Background()
	db, path := openTest(t)
	db2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	for _, batch := range checkpointLog("x")[:2] {
		db.Append(ctx, "x", batch)
	}
	var wg sync.WaitGroup
	results := make([]error, 20)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := db
			if i%2 == 1 {
				h = db2
			}
			_, results[i] = h.ClaimInterrupt(ctx, "x", "")
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range results {
		if err == nil {
			wins++
		} else if !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("claim: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d claims won", wins)
	}
}

func TestBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	ch, _ := db.CreateChain(ctx, sampleChain("b", 5), "", true)
	db.AppendEvents(ctx, mkEvents("r", 1, 100))
	dst := filepath.Join(t.TempDir(), "backup.db")
	if err := db.Backup(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(ctx, dst); !errors.Is(err, os.ErrExist) {
		t.Fatalf("backup over an existing file: %v", err)
	}
	b, err := Open(ctx, dst, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	integrityCheck(t, b)
	if got, err := b.GetChain(ctx, ch.ID); err != nil || len(got.Doc.Nodes) != 5 {
		t.Fatalf("chain in backup: %v", err)
	}
	if n, _ := b.MaxSeq(ctx, "r"); n != 100 {
		t.Fatalf("events in backup: %d", n)
	}
}
