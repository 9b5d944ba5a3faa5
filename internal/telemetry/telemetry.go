// Package telemetry traces runs with OpenTelemetry: a span for each
// execution of a run, one for each node attempt, one for each model call
// (GenAI semantic conventions), exported over OTLP/HTTP when the standard
// OTEL_* variables ask for it. It plugs into the run service (runs.Tracer)
// and the engine's hooks; without it nothing is traced and nothing costs.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/runs"
)

// Enabled says whether the environment asks for traces: an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER set (otlp, or another exporter FromEnv refuses), and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "":
	default: // otlp; another exporter is asked for, and FromEnv says it is not served
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the tracer the environment asks for, exporting over
// OTLP/HTTP (the exporter reads the OTEL_EXPORTER_OTLP_* variables, the SDK
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and
// OTEL_BSP_*), or nil when it asks for none. Shutdown flushes it.
func FromEnv(ctx context.Context, getenv func(string) string) (*Tracer, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	if e := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); e != "" && e != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: the studio exports traces with otlp only (or none)", e)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: the studio exports OTLP over http/protobuf only", proto)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", serviceName(getenv))))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// The variables (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) win.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return New(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

func serviceName(getenv func(string) string) string {
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		return s
	}
	return "chain-studio"
}

// Tracer traces runs on a trace provider. It implements runs.Tracer.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	mu    sync.Mutex
	runs  map[string]*runTrace               // runs executing in this process
	open  map[string]map[attemptKey]*attempt // run → its attempts in flight
	nOpen int                                // attempts in open
	chain map[string]map[string]nodeInfo     // run → node id → kind and name
}

type runTrace struct {
	span trace.Span
	ctx  context.Context // carries span
}

type nodeInfo struct {
	kind chain.Kind
	name string
}

type attemptKey struct {
	run, node string
	item      int // map body: the item index; -1 elsewhere
}

// attempt is a node attempt between its start event and its end: the span
// starts when the attempt executes (AttemptContext, under the span of what
// runs it), or at its end event for nodes that never execute one.
type attempt struct {
	start   time.Time
	attempt int
	reused  bool
	span    trace.Span
}

// maxOpen bounds the attempts and runs tracked at once: sub-chain runs and
// abandoned workers could otherwise leave entries behind.
const maxOpen = 100_000

var _ runs.Tracer = (*Tracer)(nil)

// New traces on a trace provider made with opts (an exporter, a resource);
// its ids are the tracer's own (a run's first span's derive from its id).
func New(opts ...sdktrace.TracerProviderOption) *Tracer {
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithIDGenerator(newIDGenerator()))...)
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/chainstudio/studio"),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		runs: map[string]*runTrace{}, open: map[string]map[attemptKey]*attempt{}, chain: map[string]map[string]nodeInfo{}}
}

// Shutdown exports what is buffered and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// Propagator is the W3C trace-context (and baggage) propagator, for the
// HTTP server's incoming requests.
func (t *Tracer) Propagator() propagation.TextMapPropagator { return t.prop }

// Capture implements runs.Tracer: the W3C traceparent of the span or remote
// parent in ctx (the request that starts a run), "" for none.
func (t *Tracer) Capture(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return format(sc)
}

func format(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// parse reads a traceparent as a remote span context.
func (t *Tracer) parse(tp string) (trace.SpanContext, bool) {
	if tp == "" {
		return trace.SpanContext{}, false
	}
	ctx := t.prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp})
	sc := trace.SpanContextFromContext(ctx)
	return sc, sc.IsValid()
}

