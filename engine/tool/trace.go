package tool

import (
	"context"
	"net/http"
)

// Tracer is the host's distributed tracing (OpenTelemetry in the studio),
// carried by a node attempt's context so that tools and the model client can
// take part without depending on a tracing library. A context without one
// traces nothing and costs one lookup.
type Tracer interface {
	// Inject writes the trace context of ctx (W3C traceparent, tracestate)
	// into the headers of an outgoing request.
	Inject(ctx context.Context, h http.Header)
	// ModelCall starts the span of one call to a model; end reports how it
	// went. The returned context carries the call's span (Inject it).
	ModelCall(ctx context.Context, c ModelCall) (context.Context, func(ModelResult))
	// ToolCall starts the span of one tool an agent's model asked for;
	// end reports its error (nil: it succeeded).
	ToolCall(ctx context.Context, c ToolCall) (context.Context, func(err error))
}

// ToolCall describes an agent's tool call for tracing.
type ToolCall struct {
	Agent  string
	Tool   string // the name the model called
	CallID string
	Kind   string // tool or chain
}

// ModelCall describes a model call for tracing.
type ModelCall struct {
	Agent    string
	Provider string // openai, anthropic, gemini
	Model    string // the model requested
	Endpoint string // without credentials (redacted); a span names its host and port
}

// ModelResult is how a model call ended: the token usage the server
// reported (zero when it reported none) or the error.
type ModelResult struct {
	ResponseModel string
	InputTokens   int64
	OutputTokens  int64
	Err           error
}

const tracerKey ctxKey = 100

// WithTracer returns a context carrying t.
func WithTracer(ctx context.Context, t Tracer) context.Context {
	return context.WithValue(ctx, tracerKey, t)
}

// TracerFrom returns the tracer ctx carries, nil for none.
func TracerFrom(ctx context.Context) Tracer {
	t, _ := ctx.Value(tracerKey).(Tracer)
	return t
}

// InjectTrace writes ctx's trace headers into h when ctx carries a tracer.
func InjectTrace(ctx context.Context, h http.Header) {
	if t := TracerFrom(ctx); t != nil {
		t.Inject(ctx, h)
	}
}
