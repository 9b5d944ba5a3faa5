package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chainstudio/studio/store"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
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

func sampleChain(name string, nodes int) *engine.Chain {
	c := &engine.Chain{Name: name, Description: "a test chain"}
	for i := 0; i < nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		c.Nodes = append(c.Nodes, engine.Node{
			ID: id, Kind: engine.KindTool, Name: "echo",
			Input:    map[string]any{"text": "hello " + id, "n": float64(i)},
			Position: &engine.Position{X: float64(i * 10), Y: 5},
		})
		if i > 0 {
			c.Edges = append(c.Edges, engine.Edge{ID: fmt.Sprintf("e%d", i), Source: fmt.Sprintf("n%d", i-1), Target: id})
		}
	}
	return c
}

func jsonEqual(t testing.TB, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("mismatch:\n got %s\nwant %s", g, w)
	}
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
	if _, err := db.CreateChain(ctx, sampleChain("a", 2), "first"); err != nil {
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

func TestChainLifecycle(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)

	doc := sampleChain("Fetch Report", 3)
	ch, err := db.CreateChain(ctx, doc, "initial")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Version != 1 || ch.ID == "" || ch.NodeCount != 3 || ch.Created.IsZero() {
		t.Fatalf("created %+v", ch)
	}
	got, err := db.GetChain(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got.Doc, doc)
	if !got.Created.Equal(ch.Created) || got.Name != "Fetch Report" || got.Description != "a test chain" {
		t.Fatalf("get %+v vs %+v", got, ch)
	}
	byName, err := db.GetChainByName(ctx, "Fetch Report")
	if err != nil || byName.ID != ch.ID {
		t.Fatalf("by name: %v %v", byName, err)
	}
	if _, err := db.GetChain(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing chain: %v", err)
	}
	if _, err := db.GetChainByName(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing chain by name: %v", err)
	}
	// Name taken.
	_, err = db.CreateChain(ctx, sampleChain("Fetch Report", 1), "")
	var ce *store.ConflictError
	if !errors.Is(err, store.ErrNameTaken) || !errors.As(err, &ce) || ce.ChainID != ch.ID {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := db.CreateChain(ctx, &engine.Chain{}, ""); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("nameless chain: %v", err)
	}

	// Save v2, then a stale save based on v1 conflicts and writes nothing.
	doc2 := doc.Clone()
	doc2.Nodes[1].Input["text"] = "changed"
	doc2.Nodes[2].Position = &engine.Position{X: 99, Y: 99}
	ch2, err := db.SaveChain(ctx, ch.ID, 1, doc2, "edit")
	if err != nil {
		t.Fatal(err)
	}
	if ch2.Version != 2 {
		t.Fatalf("version %d", ch2.Version)
	}
	doc3 := doc.Clone()
	doc3.Description = "stale"
	_, err = db.SaveChain(ctx, ch.ID, 1, doc3, "stale edit")
	var vc *store.VersionConflictError
	if !errors.As(err, &vc) || vc.Current != 2 || !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("stale save: %v", err)
	}
	cur, _ := db.GetChain(ctx, ch.ID)
	if cur.Version != 2 || cur.Description != "a test chain" {
		t.Fatalf("stale save overwrote: %+v", cur)
	}
	if _, err := db.SaveChain(ctx, "nope", 1, doc3, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("save of missing chain: %v", err)
	}

	// Renaming onto another chain's name is refused.
	other, err := db.CreateChain(ctx, sampleChain("Other", 1), "")
	if err != nil {
		t.Fatal(err)
	}
	ren := doc2.Clone()
	ren.Name = "Other"
	if _, err := db.SaveChain(ctx, ch.ID, 2, ren, ""); !errors.Is(err, store.ErrNameTaken) {
		t.Fatalf("rename onto taken name: %v", err)
	}

	// History.
	vs, err := db.ListVersions(ctx, ch.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != 2 || vs[0].Message != "edit" || vs[1].Message != "initial" || vs[0].Doc != nil {
		t.Fatalf("versions %+v", vs)
	}
	v1, err := db.GetVersion(ctx, ch.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, v1.Doc, doc)
	if _, err := db.GetVersion(ctx, ch.ID, 9); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing version: %v", err)
	}

	// Diff.
	d, err := db.DiffVersions(ctx, ch.ID, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, d, &engine.ChainDiff{NodesChanged: []engine.NodeChange{
		{NodeID: "n1", Fields: []string{"input"}, Changes: []engine.FieldChange{{Field: "input.text", Old: json.RawMessage(`"hello n1"`), New: json.RawMessage(`"changed"`)}}},
		{NodeID: "n2", Fields: []string{"position"}, Changes: []engine.FieldChange{{Field: "position", Old: json.RawMessage(`{"x":20,"y":5}`), New: json.RawMessage(`{"x":99,"y":99}`)}}},
	}})

	// Restore v1 → v3 with v1's content.
	ch3, err := db.RestoreVersion(ctx, ch.ID, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if ch3.Version != 3 {
		t.Fatalf("restore made version %d", ch3.Version)
	}
	cur, _ = db.GetChain(ctx, ch.ID)
	jsonEqual(t, cur.Doc, doc)
	vs, _ = db.ListVersions(ctx, ch.ID)
	if len(vs) != 3 || vs[0].Message != "restored version 1" {
		t.Fatalf("versions after restore %+v", vs)
	}
	if d, _ := db.DiffVersions(ctx, ch.ID, 1, 3); !d.Empty() {
		t.Fatalf("restored version differs: %+v", d)
	}

	// Listing.
	if _, err := db.CreateRun(ctx, store.Run{ID: "r1", ChainID: ch.ID, ChainVersion: 3, Status: engine.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	list, total, err := db.ListChains(ctx, store.ChainFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(list) != 2 || list[0].Name != "Fetch Report" || list[0].LastRunStatus != engine.StatusCompleted ||
		list[0].NodeCount != 3 || list[0].Version != 3 || list[1].LastRunStatus != "" {
		t.Fatalf("list %+v total %d", list, total)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Query: "REPORT"})
	if total != 1 || len(list) != 1 || list[0].ID != ch.ID {
		t.Fatalf("query list %+v", list)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Query: "%"})
	if total != 0 || len(list) != 0 {
		t.Fatalf("LIKE wildcard not escaped: %+v", list)
	}
	list, total, _ = db.ListChains(ctx, store.ChainFilter{Limit: 1, Offset: 1})
	if total != 2 || len(list) != 1 || list[0].ID != other.ID {
		t.Fatalf("paged list %+v", list)
	}

	// Delete frees the name; history stays readable.
	if err := db.DeleteChain(ctx, ch.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteChain(ctx, ch.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := db.GetChain(ctx, ch.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted chain still visible: %v", err)
	}
	if _, err := db.SaveChain(ctx, ch.ID, 3, doc, ""); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("save to deleted chain: %v", err)
	}
	if _, total, _ := db.ListChains(ctx, store.ChainFilter{}); total != 1 {
		t.Fatalf("deleted chain listed")
	}
	if vs, err := db.ListVersions(ctx, ch.ID); err != nil || len(vs) != 3 {
		t.Fatalf("history of deleted chain: %v %v", vs, err)
	}
	again, err := db.CreateChain(ctx, sampleChain("Fetch Report", 1), "reuse")
	if err != nil {
		t.Fatalf("name not reusable after delete: %v", err)
	}
	if again.ID == ch.ID {
		t.Fatal("same id")
	}
	res, err := db.ResolveChain(ctx, "Fetch Report")
	if err != nil || len(res.Nodes) != 1 {
		t.Fatalf("resolve: %v %v", res, err)
	}
}

func TestRunsKeysetPaging(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	ch, _ := db.CreateChain(ctx, sampleChain("c", 1), "")
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := 0; i < 25; i++ {
		// Several runs share a start time, to exercise the id tie-break.
		r := store.Run{ID: fmt.Sprintf("run-%02d", i), ChainID: ch.ID, ChainVersion: 1, Input: map[string]any{"i": float64(i)},
			Started: base.Add(time.Duration(i/3) * time.Second)}
		if _, err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateRun(ctx, store.Run{ID: "adhoc", Kind: store.KindA2E, Started: base}); err != nil {
		t.Fatal(err)
	}
	// Expected order: started DESC, id ASC.
	for g := 8; g >= 0; g-- {
		for i := g * 3; i < g*3+3 && i < 25; i++ {
			want = append(want, fmt.Sprintf("run-%02d", i))
		}
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		runs, next, err := db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 7, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range runs {
			got = append(got, r.ID)
			if r.Status != engine.StatusRunning || r.Kind != store.KindRun || r.ChainVersion != 1 {
				t.Fatalf("run %+v", r)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !reflect.DeepEqual(got, want) || pages != 4 {
		t.Fatalf("paged %d pages:\n%v\nwant\n%v", pages, got, want)
	}
	all, next, _ := db.ListRuns(ctx, store.RunFilter{Limit: 100})
	if len(all) != 26 || next != "" {
		t.Fatalf("all runs: %d %q", len(all), next)
	}
	if _, _, err := db.ListRuns(ctx, store.RunFilter{Before: "!!"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}
	r, err := db.GetRun(ctx, "run-05")
	if err != nil {
		t.Fatal(err)
	}
	if r.Input["i"] != float64(5) || r.ChainID != ch.ID || !r.Started.Equal(base.Add(time.Second)) {
		t.Fatalf("get run %+v", r)
	}
	if _, err := db.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
}

func mkEvents(runID string, from, n int) []engine.Event {
	out := make([]engine.Event, n)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		seq := int64(from + i)
		item := i
		out[i] = engine.Event{RunID: runID, Seq: seq, NodeID: fmt.Sprintf("n%d", i%10), Phase: engine.PhaseDone,
			Output: map[string]any{"v": float64(seq)}, Attempt: 1, Item: &item, Edges: []string{"e1"}, Time: t0.Add(time.Duration(seq) * time.Millisecond)}
	}
	return out
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	evs := mkEvents("r1", 1, 200)
	if err := db.AppendEvents(ctx, evs[:130]); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, evs[130:]); err != nil {
		t.Fatal(err)
	}
	// A duplicate seq is refused, and nothing of that batch is written.
	dup := append(mkEvents("r1", 201, 3), evs[0])
	if err := db.AppendEvents(ctx, dup); err == nil {
		t.Fatal("duplicate seq accepted")
	}
	if n, _ := db.MaxSeq(ctx, "r1"); n != 200 {
		t.Fatalf("max seq %d", n)
	}
	if n, _ := db.MaxSeq(ctx, "other"); n != 0 {
		t.Fatalf("max seq of unknown run %d", n)
	}
	got, err := db.EventsAfter(ctx, "r1", 150, 20)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, got, evs[150:170])
	got, _ = db.EventsAfter(ctx, "r1", 195, 0)
	if len(got) != 5 || got[0].Seq != 196 {
		t.Fatalf("tail %+v", got)
	}
	if !got[0].Time.Equal(evs[195].Time) {
		t.Fatal("time not round-tripped")
	}
	// The run row was created for the events.
	if r, err := db.GetRun(ctx, "r1"); err != nil || r.Status != engine.StatusRunning {
		t.Fatalf("run row %v %v", r, err)
	}
}

// TestEventsLargeAndInterleaved: events of several runs in one write, some
// with outputs of 100 KB, are stored in bounded rows and read back whole from
// any seq; a write whose events go backwards for a run is refused whole.
func TestEventsLargeAndInterleaved(t *testing.T) {
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
	if rows < 4 || largest > maxBatchBody+110<<10 {
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

func TestEventWriter(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	w := NewEventWriter(db, store.EventWriterOptions{})
	const runs, per = 4, 3000
	var wg sync.WaitGroup
	for r := 0; r < runs; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range mkEvents(fmt.Sprintf("run%d", r), 1, per) {
				w.Emit(e)
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("run%d", r)
		if n, _ := db.MaxSeq(ctx, id); n != per {
			t.Fatalf("%s: max seq %d after Flush", id, n)
		}
		got, _ := db.EventsAfter(ctx, id, 0, per+10)
		if len(got) != per {
			t.Fatalf("%s: %d events", id, len(got))
		}
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, e.Seq)
			}
		}
	}
	// A single event is written within the interval without a Flush.
	w.Emit(mkEvents("solo", 1, 1)[0])
	deadline := time.Now().Add(2 * time.Second)
	for {
		if n, _ := db.MaxSeq(ctx, "solo"); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lone event not written by the timer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Close writes what is buffered.
	for _, e := range mkEvents("last", 1, 10) {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.MaxSeq(ctx, "last"); n != 10 {
		t.Fatalf("close lost events: %d", n)
	}
	// After Close, Emit stores directly.
	w.Emit(mkEvents("last", 11, 1)[0])
	if n, _ := db.MaxSeq(ctx, "last"); n != 11 {
		t.Fatalf("late event: %d", n)
	}
}

func TestEventWriterFailure(t *testing.T) {
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

// checkpointLog is a run's log in the batches the engine would append.
func checkpointLog(runID string) [][]engine.Checkpoint {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	chain := sampleChain("cp chain", 3)
	return [][]engine.Checkpoint{
		{{RunID: runID, Kind: engine.CheckpointStart, Time: t0, Start: &engine.StartRecord{Chain: chain, Input: map[string]any{"q": "x"}}}},
		{
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 2, Time: t0.Add(time.Second), Node: &engine.NodeRecord{
				NodeID: "n0", Status: engine.PhaseDone, Input: map[string]any{"text": "a"}, Output: map[string]any{"echo": "a"},
				Attempts: 1, Started: t0, Ended: t0.Add(time.Second), State: map[string]any{"k": "v"}, Fired: []string{"e1"}}},
			{RunID: runID, Kind: engine.CheckpointPause, EventSeq: 3, Time: t0.Add(2 * time.Second), Pause: &engine.PauseRecord{
				NodeID: "n1", Prompt: "approve?", Input: map[string]any{"text": "b"}}},
			{RunID: runID, Kind: engine.CheckpointEnd, EventSeq: 3, Time: t0.Add(2 * time.Second), End: &engine.EndRecord{
				Status: engine.StatusPaused, NodesRun: 1}},
		},
		{{RunID: runID, Kind: engine.CheckpointResume, EventSeq: 3, Time: t0.Add(time.Hour), Resume: &engine.ResumeRecord{
			NodeID: "n1", Value: "yes", HasValue: true}}},
		{
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 5, Time: t0.Add(time.Hour + time.Second), Node: &engine.NodeRecord{
				NodeID: "n1", Status: engine.PhaseDone, Output: "yes", Attempts: 1, Started: t0.Add(time.Hour), Ended: t0.Add(time.Hour + time.Second)}},
			{RunID: runID, Kind: engine.CheckpointNode, EventSeq: 7, Time: t0.Add(time.Hour + 2*time.Second), Node: &engine.NodeRecord{
				NodeID: "n2", Status: engine.PhaseError, Error: "boom", ErrorCode: "chain_node_error", Attempts: 3, Reason: "", Fatal: true}},
			{RunID: runID, Kind: engine.CheckpointEnd, EventSeq: 7, Time: t0.Add(time.Hour + 3*time.Second), End: &engine.EndRecord{
				Status: engine.StatusFailed, Error: &engine.RunError{Code: engine.CodeNodeError, Message: "node \"n2\" failed: boom", NodeID: "n2"},
				Final: map[string]any{"last": "yes"}, NodesRun: 3}},
		},
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	mem := engine.NewMemoryCheckpointer()
	const id = "cp-run"
	batches := checkpointLog(id)

	// Unknown run: both refuse the same way.
	for _, cp := range []engine.Checkpointer{mem, db} {
		var ce *engine.ChainCheckpointError
		if _, err := cp.Load(ctx, id); !errors.As(err, &ce) {
			t.Fatalf("%T load unknown: %v", cp, err)
		}
		if _, err := cp.ClaimInterrupt(ctx, id); !errors.As(err, &ce) {
			t.Fatalf("%T claim unknown: %v", cp, err)
		}
	}
	for i, b := range batches {
		for _, cp := range []engine.Checkpointer{mem, db} {
			if err := cp.Append(ctx, id, b); err != nil {
				t.Fatal(err)
			}
		}
		if i == 1 {
			// Paused: the run row says so, and the node shows the prompt.
			r, err := db.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != engine.StatusPaused || len(r.Nodes) != 2 || r.Nodes[1].Status != engine.PhasePaused || r.Nodes[1].Prompt != "approve?" {
				t.Fatalf("paused run %+v", r)
			}
			for _, cp := range []engine.Checkpointer{mem, db} {
				n, err := cp.ClaimInterrupt(ctx, id)
				if err != nil || n != "n1" {
					t.Fatalf("%T claim: %q %v", cp, n, err)
				}
				_, err = cp.ClaimInterrupt(ctx, id)
				if !errors.Is(err, engine.ErrAlreadyResumed) {
					t.Fatalf("%T second claim: %v", cp, err)
				}
			}
		}
	}
	ml, _ := mem.Load(ctx, id)
	dl, err := db.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, dl, ml)
	if len(dl) != 8 {
		t.Fatalf("%d entries", len(dl))
	}

	r, err := db.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusFailed || r.Error == nil || r.Error.Code != engine.CodeNodeError || r.Error.NodeID != "n2" ||
		r.NodesRun != 3 || r.ChainName != "cp chain" || r.Input["q"] != "x" || r.Ended.IsZero() || r.DurationMS != 3603000 {
		t.Fatalf("ended run %+v", r)
	}
	jsonEqual(t, r.FinalOutput, map[string]any{"last": "yes"})
	jsonEqual(t, r.Outputs, map[string]any{"n0": map[string]any{"echo": "a"}, "n1": "yes"})
	if len(r.Nodes) != 3 {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	n0, n1, n2 := r.Nodes[0], r.Nodes[1], r.Nodes[2]
	if n0.NodeID != "n0" || n0.Status != engine.PhaseDone || n0.Attempts != 1 || !n0.Ended.Equal(n0.Started.Add(time.Second)) {
		t.Fatalf("n0 %+v", n0)
	}
	jsonEqual(t, n0.Input, map[string]any{"text": "a"})
	if n1.Status != engine.PhaseDone || n1.Output != "yes" || n1.Prompt != nil {
		t.Fatalf("n1 %+v", n1)
	}
	if n2.Status != engine.PhaseError || n2.Error != "boom" || n2.Attempts != 3 {
		t.Fatalf("n2 %+v", n2)
	}
}

func TestEndClearsInterrupts(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	mem := engine.NewMemoryCheckpointer()
	b := checkpointLog("r")
	// Two pauses, then the run is cancelled: nothing is left to claim.
	extra := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointPause, Pause: &engine.PauseRecord{NodeID: "n2"}}
	cancel := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, End: &engine.EndRecord{Status: engine.StatusCancelled}}
	for _, cp := range []engine.Checkpointer{mem, db} {
		cp.Append(ctx, "r", b[0])
		cp.Append(ctx, "r", append(append([]engine.Checkpoint{}, b[1][:2]...), extra))
		cp.Append(ctx, "r", []engine.Checkpoint{b[1][2]})
	}
	for _, cp := range []engine.Checkpointer{mem, db} {
		if n, err := cp.ClaimInterrupt(ctx, "r"); err != nil || n != "n1" {
			t.Fatalf("%T: oldest pause first: %q %v", cp, n, err)
		}
		cp.Append(ctx, "r", []engine.Checkpoint{cancel})
		if _, err := cp.ClaimInterrupt(ctx, "r"); !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("%T: claim after cancel: %v", cp, err)
		}
	}
}

func TestClaimInterruptConcurrent(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	b := checkpointLog("race")
	for _, batch := range b[:2] {
		if err := db.Append(ctx, "race", batch); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, already := 0, 0
	start := make(chan struct{})
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			n, err := db.ClaimInterrupt(ctx, "race")
			mu.Lock()
			defer mu.Unlock()
			var ae *engine.AlreadyResumedError
			switch {
			case err == nil && n == "n1":
				wins++
			case errors.As(err, &ae):
				already++
			default:
				t.Errorf("claim: %q %v", n, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || already != 19 {
		t.Fatalf("wins %d, already resumed %d", wins, already)
	}
}

func TestClaimInterruptTwoProcessesWorth(t *testing.T) {
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
			_, results[i] = h.ClaimInterrupt(ctx, "x")
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

func TestRecoverInterrupted(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	b := checkpointLog("paused")
	db.Append(ctx, "paused", b[0])
	db.Append(ctx, "paused", b[1])
	// A run that was mid-flight.
	db.Append(ctx, "mid", checkpointLog("mid")[0])
	db.Append(ctx, "mid", checkpointLog("mid")[1][:1])
	db.AppendEvents(ctx, mkEvents("mid", 1, 4))
	// A finished one.
	for _, bb := range checkpointLog("done") {
		db.Append(ctx, "done", bb)
	}
	n, err := db.RecoverInterrupted(ctx)
	if err != nil || n != 1 {
		t.Fatalf("recovered %d, %v", n, err)
	}
	r, _ := db.GetRun(ctx, "mid")
	if r.Status != engine.StatusFailed || r.Error == nil || r.Error.Code != store.CodeInterruptedByRestart ||
		!strings.Contains(r.Error.Message, "resume it to continue") || r.NodesRun != 1 {
		t.Fatalf("recovered run %+v", r)
	}
	log, _ := db.Load(ctx, "mid")
	last := log[len(log)-1]
	if last.Kind != engine.CheckpointEnd || last.End.Status != engine.StatusFailed || last.EventSeq != 4 || last.End.Error.Code != store.CodeInterruptedByRestart {
		t.Fatalf("end entry %+v", last)
	}
	if r, _ := db.GetRun(ctx, "paused"); r.Status != engine.StatusPaused {
		t.Fatalf("paused run touched: %s", r.Status)
	}
	if n, err := db.ClaimInterrupt(ctx, "paused"); err != nil || n != "n1" {
		t.Fatalf("paused run's interrupt: %q %v", n, err)
	}
	if r, _ := db.GetRun(ctx, "done"); r.Status != engine.StatusFailed || r.Error.Code != engine.CodeNodeError {
		t.Fatalf("finished run touched: %+v", r)
	}
	if n, _ := db.RecoverInterrupted(ctx); n != 0 {
		t.Fatalf("second recovery marked %d", n)
	}
}

func TestBackup(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	ch, _ := db.CreateChain(ctx, sampleChain("b", 5), "")
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

func TestPruneRuns(t *testing.T) {
	ctx := context.Background()
	db, _ := openTest(t)
	now := time.Now()
	a, _ := db.CreateChain(ctx, sampleChain("a", 1), "")
	b, _ := db.CreateChain(ctx, sampleChain("b", 1), "")
	mk := func(id, chain string, age time.Duration, status engine.RunStatus) {
		t.Helper()
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: chain, Status: status, Started: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
		db.AppendEvents(ctx, mkEvents(id, 1, 3))
		for _, bb := range checkpointLog(id)[:2] {
			db.Append(ctx, id, bb)
		}
		db.Append(ctx, id, []engine.Checkpoint{{RunID: id, Kind: engine.CheckpointEnd, End: &engine.EndRecord{Status: status}}})
	}
	for i := 0; i < 5; i++ {
		mk(fmt.Sprintf("a%d", i), a.ID, time.Duration(i)*24*time.Hour, engine.StatusCompleted)
	}
	mk("b0", b.ID, 10*24*time.Hour, engine.StatusCompleted)
	mk("b1", b.ID, 11*24*time.Hour, engine.StatusPaused)
	mk("adhoc", "", 30*24*time.Hour, engine.StatusFailed)

	if _, err := db.PruneRuns(ctx, store.Retention{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("unlimited prune: %v", err)
	}
	// Older than 2.5 days, but keep the newest 4 of each chain: only a4 goes
	// (a3 is the 4th newest of a; b and the ad-hoc runs are within 4).
	n, err := db.PruneRuns(ctx, store.Retention{OlderThan: 60 * time.Hour, KeepPerChain: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("pruned %d", n)
	}
	// Older than 5 days: b0 and adhoc go; b1 is paused and stays.
	if n, err = db.PruneRuns(ctx, store.Retention{OlderThan: 5 * 24 * time.Hour}); err != nil || n != 2 {
		t.Fatalf("age prune: %d %v", n, err)
	}
	left, _, _ := db.ListRuns(ctx, store.RunFilter{Limit: 100})
	var ids []string
	for _, r := range left {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "a0,a1,a2,a3,b1" {
		t.Fatalf("left %v", ids)
	}
	for _, tbl := range []string{"event_batches", "checkpoints", "run_interrupts"} {
		var c int
		if err := db.r.QueryRow(`SELECT COUNT(*) FROM ` + tbl + ` WHERE run_id IN ('a4', 'adhoc', 'b0')`).Scan(&c); err != nil {
			t.Fatal(err)
		}
		if c != 0 {
			t.Fatalf("%s rows of pruned runs left: %d", tbl, c)
		}
	}
	n, _ = db.PruneRuns(ctx, store.Retention{KeepPerChain: 1})
	if n != 3 { // a1, a2, a3
		t.Fatalf("keep-1 pruned %d", n)
	}
	if _, err := db.GetChain(ctx, a.ID); err != nil {
		t.Fatal("chain pruned")
	}
	integrityCheck(t, db)
}
