package runs

import (
	"context"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// Tracer traces runs (internal/telemetry implements it with OpenTelemetry).
// It sees every event (engine.EventSink) and plugs into the engine's hooks.
type Tracer interface {
	engine.EventSink
	// Capture returns the W3C traceparent of the request in ctx, "" for none.
	Capture(ctx context.Context) string
	// StartRun starts the span of one execution of a run and returns the
	// context the run executes under, the traceparent of the new span, and
	// what ends it.
	StartRun(ctx context.Context, s RunSpan) (context.Context, string, func(*engine.Result, error))
	// AttemptContext and OnRun are the engine's hooks (engine.Options).
	AttemptContext(ctx context.Context, a engine.AttemptInfo) context.Context
	OnRun(runID string, c *chain.Chain)
}

// RunSpan describes one execution of a run for Tracer.StartRun.
type RunSpan struct {
	RunID string
	Kind  string // run, resume, rerun, node, a2e, agent, takeover
	// First is the run's first execution: its span's ids derive from the
	// run id, so that later executions find it without a store read unless
	// Parent (the trace context of the request that started the run) put
	// it in the caller's trace. Prior is the context such a run stored.
	First         bool
	Parent, Prior string
}

// capture is the trace context of a request, when tracing.
func (s *Service) capture(ctx context.Context) string {
	if s.tracer == nil || ctx == nil {
		return ""
	}
	return s.tracer.Capture(ctx)
}

// traceRun starts the span of one execution of run id. A run's first
// execution costs no store call unless a caller's trace context made it
// part of another trace: that is stored, for the resume or takeover to
// continue it.
func (s *Service) traceRun(ctx context.Context, id, kind, parent string) (context.Context, func(*engine.Result, error)) {
	first := kind != store.KindResume && kind != kindTakeover
	var prior string
	if !first {
		start := time.Now()
		var err error
		prior, err = s.traces.RunTrace(ctx, id)
		s.storeCall("run_trace", start)
		if err != nil {
			s.log.Warn("read the run's trace context; its spans continue the trace its id gives", "run_id", id, "err", err)
		}
	}
	ctx, tp, end := s.tracer.StartRun(ctx, RunSpan{RunID: id, Kind: kind, First: first, Parent: parent, Prior: prior})
	if first && parent != "" {
		start := time.Now()
		if err := s.traces.SetRunTrace(ctx, id, tp); err != nil {
			s.log.Warn("store the run's trace context; a resume will not continue the caller's trace", "run_id", id, "err", err)
		}
		s.storeCall("run_trace", start)
	}
	return ctx, end
}

// kindTakeover names, in traces and logs, the execution of a run another
// process left unfinished.
const kindTakeover = "takeover"
