package telemetry

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/runs"
)

// process is one studio process's tracer, recording its spans in memory.
func process() (*Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return New(sdktrace.WithSyncer(exp)), exp
}

// TestHandOverContinuesTheTrace: another process (a worker taking a run
// over, or resuming it) continues the run's trace as a child of its first
// span, with a link, from the run id alone; a run started under a caller's
// span continues the caller's trace from the context its first execution
// stored.
func TestHandOverContinuesTheTrace(t *testing.T) {
	ctx := context.Background()
	a, expA := process()
	b, expB := process()

	_, stored, end := a.StartRun(ctx, runs.RunSpan{RunID: "run-1", Kind: "run", First: true})
	end(&engine.Result{Status: chain.StatusFailed}, nil)
	_, _, end = b.StartRun(ctx, runs.RunSpan{RunID: "run-1", Kind: "takeover"}) // nothing stored: derived
	end(&engine.Result{Status: chain.StatusCompleted}, nil)
	first, second := expA.GetSpans()[0], expB.GetSpans()[0]
	if first.SpanContext.TraceID() != second.SpanContext.TraceID() {
		t.Fatalf("takeover in trace %s, first execution in %s", second.SpanContext.TraceID(), first.SpanContext.TraceID())
	}
	if second.Parent.SpanID() != first.SpanContext.SpanID() || len(second.Links) != 1 || second.Links[0].SpanContext.SpanID() != first.SpanContext.SpanID() {
		t.Fatalf("takeover span: parent %s links %v, want the first span %s", second.Parent.SpanID(), second.Links, first.SpanContext.SpanID())
	}
	if first.Name != "run" || second.Name != "run takeover" || first.Parent.IsValid() {
		t.Fatalf("names %q %q; first parent %v", first.Name, second.Name, first.Parent)
	}
	if stored != format(first.SpanContext) {
		t.Fatalf("StartRun returned %q, the span is %s", stored, format(first.SpanContext))
	}

	// Two runs never share a trace.
	_, _, end = a.StartRun(ctx, runs.RunSpan{RunID: "run-2", Kind: "run", First: true})
	end(nil, nil)
	if other := expA.GetSpans()[1]; other.SpanContext.TraceID() == first.SpanContext.TraceID() || other.SpanContext.SpanID() == first.SpanContext.SpanID() {
		t.Fatal("two runs got the same ids")
	}

	// Under a caller's span: the caller's trace, its span as parent; a
	// resume elsewhere reads what was stored.
	caller := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	_, stored, end = a.StartRun(ctx, runs.RunSpan{RunID: "run-3", Kind: "run", First: true, Parent: caller})
	end(nil, nil)
	called := expA.GetSpans()[2]
	if called.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || called.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Fatalf("caller's run: trace %s parent %s", called.SpanContext.TraceID(), called.Parent.SpanID())
	}
	_, _, end = b.StartRun(ctx, runs.RunSpan{RunID: "run-3", Kind: "resume", Prior: stored})
	end(nil, nil)
	resumed := expB.GetSpans()[1]
	if resumed.SpanContext.TraceID() != called.SpanContext.TraceID() || resumed.Parent.SpanID() != called.SpanContext.SpanID() {
		t.Fatalf("resume: trace %s parent %s, want %s %s", resumed.SpanContext.TraceID(), resumed.Parent.SpanID(), called.SpanContext.TraceID(), called.SpanContext.SpanID())
	}
	// The preset ids were for the run's span only: its nodes get their own.
	ctx4, _, end := a.StartRun(ctx, runs.RunSpan{RunID: "run-4", Kind: "run", First: true})
	actx := a.AttemptContext(ctx4, engine.AttemptInfo{RunID: "run-4", NodeID: "n", Kind: chain.KindTool, Attempt: 1})
	a.Emit(engine.Event{RunID: "run-4", NodeID: "n", Phase: engine.PhaseDone})
	end(nil, nil)
	if actx == ctx4 {
		t.Fatal("the attempt's context carries no span")
	}
	spans := expA.GetSpans()
	node, run4 := spans[len(spans)-2], spans[len(spans)-1]
	if node.SpanContext.SpanID() == run4.SpanContext.SpanID() || node.Parent.SpanID() != run4.SpanContext.SpanID() {
		t.Fatalf("node span %s (parent %s), run span %s", node.SpanContext.SpanID(), node.Parent.SpanID(), run4.SpanContext.SpanID())
	}
}

