package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// Checkpoint appends of a leased run alone (no engine beside them), as a
// persisted 1,000-node run makes them: the start append (start entry and
// the ~140 node entries finished meanwhile; waits for the WAL flush), node
// appends of 250 entries (no flush wait), the end append (a few node
// entries and the end; waits for the flush). ms per append.
//
//	go test -run '^$' -bench 'Append(Start|Nodes|End)$' -benchtime 200x ./store/postgres
func BenchmarkAppendStart(b *testing.B) { benchAppend(b, "start") }
func BenchmarkAppendNodes(b *testing.B) { benchAppend(b, "nodes") }
func BenchmarkAppendEnd(b *testing.B)   { benchAppend(b, "end") }

func benchAppend(b *testing.B, which string) {
	ctx := context.Background()
	db := openBench(b)
	at := time.Now()
	nodes := func(run string, from, k int) []engine.Checkpoint {
		cps := make([]engine.Checkpoint, k)
		for i := range cps {
			id := fmt.Sprintf("n%d", from+i)
			cps[i] = engine.Checkpoint{RunID: run, Kind: engine.CheckpointNode, EventSeq: int64(2 * (from + i)), Time: at,
				Node: &engine.NodeRecord{NodeID: id, Status: engine.PhaseDone, Input: map[string]any{"i": float64(i), "text": "hello"},
					Output: map[string]any{"i": float64(i), "text": "hello"}, Attempts: 1, Started: at, Ended: at, Fired: []string{"e" + id}}}
		}
		return cps
	}
	doc := &chain.Chain{Name: "bench-append", Nodes: []chain.Node{{ID: "n0", Kind: chain.KindTool, Name: "echo"}}}
	start := func(run string) engine.Checkpoint {
		return engine.Checkpoint{RunID: run, Kind: engine.CheckpointStart, Time: at, Start: &engine.StartRecord{Chain: doc, Input: map[string]any{}}}
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		run := fmt.Sprintf("append-%s-%d", which, i)
		if _, err := db.CreateRun(ctx, store.Run{ID: run, Status: chain.StatusQueued}); err != nil {
			b.Fatal(err)
		}
		if l, err := db.TakeRun(ctx, run, "bench", time.Minute, nil); err != nil || l == nil {
			b.Fatal(err)
		}
		var before, timed []engine.Checkpoint
		switch which {
		case "start":
			timed = append([]engine.Checkpoint{start(run)}, nodes(run, 0, 140)...)
		case "nodes":
			before, timed = []engine.Checkpoint{start(run)}, nodes(run, 0, 250)
		case "end":
			before = []engine.Checkpoint{start(run)}
			timed = append(nodes(run, 0, 20), engine.Checkpoint{RunID: run, Kind: engine.CheckpointEnd, Time: at, End: &engine.EndRecord{Status: chain.StatusCompleted, NodesRun: 20}})
		}
		if len(before) > 0 {
			if err := db.Append(ctx, run, before); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		if err := db.Append(ctx, run, timed); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t)
	}
	b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "append-ms")
}
