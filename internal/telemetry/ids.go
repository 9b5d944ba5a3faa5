package telemetry

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// A run's first span has ids derived from the run id: a resume or another
// worker's takeover knows the span to continue without reading anything
// (unless a caller's trace context stored another trace id for the run).

// runTraceID is the trace id of a run started without a caller's trace.
func runTraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte("chain-studio trace " + runID))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}

// runSpanID is the span id of a run's first execution.
func runSpanID(runID string) trace.SpanID {
	sum := sha256.Sum256([]byte("chain-studio span " + runID))
	var id trace.SpanID
	copy(id[:], sum[:8])
	return id
}

// presetKey carries the ids the next span started with the context gets.
type presetKey struct{}

type preset struct {
	trace trace.TraceID // zero: the parent's
	span  trace.SpanID
}

// idGenerator is the SDK's random generator, except for a span started
// with a preset in its context.
type idGenerator struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newIDGenerator() *idGenerator {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &idGenerator{rng: rand.New(rand.NewChaCha8(seed))}
}

func (g *idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if p, ok := ctx.Value(presetKey{}).(preset); ok && p.trace.IsValid() {
		return p.trace, p.span
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var t trace.TraceID
	var s trace.SpanID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], g.rng.Uint64())
		binary.BigEndian.PutUint64(t[8:], g.rng.Uint64())
	}
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], g.rng.Uint64())
	}
	return t, s
}

func (g *idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if p, ok := ctx.Value(presetKey{}).(preset); ok {
		return p.span
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], g.rng.Uint64())
	}
	return s
}
