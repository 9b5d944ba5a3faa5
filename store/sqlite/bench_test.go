package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

// Run with: go test -run '^$' -bench . -benchtime 3x ./store/sqlite   (or -benchtime 1s)

func benchEvents(runID string, from, n int) []engine.Event {
	evs := mkEvents(runID, from, n)
	for i := range evs {
		evs[i].Output = map[string]any{"text": "a typical tool output of a few dozen bytes", "n": float64(i)}
	}
	return evs
}

// BenchmarkAppendEvents: events per second through AppendEvents in batches
// of 256, into a file database.
func BenchmarkAppendEvents(b *testing.B) {
	ctx := context.Background()
	db, _ := openTest(b)
	const batch = 256
	evs := benchEvents("bench", 1, batch)
	b.ResetTimer()
	seq := 1
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for j := range evs {
			evs[j].Seq = int64(seq + j)
		}
		seq += batch
		if err := db.AppendEvents(ctx, evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkEventWriter: events per second through EventWriter (Emit from the
// run, background batching, Flush at the end), into a file database.
func BenchmarkEventWriter(b *testing.B) {
	ctx := context.Background()
	db, _ := openTest(b)
	w := NewEventWriter(db, store.EventWriterOptions{})
	defer w.Close()
	const perOp = 10_000
	evs := benchEvents("bench", 1, perOp)
	b.ResetTimer()
	start := time.Now()
	seq := int64(0)
	for i := 0; i < b.N; i++ {
		for _, e := range evs {
			seq++
			e.Seq = seq
			w.Emit(e)
		}
		if err := w.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*perOp)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkGetChain2000 reads a chain of 2,000 nodes (~490 KB of JSON):
// Cold decodes the document every time (cache off); Warm serves it from the
// decoded-document cache (a deep copy).
func BenchmarkGetChain2000Cold(b *testing.B) { benchGetChain2000(b, -1) }
func BenchmarkGetChain2000Warm(b *testing.B) { benchGetChain2000(b, 0) }

func benchGetChain2000(b *testing.B, cache int) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"), Options{DocCacheSize: cache})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	doc := sampleChain("big", 2000)
	for i := range doc.Nodes {
		doc.Nodes[i].InputMap = map[string]string{"prev": "n0.output"}
		doc.Nodes[i].Description = "a node with a short description"
	}
	ch, err := db.CreateChain(ctx, doc, "", true)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := db.GetChain(ctx, ch.ID)
		if err != nil || len(got.Doc.Nodes) != 2000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkListRuns10k: the first page (50) of a chain with 10,000 runs.
func BenchmarkListRuns10k(b *testing.B) {
	ctx := context.Background()
	db, _ := openTest(b)
	ch, _ := db.CreateChain(ctx, sampleChain("many runs", 3), "", true)
	other, _ := db.CreateChain(ctx, sampleChain("other", 3), "", true)
	t0 := time.Now().Add(-time.Hour)
	err := db.writeTx(ctx, func(tx *Tx) error {
		for i := 0; i < 10_000; i++ {
			for _, c := range []string{ch.ID, other.ID} {
				if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, chain_id, chain_version, kind, input, status, error, final_output, nodes_run, started_at, ended_at, duration_ms)
VALUES (?, ?, 1, 'run', '{"q":"some input"}', 'completed', NULL, '{"answer":"some output"}', 3, ?, ?, 120)`,
					fmt.Sprintf("%s-%05d", c[:8], i), c, sqlstore.Micros(t0.Add(time.Duration(i)*time.Millisecond)), sqlstore.Micros(t0.Add(time.Duration(i)*time.Millisecond+120*time.Millisecond))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runs, next, err := db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 50})
		if err != nil || len(runs) != 50 || next == "" {
			b.Fatal(err)
		}
	}
}

// benchRun1000 runs a 1,000-node chain of echo nodes per op; cond, when
// set, is the condition of every edge.
func benchRun1000(b *testing.B, persisted bool, cond string) {
	ctx := context.Background()
	doc := linearChain("bench1000", "echo", 1000, func(i int) map[string]any { return map[string]any{"i": float64(i), "text": "hello"} })
	for k := range doc.Edges {
		doc.Edges[k].Condition = cond
	}
	var eng *engine.Engine
	var db *DB
	if persisted {
		db, _ = openTest(b)
		w := NewEventWriter(db, store.EventWriterOptions{})
		defer w.Close()
		eng = newPersistentEngine(db, w, nil)
	} else {
		eng = engine.New(engine.Options{Registry: testTools(), Checkpointer: engine.NewMemoryCheckpointer(), Sink: &engine.MemorySink{}})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: fmt.Sprintf("run-%d", i)})
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("%v %v", err, res.Status)
		}
	}
	if db != nil {
		// What a run costs on disk: the database's pages per run (the
		// events, the checkpoint log, the run row; the chain once).
		var pages, size int64
		db.r.QueryRow(`PRAGMA page_count`).Scan(&pages)
		db.r.QueryRow(`PRAGMA page_size`).Scan(&size)
		b.ReportMetric(float64(pages*size)/float64(b.N)/1024, "KB/run")
	}
}

// BenchmarkRun1000Memory vs BenchmarkRun1000Persisted: the cost of persisting
// every event and checkpoint (target: persisted ≤ 3× memory).
func BenchmarkRun1000Memory(b *testing.B)    { benchRun1000(b, false, "") }
func BenchmarkRun1000Persisted(b *testing.B) { benchRun1000(b, true, "") }

// BenchmarkRun1000CondMemory vs BenchmarkRun1000CondPersisted: a condition
// on every edge, so every node records a decision with the value its
// condition read, in its event and its checkpoint (target: persisted ≤ 3×
// memory).
func BenchmarkRun1000CondMemory(b *testing.B)    { benchRun1000(b, false, "output.i >= `0`") }
func BenchmarkRun1000CondPersisted(b *testing.B) { benchRun1000(b, true, "output.i >= `0`") }

// BenchmarkGetRun1000: reading a finished 1,000-node run with every node's
// result, folded from its checkpoint log.
func BenchmarkGetRun1000(b *testing.B) {
	ctx := context.Background()
	doc := linearChain("bench1000", "echo", 1000, func(i int) map[string]any { return map[string]any{"i": float64(i), "text": "hello"} })
	db, _ := openTest(b)
	w := NewEventWriter(db, store.EventWriterOptions{})
	defer w.Close()
	eng := newPersistentEngine(db, w, nil)
	if res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: "big"}); err != nil || res.Status != chain.StatusCompleted {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := db.GetRun(ctx, "big")
		if err != nil || len(r.Nodes) != 1000 || len(r.Outputs) != 1000 {
			b.Fatal(err)
		}
	}
}
