package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/eventbuf"
	"github.com/chainstudio/studio/store/storetest"
)

// phaseTimer times each store call of a run, by kind: checkpoint appends
// (named after their last entry that is not a node result), event batches.
type phaseTimer struct {
	db *DB
	mu sync.Mutex
	t  map[string]time.Duration
	n  map[string]int
}

func (p *phaseTimer) add(k string, d time.Duration) {
	p.mu.Lock()
	p.t[k] += d
	p.n[k]++
	p.mu.Unlock()
}

func (p *phaseTimer) Append(ctx context.Context, id string, cps []engine.Checkpoint) error {
	t := time.Now()
	err := p.db.Append(ctx, id, cps)
	k := cps[0].Kind
	for i := range cps {
		if cps[i].Kind != engine.CheckpointNode {
			k = cps[i].Kind
		}
	}
	p.add("append_"+k, time.Since(t))
	return err
}

func (p *phaseTimer) Load(ctx context.Context, id string) ([]engine.Checkpoint, error) {
	return p.db.Load(ctx, id)
}

func (p *phaseTimer) ClaimInterrupt(ctx context.Context, id, pauseID string) (string, error) {
	return p.db.ClaimInterrupt(ctx, id, pauseID)
}

func (p *phaseTimer) WriteEventBatch(ctx context.Context, b []engine.Event, bodies []string) error {
	t := time.Now()
	err := p.db.WriteEventBatch(ctx, b, bodies)
	p.add("events", time.Since(t))
	return err
}

func (p *phaseTimer) AppendEvents(ctx context.Context, ev []engine.Event) error {
	return p.db.AppendEvents(ctx, ev)
}

// BenchmarkRun1000LeasedPhases is Run1000Leased with every store call
// timed: where a persisted run's time goes (docs/benchmarks.md). The
// checkpoint appends of a run are serial (one in flight), so take + start +
// node + end appends is the run's critical path when it exceeds the
// engine's own time; event batches are written beside them.
//
//	go test -run '^$' -bench 'Run1000LeasedPhases' -benchtime 20x ./store/postgres
func BenchmarkRun1000LeasedPhases(b *testing.B) {
	ctx := context.Background()
	doc := storetest.LinearChain("bench1000", "echo", 1000, func(i int) map[string]any { return map[string]any{"i": float64(i), "text": "hello"} })
	db := openBench(b)
	p := &phaseTimer{db: db, t: map[string]time.Duration{}, n: map[string]int{}}
	w := eventbuf.New(p, store.EventWriterOptions{Logger: db.log})
	defer w.Close()
	eng := engine.New(engine.Options{Registry: storetest.Tools(), Checkpointer: p, Sink: w, Chains: db.ResolveChain})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("run-%d", i)
		b.StopTimer()
		if _, err := db.CreateRun(ctx, store.Run{ID: id, Status: chain.StatusQueued}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t := time.Now()
		if l, err := db.TakeRun(ctx, id, "bench", time.Minute, nil); err != nil || l == nil {
			b.Fatal(err)
		}
		p.add("take", time.Since(t))
		res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: id})
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("%v %v", err, res.Status)
		}
	}
	b.StopTimer()
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, d := range p.t {
		b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), k+"-ms/op")
		b.ReportMetric(float64(p.n[k])/float64(b.N), k+"-calls/op")
	}
}
