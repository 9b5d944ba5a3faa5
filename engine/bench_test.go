package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// Benchmarks for docs/benchmarks.md. Every run has the in-memory
// checkpointer and event sink attached; nodes are the built-in echo tool.
// Run: go test ./engine -run '^$' -bench . -benchmem

func linearChain(n int) *chain.Chain {
	c := &chain.Chain{Name: fmt.Sprintf("line-%d", n)}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, chain.Node{ID: fmt.Sprintf("n%d", i), Kind: chain.KindTool, Name: "echo"})
		if i > 0 {
			c.Edges = append(c.Edges, chain.Edge{Source: fmt.Sprintf("n%d", i-1), Target: fmt.Sprintf("n%d", i)})
		}
	}
	return c
}

func fanChain(n int) *chain.Chain {
	c := &chain.Chain{Name: fmt.Sprintf("fan-%d", n)}
	c.Nodes = append(c.Nodes, chain.Node{ID: "src", Kind: chain.KindTool, Name: "echo"}, chain.Node{ID: "sink", Kind: chain.KindTool, Name: "echo"})
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w%d", i)
		c.Nodes = append(c.Nodes, chain.Node{ID: id, Kind: chain.KindTool, Name: "echo"})
		c.Edges = append(c.Edges, chain.Edge{Source: "src", Target: id}, chain.Edge{Source: id, Target: "sink"})
	}
	return c
}

var benchRegistry = func() *engine.Registry {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.SetInline(builtin.Inline...)
	return reg
}()

// benchEngine returns an engine with a fresh in-memory sink and checkpointer.
func benchEngine() *engine.Engine {
	return engine.New(engine.Options{Registry: benchRegistry, Sink: &engine.MemorySink{}, Checkpointer: engine.NewMemoryCheckpointer()})
}

func benchRuns(b *testing.B, c *chain.Chain) {
	if err := chain.Normalize(c); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	p := enginetest.PlanOf(benchEngine(), c)
	if chain.HasErrors(p.Issues()) {
		b.Fatalf("invalid: %v", p.Issues())
	}
	input := map[string]any{"x": 1.0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := benchEngine() // fresh sink and checkpointer: memory does not pile up across iterations
		res, err := e.Run(ctx, p, input, engine.RunOptions{})
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("run: %v %v", err, res.Error)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.Nodes)), "ns/node")
}

func BenchmarkLinear(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchRuns(b, linearChain(n)) })
	}
}

func BenchmarkFanOutIn(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchRuns(b, fanChain(n-2)) }) // n nodes in all
	}
}

// BenchmarkTenNodeRuns measures throughput of a 10-node chain on every core.
func BenchmarkTenNodeRuns(b *testing.B) {
	c := linearChain(10)
	_ = chain.Normalize(c)
	ctx := context.Background()
	e := benchEngine()
	p := enginetest.PlanOf(e, c)
	input := map[string]any{"x": 1.0}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			e := benchEngine()
			res, err := e.Run(ctx, p, input, engine.RunOptions{RunID: "r"})
			if err != nil || res.Status != chain.StatusCompleted {
				b.Errorf("run: %v %v", err, res.Error)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

// BenchmarkPeakMemory10k reports the heap a 10,000-node run holds at its end
// (result, outputs and the checkpoint log retained) as heap-MB.
func BenchmarkPeakMemory10k(b *testing.B) {
	for _, mk := range []struct {
		name string
		c    *chain.Chain
	}{{"linear", linearChain(10000)}, {"fan", fanChain(9998)}} {
		b.Run(mk.name, func(b *testing.B) {
			_ = chain.Normalize(mk.c)
			ctx := context.Background()
			p := enginetest.PlanOf(benchEngine(), mk.c)
			var peak uint64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				e := benchEngine()
				res, _ := e.Run(ctx, p, map[string]any{}, engine.RunOptions{})
				runtime.ReadMemStats(&after)
				if d := after.HeapAlloc - before.HeapAlloc; d > peak {
					peak = d
				}
				runtime.KeepAlive(res)
				runtime.KeepAlive(e)
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}

// A node run alone at the end of a 1,000-node chain, its upstream pinned
// from the run's log (loaded, folded and checked each time, as the API
// does): the cost a person pays for "Run this node" on a large chain.
func BenchmarkRunNodeFromRun(b *testing.B) {
	c := linearChain(1000)
	if err := chain.Normalize(c); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e := benchEngine()
	res, err := e.Run(ctx, enginetest.PlanOf(e, c), map[string]any{"x": 1.0}, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		b.Fatalf("run: %v %v", err, res.Error)
	}
	p := enginetest.PlanOf(e, c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nr, err := e.PlanNodeRun(ctx, p, "n999", engine.NodeRunSource{FromRun: res.RunID})
		if err != nil {
			b.Fatal(err)
		}
		out, err := nr.Run(ctx, engine.RunOptions{})
		if err != nil || out.Status != chain.StatusCompleted {
			b.Fatalf("node run: %v %v", err, out.Error)
		}
	}
}

// BenchmarkRunFromDocument is one run of a document as the run service
// executes it: compiled once, then run.
func BenchmarkRunFromDocument(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := linearChain(n)
			_ = chain.Normalize(c)
			reg := benchRegistry
			vo := chain.ValidateOptions{Tools: reg.Has, ToolUnavailable: reg.Unavailable, Schemas: reg.NodeSchemas(nil), Check: reg.NodeCheck}
			ctx := context.Background()
			input := map[string]any{"x": 1.0}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				e := benchEngine()
				p, err := chain.Compile(c, vo)
				if err != nil {
					b.Fatal(err)
				}
				res, err := e.Run(ctx, p, input, engine.RunOptions{})
				if err != nil || res.Status != chain.StatusCompleted {
					b.Fatalf("run: %v", err)
				}
			}
		})
	}
}