// StartRun implements runs.Tracer: the span of one execution of a run.
// The first continues the caller's trace (parent); a resume or a takeover
// is a child of the run's first span (prior) and links to it, so the whole
// run is one trace whichever process executes each part.
func (t *Tracer) StartRun(ctx context.Context, s runs.RunSpan) (context.Context, string, func(*engine.Result, error)) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("studio.run.id", s.RunID), attribute.String("studio.run.kind", s.Kind))}
	base := ctx
	switch {
	case s.First:
		// The first execution's ids derive from the run id; under a
		// caller's span it joins the caller's trace.
		p := preset{trace: runTraceID(s.RunID), span: runSpanID(s.RunID)}
		if parent, ok := t.parse(s.Parent); ok {
			ctx, p.trace = trace.ContextWithRemoteSpanContext(ctx, parent), parent.TraceID()
		} else {
			opts = append(opts, trace.WithNewRoot())
		}
		ctx = context.WithValue(ctx, presetKey{}, p)
	default:
		// A resume or takeover: a child of the first execution's span (as
		// stored, or as the run id gives it), linked to it.
		prior, ok := t.parse(s.Prior)
		if !ok {
			prior = trace.NewSpanContext(trace.SpanContextConfig{TraceID: runTraceID(s.RunID), SpanID: runSpanID(s.RunID),
				TraceFlags: trace.FlagsSampled, Remote: true})
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, prior)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: prior, Attributes: []attribute.KeyValue{attribute.String("studio.link", "run")}}))
	}
	name := "run"
	if s.Kind != "" && s.Kind != "run" {
		name = "run " + s.Kind
	}
	_, span := t.tracer.Start(ctx, name, opts...)
	// Not ctx: the preset ids are for the run's span alone.
	ctx = trace.ContextWithSpan(base, span)
	t.mu.Lock()
	if len(t.runs) < maxOpen {
		t.runs[s.RunID] = &runTrace{span: span, ctx: ctx}
	}
	t.mu.Unlock()
	end := func(res *engine.Result, err error) {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case res != nil:
			span.SetAttributes(attribute.String("studio.run.status", string(res.Status)), attribute.Int("studio.run.nodes_run", res.NodesRun))
			if res.Error != nil {
				span.SetStatus(codes.Error, res.Error.Message)
			}
		}
		span.End()
		t.mu.Lock()
		delete(t.runs, s.RunID)
		delete(t.chain, s.RunID)
		for _, a := range t.open[s.RunID] { // attempts the run abandoned
			if a.span != nil {
				a.span.End()
			}
		}
		t.nOpen -= len(t.open[s.RunID])
		delete(t.open, s.RunID)
		t.mu.Unlock()
	}
	return ctx, format(span.SpanContext()), end
}

// OnRun implements runs.Tracer (engine.Options.OnRun): the kinds and names
// of the nodes a run executes.
func (t *Tracer) OnRun(runID string, c *chain.Chain) {
	nodes := make(map[string]nodeInfo, len(c.Nodes))
	for i := range c.Nodes {
		nodes[c.Nodes[i].ID] = nodeInfo{kind: c.Nodes[i].Kind, name: c.Nodes[i].Name}
	}
	t.mu.Lock()
	run := t.runs[runID]
	if run != nil { // a sub-chain's run has no span: its end would never clear this
		t.chain[runID] = nodes
	}
	t.mu.Unlock()
	if run != nil {
		run.span.SetAttributes(attribute.String("studio.chain.name", c.Name))
	}
}

// AttemptContext implements runs.Tracer (engine.Options.AttemptContext):
// the attempt's span starts under the span of what runs it (the run, or a
// map or parallel node's attempt), and its context carries the span and
// this tracer to tools and the model client.
func (t *Tracer) AttemptContext(ctx context.Context, a engine.AttemptInfo) context.Context {
	parent := trace.SpanContextFromContext(ctx)
	if !parent.IsValid() {
		return ctx // not a traced run
	}
	key := attemptKey{run: a.RunID, node: a.NodeID, item: -1}
	if a.Item != nil {
		key.item = *a.Item
	}
	t.mu.Lock()
	st := t.open[key.run][key]
	if st == nil || st.span != nil {
		st = &attempt{start: time.Now(), attempt: a.Attempt}
		t.put(key, st)
	}
	t.mu.Unlock()
	attrs := []attribute.KeyValue{attribute.String("studio.run.id", a.RunID), attribute.String("studio.node.id", a.NodeID),
		attribute.String("studio.node.kind", string(a.Kind)), attribute.Int("studio.node.attempt", a.Attempt)}
	if a.Item != nil {
		attrs = append(attrs, attribute.Int("studio.node.item", *a.Item))
	}
	attrs = append(attrs, nameAttr(a.Kind, a.Name)...)
	ctx, span := t.tracer.Start(ctx, "node "+a.NodeID, trace.WithTimestamp(st.start), trace.WithAttributes(attrs...))
	t.mu.Lock()
	st.span = span
	t.mu.Unlock()
	return tool.WithTracer(ctx, t)
}

