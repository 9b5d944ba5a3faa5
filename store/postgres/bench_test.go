package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/storetest"
)

// The SQLite backend's benchmarks, on PostgreSQL (a throwaway schema on
// STUDIO_TEST_PG):
//
//	go test -run '^$' -bench . -benchtime 3x ./store/postgres

func openBench(b *testing.B) *DB {
	b.Helper()
	return openTest(b, Options{})
}

// BenchmarkAppendEvents: events per second through AppendEvents in batches
// of 256.
func BenchmarkAppendEvents(b *testing.B) {
	ctx := context.Background()
	db := openBench(b)
	const batch = 256
	evs := storetest.Events("bench", 1, batch)
	for i := range evs {
		evs[i].Output = map[string]any{"text": "a typical tool output of a few dozen bytes", "n": float64(i)}
	}
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

// benchRun1000 runs a 1,000-node chain of echo nodes per op, in memory or
// persisted (every event and checkpoint) in PostgreSQL; leased, each run is
// taken first, as a worker takes it, so every write checks its epoch.
func benchRun1000(b *testing.B, persisted, leased bool) {
	ctx := context.Background()
	doc := storetest.LinearChain("bench1000", "echo", 1000, func(i int) map[string]any { return map[string]any{"i": float64(i), "text": "hello"} })
	var eng *engine.Engine
	var db *DB
	if persisted {
		db = openBench(b)
		w := NewEventWriter(db, store.EventWriterOptions{})
		defer w.Close()
		eng = engine.New(engine.Options{Registry: storetest.Tools(), Checkpointer: db, Sink: w, Chains: db.ResolveChain})
	} else {
		eng = engine.New(engine.Options{Registry: storetest.Tools(), Checkpointer: engine.NewMemoryCheckpointer(), Sink: &engine.MemorySink{}})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("run-%d", i)
		if leased {
			// Recorded by the process that received the run, not timed; the
			// take is the worker's.
			b.StopTimer()
			if _, err := db.CreateRun(ctx, store.Run{ID: id, Status: chain.StatusQueued}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if l, err := db.TakeRun(ctx, id, "bench", time.Minute, nil); err != nil || l == nil {
				b.Fatal(err)
			}
		}
		res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: id})
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("%v %v", err, res.Status)
		}
	}
}

// BenchmarkRun1000Memory vs BenchmarkRun1000Persisted: the cost of persisting
// a run in PostgreSQL.
func BenchmarkRun1000Memory(b *testing.B)    { benchRun1000(b, false, false) }
func BenchmarkRun1000Persisted(b *testing.B) { benchRun1000(b, true, false) }

// BenchmarkRun1000Leased: persisted as a worker persists a run it owns,
// every checkpoint and event write checking the lease's epoch.
func BenchmarkRun1000Leased(b *testing.B) { benchRun1000(b, true, true) }

// BenchmarkGetRun1000: reading a finished 1,000-node run with every node's
// result, folded from its checkpoint log.
func BenchmarkGetRun1000(b *testing.B) {
	ctx := context.Background()
	doc := storetest.LinearChain("bench1000", "echo", 1000, func(i int) map[string]any { return map[string]any{"i": float64(i), "text": "hello"} })
	db := openBench(b)
	w := NewEventWriter(db, store.EventWriterOptions{})
	defer w.Close()
	eng := engine.New(engine.Options{Registry: storetest.Tools(), Checkpointer: db, Sink: w, Chains: db.ResolveChain})
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