// TestEnabled: the standard variables decide, and none means none.
func TestEnabled(t *testing.T) {
	for env, want := range map[string]bool{
		"": false,
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318":                           true,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:4318/v1/traces":          true,
		"OTEL_TRACES_EXPORTER=otlp":                                                   true,
		"OTEL_TRACES_EXPORTER=none,OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318": false,
		"OTEL_SDK_DISABLED=true,OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318":    false,
	} {
		vars := map[string]string{}
		for _, kv := range strings.Split(env, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		if got := Enabled(func(k string) string { return vars[k] }); got != want {
			t.Errorf("%q: enabled %v, want %v", env, got, want)
		}
	}
	get := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	if _, err := FromEnv(context.Background(), get(map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"})); err == nil {
		t.Error("a zipkin exporter was accepted")
	}
	if _, err := FromEnv(context.Background(), get(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})); err == nil {
		t.Error("grpc was accepted")
	}
	if tr, err := FromEnv(context.Background(), get(nil)); tr != nil || err != nil {
		t.Errorf("no variables: %v %v", tr, err)
	}
}

// A node that fails under on_error: skip sends an error event, then its
// skip: one attempt, one span, which the skip ends (status skip, its reason).
func TestSkippedFailureIsOneSpan(t *testing.T) {
	ctx := context.Background()
	tr, exp := process()
	ctx, _, end := tr.StartRun(ctx, runs.RunSpan{RunID: "run-s", Kind: "run", First: true})
	tr.AttemptContext(ctx, engine.AttemptInfo{RunID: "run-s", NodeID: "a", Kind: chain.KindTool, Attempt: 1})
	tr.Emit(engine.Event{RunID: "run-s", NodeID: "a", Phase: engine.PhaseStart, Attempt: 1})
	tr.Emit(engine.Event{RunID: "run-s", NodeID: "a", Phase: engine.PhaseError, Error: "disk", Reason: engine.ReasonOnErrorSkip, Attempt: 1})
	tr.Emit(engine.Event{RunID: "run-s", NodeID: "a", Phase: engine.PhaseSkip, Error: "disk", Reason: engine.ReasonOnErrorSkip, Attempt: 1})
	end(nil, nil)
	var nodes []string
	for _, s := range exp.GetSpans() {
		if s.Name != "node a" {
			continue
		}
		for _, kv := range s.Attributes {
			if kv.Key == "studio.node.status" || kv.Key == "studio.node.skip_reason" {
				nodes = append(nodes, string(kv.Key)+"="+kv.Value.AsString())
			}
		}
		nodes = append(nodes, "|")
	}
	if strings.Join(nodes, " ") != "studio.node.status=skip studio.node.skip_reason=on_error_skip |" {
		t.Fatalf("spans of node a: %v", nodes)
	}
}

// An agent's tool call is an execute_tool span under the context it runs
// in, failed when the tool failed; a model call names its provider.
func TestToolCallAndProviderSpans(t *testing.T) {
	tr, exp := process()
	ctx, endModel := tr.ModelCall(context.Background(), tool.ModelCall{Agent: "helper", Provider: "anthropic", Model: "claude"})
	_, end := tr.ToolCall(ctx, tool.ToolCall{Agent: "helper", Tool: "greet", CallID: "c1", Kind: "chain"})
	end(errors.New("the chain failed"))
	endModel(tool.ModelResult{})
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	call, model := spans[0], spans[1]
	attrs := map[string]string{}
	for _, a := range call.Attributes {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if call.Name != "execute_tool greet" || attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.call.id"] != "c1" ||
		attrs["gen_ai.agent.name"] != "helper" || call.Status.Code != codes.Error || call.Parent.SpanID() != model.SpanContext.SpanID() {
		t.Fatalf("tool span %q %v %v parent %s", call.Name, attrs, call.Status, call.Parent.SpanID())
	}
	for _, a := range model.Attributes {
		if a.Key == "gen_ai.provider.name" && a.Value.Emit() != "anthropic" {
			t.Fatalf("provider %s", a.Value.Emit())
		}
	}
}

// A chat span names the server as the GenAI conventions do: the host alone
// in server.address and the port as a number in server.port (the scheme's
// when the URL gives none), never the whole URL.
func TestModelSpanNamesTheServerHostAndPort(t *testing.T) {
	cases := []struct {
		endpoint string
		host     string
		port     int64 // 0: no server.port
	}{
		{"http://127.0.0.1:11434/v1/chat/completions", "127.0.0.1", 11434},
		{"https://api.anthropic.com/v1/messages", "api.anthropic.com", 443},
		{"http://[::1]:8080/v1beta/models/m:streamGenerateContent?alt=sse", "::1", 8080},
		{"http://llm.internal/v1/chat/completions", "llm.internal", 80},
		{"not a url", "", 0},
	}
	for _, tc := range cases {
		tr, exp := process()
		_, end := tr.ModelCall(context.Background(), tool.ModelCall{Agent: "helper", Provider: "openai", Model: "m", Endpoint: tc.endpoint})
		end(tool.ModelResult{})
		attrs := map[string]any{}
		for _, a := range exp.GetSpans()[0].Attributes {
			attrs[string(a.Key)] = a.Value.AsInterface()
		}
		host, hasHost := attrs["server.address"]
		port, hasPort := attrs["server.port"]
		if tc.host == "" {
			if hasHost || hasPort {
				t.Errorf("%s: server.address %v, server.port %v; want neither", tc.endpoint, host, port)
			}
			continue
		}
		if host != tc.host || port != tc.port {
			t.Errorf("%s: server.address %v (%T), server.port %v (%T); want %q and %d", tc.endpoint, host, host, port, port, tc.host, tc.port)
		}
	}
}