// put records an attempt in flight (t.mu held); past maxOpen it is not
// kept, and its span starts at its end event instead.
func (t *Tracer) put(k attemptKey, a *attempt) {
	run := t.open[k.run]
	if run == nil {
		if t.nOpen >= maxOpen {
			return
		}
		run = map[attemptKey]*attempt{}
		t.open[k.run] = run
	}
	if _, ok := run[k]; !ok {
		if t.nOpen >= maxOpen {
			return
		}
		t.nOpen++
	}
	run[k] = a
}

// take removes and returns an attempt in flight (t.mu held).
func (t *Tracer) take(k attemptKey) *attempt {
	run := t.open[k.run]
	a, ok := run[k]
	if !ok {
		return nil
	}
	delete(run, k)
	t.nOpen--
	if len(run) == 0 {
		delete(t.open, k.run)
	}
	return a
}

// nameAttr names what a node runs: its tool, agent or sub-chain.
func nameAttr(kind chain.Kind, name string) []attribute.KeyValue {
	if name == "" {
		return nil
	}
	switch kind {
	case chain.KindTool:
		return []attribute.KeyValue{attribute.String("studio.node.tool", name)}
	case chain.KindAgent:
		return []attribute.KeyValue{attribute.String("studio.node.agent", name)}
	case chain.KindSkill:
		return []attribute.KeyValue{attribute.String("studio.node.chain", name)}
	}
	return nil
}

// Emit implements engine.EventSink: node events open and close attempt
// spans. It never blocks on anything but the tracer's lock.
func (t *Tracer) Emit(ev engine.Event) {
	switch ev.Phase {
	case engine.PhaseStart, engine.PhaseDone, engine.PhaseError, engine.PhaseSkip, engine.PhasePaused:
	default:
		return
	}
	if ev.Phase == engine.PhaseError && ev.Reason == engine.ReasonOnErrorSkip {
		return // the skip that follows ends the attempt
	}
	key := attemptKey{run: ev.RunID, node: ev.NodeID, item: -1}
	if ev.Item != nil {
		key.item = *ev.Item
	}
	t.mu.Lock()
	if ev.Phase == engine.PhaseStart {
		t.put(key, &attempt{start: ev.Time, attempt: max(ev.Attempt, 1), reused: ev.Reused})
		t.mu.Unlock()
		return
	}
	st := t.take(key)
	run := t.runs[ev.RunID]
	info := t.chain[ev.RunID][ev.NodeID]
	t.mu.Unlock()
	span := t.endSpan(st, run, ev, info)
	if span == nil {
		return
	}
	status := string(ev.Phase)
	if ev.Reason == "retrying" {
		status = "retrying"
	}
	attrs := []attribute.KeyValue{attribute.String("studio.node.status", status)}
	if ev.Reason != "" && ev.Phase == engine.PhaseSkip {
		attrs = append(attrs, attribute.String("studio.node.skip_reason", ev.Reason))
	}
	if ev.Matched != "" {
		attrs = append(attrs, attribute.String("studio.node.matched", ev.Matched))
	}
	if st != nil && st.reused {
		attrs = append(attrs, attribute.Bool("studio.node.reused", true))
	}
	if ev.Pinned { // the chain's pinned output: nothing executed
		attrs = append(attrs, attribute.Bool("studio.node.pinned", true))
	}
	span.SetAttributes(attrs...)
	if ev.Phase == engine.PhaseError {
		span.SetStatus(codes.Error, ev.Error)
	}
	span.End(trace.WithTimestamp(ev.Time))
}

