package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/doccache"
	"github.com/chainstudio/studio/store/sqlstore"
)

// tee sends events to the writer and then to another sink, and flushes the
// writer. (engine.MultiSink would do, but the engine's flushers() helper only
// finds a Flusher at the top level, not inside a MultiSink.)
type tee struct {
	w     *EventWriter
	extra engine.EventSink
}

func (t tee) Emit(e engine.Event) {
	t.w.Emit(e)
	t.extra.Emit(e)
}

func (t tee) Flush(ctx context.Context) error { return t.w.Flush(ctx) }

func newPersistentEngine(db *DB, w *EventWriter, extra engine.EventSink) *engine.Engine {
	var sink engine.EventSink = w
	if extra != nil {
		sink = tee{w, extra}
	}
	return engine.New(engine.Options{Registry: testTools(), Checkpointer: db, Sink: sink, Chains: db.ResolveChain})
}

func TestEnginePauseResumePersisted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, path := openTest(t)
	w := NewEventWriter(db, store.EventWriterOptions{})
	eng := newPersistentEngine(db, w, nil)

	doc := &chain.Chain{Name: "approve", EntryNode: "a", Nodes: []chain.Node{
		{ID: "a", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 1.0}},
		{ID: "ask", Kind: chain.KindInterrupt, Config: map[string]any{"prompt": "ok?"}},
		{ID: "b", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 2.0}},
	}, Edges: []chain.Edge{{ID: "e1", Source: "a", Target: "ask"}, {ID: "e2", Source: "ask", Target: "b"}}}
	const id = "run-approve"
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusPaused {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	r, _ := db.GetRun(ctx, id)
	if r.Status != chain.StatusPaused {
		t.Fatalf("stored status %s", r.Status)
	}
	// Restart between pause and resume: a new process resumes from the file.
	w.Close()
	db.Close()
	db2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	if n, _ := db2.RecoverInterrupted(ctx); n != 0 {
		t.Fatalf("paused run recovered as interrupted")
	}
	w2 := NewEventWriter(db2, store.EventWriterOptions{})
	defer w2.Close()
	eng2 := newPersistentEngine(db2, w2, nil)
	max, _ := db2.MaxSeq(ctx, id)
	res, err = eng2.Resume(ctx, id, &engine.ResumeValue{Value: "yes"}, nil, engine.ResumeOptions{NextSeq: max + 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCompleted {
		t.Fatalf("resumed status %s %+v", res.Status, res.Error)
	}
	// A second resume of the same pause is refused.
	if _, err := eng2.Resume(ctx, id, &engine.ResumeValue{Value: "again"}, nil, engine.ResumeOptions{}); err == nil {
		t.Fatal("second resume accepted")
	}
	r, _ = db2.GetRun(ctx, id)
	if r.Status != chain.StatusCompleted {
		t.Fatalf("stored status after resume %s", r.Status)
	}
	evs, _ := db2.EventsAfter(ctx, id, 0, 1000)
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

// TestMigrateFromSchema1 fills a schema-1 database the way the schema-1
// store did (a chain with versions, a finished run and a paused one, with
// their run_nodes rows, events, checkpoint logs and pending interrupt),
// reopens the file with the latest schema, and finds everything: chain
// versions, run rows, node results (now folded from the log), events, the
// checkpoint log, and a pause that still resumes.
func TestMigrateFromSchema1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := t.TempDir() + "/v1.db"
	db, err := Open(ctx, path, Options{schemaUpTo: 1})
	if err != nil {
		t.Fatal(err)
	}
	var v int
	db.r.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&v)
	if v != 1 {
		t.Fatalf("built schema %d, want 1", v)
	}
	doc := linearChain("old line", "echo", 5, func(i int) map[string]any { return map[string]any{"i": float64(i)} })
	ch, err := createChainOldSchema(ctx, db, doc, "made under schema 1")
	if err != nil {
		t.Fatal(err)
	}
	approval := &chain.Chain{Name: "approve", EntryNode: "a", Nodes: []chain.Node{
		{ID: "a", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 1.0}},
		{ID: "ask", Kind: chain.KindInterrupt, Config: map[string]any{"prompt": "ok?"}},
		{ID: "b", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 2.0}},
	}, Edges: []chain.Edge{{ID: "e1", Source: "a", Target: "ask"}, {ID: "e2", Source: "ask", Target: "b"}}}

	// Run both chains in memory, then store what they produced in the
	// schema-1 tables, row for row as the schema-1 store wrote them.
	mem := engine.NewMemoryCheckpointer()
	sink := &engine.MemorySink{}
	eng := engine.New(engine.Options{Registry: testTools(), Checkpointer: mem, Sink: sink})
	if res, err := eng.Run(ctx, enginetest.PlanOf(eng, ch.Doc), nil, engine.RunOptions{RunID: "done-run"}); err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("run: %v", err)
	}
	if res, err := eng.Run(ctx, enginetest.PlanOf(eng, approval), nil, engine.RunOptions{RunID: "paused-run"}); err != nil || res.Status != chain.StatusPaused {
		t.Fatalf("approval run: %v", err)
	}
	err = db.writeTx(ctx, func(tx *Tx) error {
		for _, run := range []struct{ id, status, chainID string }{{"done-run", "completed", ch.ID}, {"paused-run", "paused", ""}} {
			if _, err := tx.Exec(`INSERT INTO runs (id, chain_id, chain_version, status, started_at) VALUES (?, NULLIF(?, ''), 1, ?, 1)`, run.id, run.chainID, run.status); err != nil {
				return err
			}
			log, err := mem.Load(ctx, run.id)
			if err != nil {
				return err
			}
			for i, cp := range log {
				b, _ := json.Marshal(cp)
				if _, err := tx.Exec(`INSERT INTO checkpoints (run_id, n, kind, event_seq, created_at, body) VALUES (?, ?, ?, ?, 1, ?)`, run.id, i+1, cp.Kind, cp.EventSeq, string(b)); err != nil {
					return err
				}
				if cp.Node != nil {
					if _, err := tx.Exec(`INSERT INTO run_nodes (run_id, node_id, ord, status) VALUES (?, ?, ?, ?)`, run.id, cp.Node.NodeID, i+1, cp.Node.Status); err != nil {
						return err
					}
				}
				if cp.Pause != nil {
					if _, err := tx.Exec(`INSERT INTO run_interrupts (run_id, n, node_id, created_at) VALUES (?, ?, ?, 1)`, run.id, i+1, cp.Pause.NodeID); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var eventsBefore []engine.Event
	err = db.writeTx(ctx, func(tx *Tx) error {
		for _, e := range sink.Events() {
			b, _ := json.Marshal(e)
			if _, err := tx.Exec(`INSERT INTO events (run_id, seq, node_id, phase, created_at, body) VALUES (?, ?, ?, ?, 1, ?)`, e.RunID, e.Seq, e.NodeID, e.Phase, string(b)); err != nil {
				return err
			}
			if e.RunID == "done-run" {
				eventsBefore = append(eventsBefore, e)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	logBefore, _ := mem.Load(ctx, "done-run")
	db.Close()

	db2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	db2.r.QueryRow(`SELECT MAX(version) FROM schema_version`).Scan(&v)
	if v != SchemaVersion() {
		t.Fatalf("migrated to %d, want %d", v, SchemaVersion())
	}
	var withoutRowid, oldTables int
	db2.r.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name = 'checkpoints' AND sql LIKE '%WITHOUT ROWID%'`).Scan(&withoutRowid)
	db2.r.QueryRow(`SELECT COUNT(*) FROM sqlite_schema WHERE name IN ('run_nodes', 'events')`).Scan(&oldTables)
	if withoutRowid != 0 || oldTables != 0 {
		t.Fatalf("after migration 2: checkpoints WITHOUT ROWID %d, %d of run_nodes and events left", withoutRowid, oldTables)
	}
	var ok string
	db2.r.QueryRow(`PRAGMA integrity_check`).Scan(&ok)
	var fkProblems int
	db2.r.QueryRow(`SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&fkProblems)
	if ok != "ok" || fkProblems != 0 {
		t.Fatalf("integrity %q, %d foreign key problems", ok, fkProblems)
	}
	got, err := db2.GetChain(ctx, ch.ID)
	if err != nil || got.Doc.Name != "old line" || len(got.Doc.Nodes) != 5 {
		t.Fatalf("chain after migration: %v", err)
	}
	r, err := db2.GetRun(ctx, "done-run")
	if err != nil || r.Status != chain.StatusCompleted || len(r.Nodes) != 5 {
		t.Fatalf("run after migration: %v %+v", err, r)
	}
	for i, n := range r.Nodes {
		if n.NodeID != fmt.Sprintf("n%d", i) || n.Status != engine.PhaseDone || n.Output.(map[string]any)["i"] != float64(i) {
			t.Fatalf("node %d after migration: %+v", i, n)
		}
	}
	if one, err := db2.GetRunNode(ctx, "done-run", "n3"); err != nil || one == nil || one.Output.(map[string]any)["i"] != 3.0 {
		t.Fatalf("one node after migration: %v %+v", err, one)
	}
	eventsAfter, _ := db2.EventsAfter(ctx, "done-run", 0, 1000)
	jsonEqual(t, eventsAfter, eventsBefore)
	if tail, _ := db2.EventsAfter(ctx, "done-run", 7, 2); len(tail) != 2 || tail[0].Seq != 8 || tail[1].Seq != 9 {
		t.Fatalf("events after 7, limit 2: %+v", tail)
	}
	logAfter, _ := db2.Load(ctx, "done-run")
	jsonEqual(t, logAfter, logBefore)

	w2 := NewEventWriter(db2, store.EventWriterOptions{})
	defer w2.Close()
	eng2 := newPersistentEngine(db2, w2, nil)
	pr, _ := db2.GetRun(ctx, "paused-run")
	if len(pr.Nodes) != 2 || pr.Nodes[1].NodeID != "ask" || pr.Nodes[1].Status != engine.PhasePaused || pr.Nodes[1].Prompt != "ok?" {
		t.Fatalf("paused run's nodes after migration: %+v", pr.Nodes)
	}
	max, _ := db2.MaxSeq(ctx, "paused-run")
	res, err := eng2.Resume(ctx, "paused-run", &engine.ResumeValue{Value: "yes"}, nil, engine.ResumeOptions{NextSeq: max + 1})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("resume after migration: %v %+v", err, res)
	}
	if pr, _ = db2.GetRun(ctx, "paused-run"); len(pr.Nodes) != 3 || pr.Nodes[1].Status != engine.PhaseDone || pr.Nodes[2].Status != engine.PhaseDone {
		t.Fatalf("resumed run's nodes: %+v", pr.Nodes)
	}
}

// TestRunChainsStoredOnce: runs of one chain share one stored copy of it;
// each run's log still loads with its chain; pruning removes a copy only
// with the last run that names it; a missing copy is a clear error.
func TestRunChainsStoredOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	w := NewEventWriter(db, store.EventWriterOptions{})
	defer w.Close()
	eng := newPersistentEngine(db, w, nil)
	doc := linearChain("shared", "echo", 50, func(i int) map[string]any { return map[string]any{"i": float64(i)} })
	other := linearChain("other", "echo", 3, func(i int) map[string]any { return map[string]any{"i": float64(i)} })
	for _, run := range []struct {
		id  string
		doc *chain.Chain
	}{{"r1", doc}, {"r2", doc}, {"r3", other}} {
		if res, err := eng.Run(ctx, enginetest.PlanOf(eng, run.doc), nil, engine.RunOptions{RunID: run.id}); err != nil || res.Status != chain.StatusCompleted {
			t.Fatalf("run %s: %v", run.id, err)
		}
	}
	count := func() int {
		var n int
		if err := db.r.QueryRow(`SELECT COUNT(*) FROM run_chains`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("%d stored chains for 3 runs of 2 chains", n)
	}
	var body string
	db.r.QueryRow(`SELECT body FROM checkpoints WHERE run_id = 'r2' AND kind = 'start'`).Scan(&body)
	if strings.Contains(body, `"n49"`) || !strings.Contains(body, `"chain_sha256":"`) {
		t.Fatalf("start entry still carries the chain: %.200s", body)
	}
	for _, id := range []string{"r1", "r2"} {
		log, err := db.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if log[0].Kind != engine.CheckpointStart || log[0].Start.Chain == nil {
			t.Fatalf("run %s: start entry without its chain", id)
		}
		jsonEqual(t, log[0].Start.Chain, doc)
	}
	// r1 and r3 go (older than the cut-off); r2 still names the shared chain.
	db.w.Exec(`UPDATE runs SET started_at = 0, status = 'completed' WHERE id IN ('r1', 'r3')`)
	if n, err := db.PruneRuns(ctx, store.Retention{OlderThan: time.Hour}); err != nil || n != 2 {
		t.Fatalf("pruned %d: %v", n, err)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d stored chains after pruning the other chain's only run", n)
	}
	if _, err := db.Load(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	// A log whose chain is gone says so, naming the entry.
	db.w.Exec(`DELETE FROM run_chains`)
	db.Store = sqlstore.New(dialect{db}, db.r, doccache.New(0), db.now) // an empty document cache
	_, err := db.Load(ctx, "r2")
	var ce *engine.ChainCheckpointError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "entry 1: its chain (sha256 ") || !strings.Contains(err.Error(), ") is missing") {
		t.Fatalf("load without the chain: %v", err)
	}
}
