package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"log/slog"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/sqlite"
)

// BenchmarkServiceRuns: whole runs of a 10-node chain through the run
// service on SQLite (run row, events, checkpoints), with tracing off (no
// OTEL_* variables: no tracer at all) and on (every span exported over
// OTLP/HTTP to a loopback receiver that discards them).
func BenchmarkServiceRuns(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			var tr *telemetry.Tracer
			if mode == "on" {
				sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body)
					w.Header().Set("Content-Type", "application/x-protobuf")
				}))
				defer sink.Close()
				b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.URL)
				var err error
				if tr, err = telemetry.FromEnv(context.Background(), os.Getenv); err != nil || tr == nil {
					b.Fatal(tr, err)
				}
				defer tr.Shutdown(context.Background())
			}
			benchServiceRuns(b, tr)
		})
	}
}

func benchServiceRuns(b *testing.B, tr *telemetry.Tracer) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "b.db"), sqlite.Options{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	reg := engine.NewRegistry()
	reg.Register("work", func(ctx context.Context, in map[string]any, emit tool.Emitter) (any, error) { return in, nil })
	opts := runs.Options{Store: db, Registry: reg, Logger: log}
	if tr != nil {
		opts.Tracer = tr
	}
	svc, err := runs.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	c := &chain.Chain{Name: "bench"}
	for i := range 10 {
		c.Nodes = append(c.Nodes, chain.Node{ID: fmt.Sprint("n", i), Kind: chain.KindTool, Name: "work"})
		if i > 0 {
			c.Edges = append(c.Edges, chain.Edge{Source: fmt.Sprint("n", i-1), Target: fmt.Sprint("n", i)})
		}
	}
	if err := chain.Normalize(c); err != nil {
		b.Fatal(err)
	}
	input := map[string]any{"x": 1.0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := svc.RunAdHoc(ctx, c, input, "a2e", nil)
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("run: %v %+v", err, res)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
}