// endSpan is the span an end event closes: the executing attempt's, or one
// made now (under the run's span) for a node that never executed one.
func (t *Tracer) endSpan(st *attempt, run *runTrace, ev engine.Event, info nodeInfo) trace.Span {
	if st != nil && st.span != nil {
		return st.span
	}
	if run == nil {
		return nil // not traced here (an ad-hoc sub-chain's router)
	}
	start, n := ev.Time, max(ev.Attempt, 1)
	if st != nil {
		start, n = st.start, st.attempt
	}
	attrs := []attribute.KeyValue{attribute.String("studio.run.id", ev.RunID), attribute.String("studio.node.id", ev.NodeID),
		attribute.Int("studio.node.attempt", n)}
	if info.kind != "" {
		attrs = append(attrs, attribute.String("studio.node.kind", string(info.kind)))
	}
	attrs = append(attrs, nameAttr(info.kind, info.name)...)
	if ev.Item != nil {
		attrs = append(attrs, attribute.Int("studio.node.item", *ev.Item))
	}
	_, span := t.tracer.Start(run.ctx, "node "+ev.NodeID, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	return span
}

// Inject implements tool.Tracer: traceparent on outgoing requests.
func (t *Tracer) Inject(ctx context.Context, h http.Header) {
	t.prop.Inject(ctx, propagation.HeaderCarrier(h))
}

// ModelCall implements tool.Tracer: a client span following the
// OpenTelemetry GenAI semantic conventions.
func (t *Tracer) ModelCall(ctx context.Context, c tool.ModelCall) (context.Context, func(tool.ModelResult)) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", providerName(c.Provider)),
		attribute.String("gen_ai.request.model", c.Model),
	}
	if c.Agent != "" {
		attrs = append(attrs, attribute.String("gen_ai.agent.name", c.Agent))
	}
	attrs = append(attrs, serverAttrs(c.Endpoint)...)
	ctx, span := t.tracer.Start(ctx, "chat "+c.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(r tool.ModelResult) {
		if r.ResponseModel != "" {
			span.SetAttributes(attribute.String("gen_ai.response.model", r.ResponseModel))
		}
		span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", r.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", r.OutputTokens))
		if r.Err != nil {
			span.SetStatus(codes.Error, r.Err.Error())
			var typ = "error"
			if errors.Is(r.Err, context.DeadlineExceeded) {
				typ = "timeout"
			}
			span.SetAttributes(attribute.String("error.type", typ))
		}
		span.End()
	}
}

// serverAttrs are server.address and server.port of a model endpoint, as
// the semantic conventions want them: the host name alone and the port as
// a number (the scheme's when the URL names none); none for an endpoint
// that is not an absolute URL.
func serverAttrs(endpoint string) []attribute.KeyValue {
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	attrs := []attribute.KeyValue{attribute.String("server.address", u.Hostname())}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		port = map[string]int{"http": 80, "https": 443}[strings.ToLower(u.Scheme)]
	}
	if port > 0 {
		attrs = append(attrs, attribute.Int("server.port", port))
	}
	return attrs
}

// providerName is a provider's gen_ai.provider.name; openai covers every
// OpenAI-compatible server.
func providerName(p string) string {
	switch p {
	case "anthropic":
		return "anthropic"
	case "gemini":
		return "gcp.gemini"
	}
	return "openai"
}

// ToolCall implements tool.Tracer: an execute_tool span (the GenAI
// semantic conventions) under the agent's node.
func (t *Tracer) ToolCall(ctx context.Context, c tool.ToolCall) (context.Context, func(error)) {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Tool),
		attribute.String("gen_ai.tool.call.id", c.CallID),
		attribute.String("gen_ai.tool.type", "function"),
	}
	if c.Agent != "" {
		attrs = append(attrs, attribute.String("gen_ai.agent.name", c.Agent))
	}
	if c.Kind != "" {
		attrs = append(attrs, attribute.String("studio.tool.kind", c.Kind))
	}
	ctx, span := t.tracer.Start(ctx, "execute_tool "+c.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(attribute.String("error.type", "error"))
		}
		span.End()
	}
}

// Flush exports every span that ended so far.
func (t *Tracer) Flush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }
