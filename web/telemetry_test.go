package web_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/llm/openai"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/examples"
	"github.com/chainstudio/studio/internal/telemetry"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/web"
)

// receiver is an OTLP/HTTP trace receiver on loopback: it decodes each
// export request with the OpenTelemetry protobuf definitions.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	svc   string // service.name of the last export
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
			return
		}
		body, _ := io.ReadAll(req.Body)
		var ex collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.svc = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	t.Cleanup(r.Close)
	return r
}

// trace returns the spans of one trace.
func (r *receiver) trace(traceID []byte) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if bytes.Equal(s.TraceId, traceID) {
			out = append(out, s)
		}
	}
	return out
}

func (r *receiver) runSpans(runID string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if attr(s, "studio.run.id") == runID {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return anyValue(a.Value)
		}
	}
	return ""
}

func anyValue(v *commonpb.AnyValue) string {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return v.String()
}

// find returns the spans named name (in start order), failing unless there
// are want of them.
func find(t *testing.T, spans []*tracepb.Span, name string, want int) []*tracepb.Span {
	t.Helper()
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	if len(out) != want {
		t.Fatalf("%d spans named %q, want %d; spans: %s", len(out), name, want, names(spans))
	}
	for i := 1; i < len(out); i++ { // insertion sort by start time
		for j := i; j > 0 && out[j].StartTimeUnixNano < out[j-1].StartTimeUnixNano; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func names(spans []*tracepb.Span) string {
	var n []string
	for _, s := range spans {
		n = append(n, fmt.Sprintf("%s(%s)", s.Name, hex.EncodeToString(s.SpanId)))
	}
	return strings.Join(n, ", ")
}

func childOf(t *testing.T, child, parent *tracepb.Span) {
	t.Helper()
	if !bytes.Equal(child.ParentSpanId, parent.SpanId) || !bytes.Equal(child.TraceId, parent.TraceId) {
		t.Fatalf("span %q (parent %x) is not a child of %q (%x)", child.Name, child.ParentSpanId, parent.Name, parent.SpanId)
	}
}

func wantAttr(t *testing.T, s *tracepb.Span, key, want string) {
	t.Helper()
	if got := attr(s, key); got != want {
		t.Fatalf("span %q: %s = %q, want %q", s.Name, key, got, want)
	}
}

// headerLog records the traceparent of each request a loopback server got.
type headerLog struct {
	mu  sync.Mutex
	got []string
}

func (h *headerLog) add(r *http.Request) {
	h.mu.Lock()
	h.got = append(h.got, r.Header.Get("traceparent"))
	h.mu.Unlock()
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

type studio struct {
	url    string
	rcv    *receiver
	tracer *telemetry.Tracer
	logs   *syncBuffer
	model  *headerLog
	target *headerLog
	// targetURL is the loopback address the http node calls.
	targetURL string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newStudio starts the studio as cmd/studio wires it with OTEL_* set: a
// SQLite store, the run service traced, the HTTP server reading
// traceparent, a fake OpenAI-compatible model on loopback.
func newStudio(t *testing.T) *studio {
	st := &studio{rcv: newReceiver(t), logs: &syncBuffer{}, model: &headerLog{}, target: &headerLog{}}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", st.rcv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "studio-under-test")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	ctx := context.Background()
	tr, err := telemetry.FromEnv(ctx, os.Getenv)
	if err != nil || tr == nil {
		t.Fatalf("tracer from the environment: %v %v", tr, err)
	}
	st.tracer = tr
	t.Cleanup(func() { tr.Shutdown(context.Background()) })

	modelSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.model.add(r)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m-large-2026-01","choices":[{"message":{"content":"drafted"}}],"usage":{"prompt_tokens":1200,"completion_tokens":300,"total_tokens":1500}}`)
	}))
	t.Cleanup(modelSrv.Close)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.target.add(r)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(target.Close)
	st.targetURL = target.URL

	def, err := agent.Parse([]byte("name: writer\nmodel: {url: '"+modelSrv.URL+"/v1', name: m-large, stream: false}\n"), "writer.agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{HTTPAllowPrivate: true}))
	reg.SetInline(builtin.Inline...)
	// flaky fails its first attempt: the retry is a second span.
	reg.Register("flaky", func(ctx context.Context, in map[string]any, emit tool.Emitter) (any, error) {
		if tool.Attempt(ctx) == 1 {
			return nil, errors.New("first attempt fails")
		}
		return map[string]any{"attempt": tool.Attempt(ctx)}, nil
	})
	providers := llm.Kinds{openai.Kind}
	agents, err := agent.NewSet([]*agent.Definition{def}, agent.LoadOptions{Tools: func(name string) bool { _, ok := reg.Get(name); return ok }, Providers: providers})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(st.logs, nil)))
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	metrics := web.NewMetrics()
	svc, err := runs.New(runs.Options{Store: db, Registry: reg, Agents: agents, Logger: log, Observer: metrics, Tracer: tr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Shutdown(context.Background()); svc.Close() })
	prices, err := pricing.Parse([]byte("m-large: {input: 2.5, output: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(web.Config{Logger: log}, web.Deps{DB: db, Runs: svc, Registry: reg, Agents: agents, Providers: providers, Metrics: metrics,
		Prices: prices, Propagator: tr.Propagator()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	st.url = ts.URL
	return st
}

// example is the document of an example chain.
func example(t *testing.T, file string) []byte {
	t.Helper()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if e.File == file {
			return e.Data
		}
	}
	t.Fatalf("no example %s", file)
	return nil
}

func (st *studio) do(t *testing.T, method, path string, body any, header ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, st.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(b) > 0 && b[0] == '{' {
		json.Unmarshal(b, &m)
	}
	if m == nil {
		m = map[string]any{"text": string(b)}
	}
	return res.StatusCode, m
}

func (st *studio) createChain(t *testing.T, doc string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	code, m := st.do(t, "POST", "/v1/chains", v)
	if code != http.StatusCreated {
		t.Fatalf("create chain: %d %v", code, m)
	}
	id, _ := m["id"].(string)
	if id == "" {
		id, _ = m["chain_id"].(string)
	}
	return id
}

// waitRun waits for a run to reach status and its spans to be exported.
func (st *studio) waitRun(t *testing.T, id, status string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() error {
		_, m := st.do(t, "GET", "/v1/runs/"+id, nil)
		if m["status"] != status {
			return fmt.Errorf("run %s is %v, want %s", id, m["status"], status)
		}
		// The run's span ends just after its row says it stopped.
		if err := st.tracer.Flush(context.Background()); err != nil {
			return err
		}
		for _, s := range st.rcv.runSpans(id) {
			if strings.HasPrefix(s.Name, "run") && attr(s, "studio.run.status") == status {
				return nil
			}
		}
		return fmt.Errorf("no span of run %s with status %s yet", id, status)
	})
}

func (st *studio) start(t *testing.T, chainID string, input map[string]any, header ...string) string {
	t.Helper()
	code, m := st.do(t, "POST", "/v1/chains/"+chainID+"/runs", map[string]any{"input": input}, header...)
	if code != http.StatusAccepted {
		t.Fatalf("start: %d %v", code, m)
	}
	return m["run_id"].(string)
}

// TestTraceBranchRetryModelAndHTTP: a run started with a traceparent is one
// trace under the caller's span: the run span, a span per node attempt (the
// router, the branch not taken with its skip reason, both attempts of a
// retried node), a GenAI span per model call with its tokens; the http
// tool and the model call carry the trace on; logs carry its ids; the
// tokens and their cost are on the run's usage, the usage API and /metrics.
func TestTraceBranchRetryModelAndHTTP(t *testing.T) {
	st := newStudio(t)
	chainID := st.createChain(t, `{"name": "traced", "entry_node": "fetch", "nodes": [
  {"node_id": "fetch", "kind": "tool", "name": "echo", "input_map": {"items": "input.items"}},
  {"node_id": "check", "kind": "branch", "condition": "length(output.items) > `+"`0`"+`", "true_node": "flaky", "false_node": "skip_log"},
  {"node_id": "flaky", "kind": "tool", "name": "flaky", "retry": {"max_attempts": 2}},
  {"node_id": "call", "kind": "tool", "name": "http", "input": {"url": "`+st.targetURL+`/hook", "method": "GET"}},
  {"node_id": "ask", "kind": "agent", "name": "writer", "input": {"query": "draft it"}},
  {"node_id": "skip_log", "kind": "tool", "name": "echo"}],
 "edges": [{"source": "fetch", "target": "check"}, {"source": "flaky", "target": "call"}, {"source": "call", "target": "ask"}]}`)
	const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	id := st.start(t, chainID, map[string]any{"items": []any{1}}, "traceparent", caller)
	st.waitRun(t, id, "completed")

	traceID, _ := hex.DecodeString("4bf92f3577b34da6a3ce929d0e0e4736")
	spans := st.rcv.trace(traceID)
	run := find(t, spans, "run", 1)[0]
	if hex.EncodeToString(run.ParentSpanId) != "00f067aa0ba902b7" {
		t.Fatalf("run span's parent %x, want the caller's span", run.ParentSpanId)
	}
	wantAttr(t, run, "studio.run.id", id)
	wantAttr(t, run, "studio.run.status", "completed")
	wantAttr(t, run, "studio.chain.name", "traced")
	for _, n := range []string{"node fetch", "node check", "node skip_log", "node call", "node ask"} {
		childOf(t, find(t, spans, n, 1)[0], run)
	}
	check := find(t, spans, "node check", 1)[0]
	wantAttr(t, check, "studio.node.kind", "branch")
	wantAttr(t, check, "studio.node.matched", "true")
	skipped := find(t, spans, "node skip_log", 1)[0]
	wantAttr(t, skipped, "studio.node.status", "skip")
	wantAttr(t, skipped, "studio.node.skip_reason", engine.ReasonBranchNotTaken)
	flaky := find(t, spans, "node flaky", 2)
	for i, s := range flaky {
		childOf(t, s, run)
		wantAttr(t, s, "studio.node.tool", "flaky")
		wantAttr(t, s, "studio.node.attempt", fmt.Sprint(i+1))
	}
	wantAttr(t, flaky[0], "studio.node.status", "retrying")
	if flaky[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || flaky[0].Status.Message != "first attempt fails" {
		t.Fatalf("first attempt's status %v", flaky[0].Status)
	}
	wantAttr(t, flaky[1], "studio.node.status", "done")

	// The http tool's request carries the trace, its parent the node's span.
	call := find(t, spans, "node call", 1)[0]
	if got := st.target.all(); len(got) != 1 || got[0] != fmt.Sprintf("00-%x-%x-01", traceID, call.SpanId) {
		t.Fatalf("http tool's traceparent %q, want the call node's span %x", got, call.SpanId)
	}
	// The model call is a GenAI client span under the agent node's attempt.
	ask := find(t, spans, "node ask", 1)[0]
	wantAttr(t, ask, "studio.node.kind", "agent")
	wantAttr(t, ask, "studio.node.agent", "writer")
	chat := find(t, spans, "chat m-large", 1)[0]
	childOf(t, chat, ask)
	if chat.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Fatalf("model span kind %v", chat.Kind)
	}
	wantAttr(t, chat, "gen_ai.operation.name", "chat")
	wantAttr(t, chat, "gen_ai.request.model", "m-large")
	wantAttr(t, chat, "gen_ai.response.model", "m-large-2026-01")
	wantAttr(t, chat, "gen_ai.usage.input_tokens", "1200")
	wantAttr(t, chat, "gen_ai.usage.output_tokens", "300")
	if got := st.model.all(); len(got) != 1 || got[0] != fmt.Sprintf("00-%x-%x-01", traceID, chat.SpanId) {
		t.Fatalf("model request's traceparent %q, want the chat span %x", got, chat.SpanId)
	}
	if st.rcv.svc != "studio-under-test" {
		t.Fatalf("service.name %q", st.rcv.svc)
	}

	// Logs: the run's lines carry its trace.
	if logs := st.logs.String(); !strings.Contains(logs, "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id="+hex.EncodeToString(run.SpanId)) {
		t.Fatalf("no run log line with the trace and run span ids:\n%s", logs)
	}

	// Cost: 1200 input and 300 output tokens at 2.5 and 10 per million.
	const cost = (1200*2.5 + 300*10) / 1e6
	_, u := st.do(t, "GET", "/v1/runs/"+id+"/usage", nil)
	total, _ := u["total"].(map[string]any)
	nodes, _ := u["nodes"].([]any)
	if total["input_tokens"] != 1200.0 || total["output_tokens"] != 300.0 || total["cost"] != cost || u["priced"] != true ||
		len(nodes) != 1 || nodes[0].(map[string]any)["node_id"] != "ask" || nodes[0].(map[string]any)["cost"] != cost {
		t.Fatalf("run usage %v", u)
	}
	_, agg := st.do(t, "GET", "/v1/usage?by=agent&bucket=hour", nil)
	keys, _ := agg["keys"].([]any)
	if len(keys) != 1 || keys[0].(map[string]any)["key"] != "writer" || keys[0].(map[string]any)["cost"] != cost {
		t.Fatalf("usage by agent %v", agg)
	}
	_, agg = st.do(t, "GET", "/v1/usage?by=chain", nil)
	keys, _ = agg["keys"].([]any)
	if len(keys) != 1 || keys[0].(map[string]any)["key"] != chainID || keys[0].(map[string]any)["name"] != "traced" || keys[0].(map[string]any)["input_tokens"] != 1200.0 {
		t.Fatalf("usage by chain %v", agg)
	}
	if code, m := st.do(t, "GET", "/v1/usage?by=model", nil); code != http.StatusBadRequest {
		t.Fatalf("by=model: %d %v", code, m)
	}
	_, met := st.do(t, "GET", "/metrics", nil)
	text, _ := met["text"].(string)
	for _, line := range []string{`studio_model_tokens_total{model="m-large",type="input"} 1200`, `studio_model_tokens_total{model="m-large",type="output"} 300`, `studio_model_calls_total{model="m-large"} 1`} {
		if !strings.Contains(text, line) {
			t.Fatalf("/metrics lacks %s", line)
		}
	}
}

// TestTraceMap: a map node's span holds one span per item of its body.
func TestTraceMap(t *testing.T) {
	st := newStudio(t)
	doc := example(t, "map.json")
	id := st.start(t, st.createChain(t, string(doc)), map[string]any{"files": []any{"a", "b", "c"}})
	st.waitRun(t, id, "completed")
	spans := st.rcv.runSpans(id)
	run := find(t, spans, "run", 1)[0]
	batch := find(t, spans, "node batch", 1)[0]
	childOf(t, batch, run)
	wantAttr(t, batch, "studio.node.kind", "map")
	items := find(t, spans, "node process_file", 3)
	seen := map[string]bool{}
	for _, s := range items {
		childOf(t, s, batch)
		wantAttr(t, s, "studio.node.status", "done")
		seen[attr(s, "studio.node.item")] = true
	}
	if !seen["0"] || !seen["1"] || !seen["2"] {
		t.Fatalf("items %v", seen)
	}
	childOf(t, find(t, spans, "node summary", 1)[0], run)
}

// TestTracePauseResume: the resume of a paused run continues its trace: a
// span under the run's first span, linked to it, holding the nodes that ran
// after the pause.
func TestTracePauseResume(t *testing.T) {
	st := newStudio(t)
	doc := example(t, "approval.json")
	id := st.start(t, st.createChain(t, string(doc)), map[string]any{"amount": 10, "customer": "bob"})
	st.waitRun(t, id, "paused")
	first := find(t, st.rcv.runSpans(id), "run", 1)[0]
	wantAttr(t, first, "studio.run.status", "paused")
	approve := find(t, st.rcv.runSpans(id), "node approve", 1)[0]
	childOf(t, approve, first)
	wantAttr(t, approve, "studio.node.status", "paused")
	wantAttr(t, approve, "studio.node.kind", "interrupt")

	if code, m := st.do(t, "POST", "/v1/runs/"+id+"/resume", map[string]any{"resume_value": map[string]any{"approved": true}}); code >= 300 {
		t.Fatalf("resume: %d %v", code, m)
	}
	st.waitRun(t, id, "completed")
	spans := st.rcv.trace(first.TraceId)
	resume := find(t, spans, "run resume", 1)[0]
	childOf(t, resume, first)
	if len(resume.Links) != 1 || !bytes.Equal(resume.Links[0].SpanId, first.SpanId) {
		t.Fatalf("resume span links %v, want the run's first span", resume.Links)
	}
	wantAttr(t, resume, "studio.run.status", "completed")
	childOf(t, find(t, spans, "node pay", 1)[0], resume)
	childOf(t, find(t, spans, "node decide", 1)[0], resume)
	wantAttr(t, find(t, spans, "node notify", 1)[0], "studio.node.skip_reason", engine.ReasonBranchNotTaken)
}

// TestTraceA2EJoinsTheCallersTrace: an A2E request's traceparent makes its
// run a child of the caller's span.
func TestTraceA2EJoinsTheCallersTrace(t *testing.T) {
	st := newStudio(t)
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	code, m := st.do(t, "POST", "/v1/a2e", map[string]any{"type": "chain/req", "id": "t1", "version": "1.0", "streaming": false,
		"entry_node": "e", "initial_input": map[string]any{}, "nodes": []any{map[string]any{"node_id": "e", "kind": "tool", "name": "echo", "input": map[string]any{"x": 1}}}},
		"traceparent", caller)
	if code != http.StatusOK || m["success"] != true {
		t.Fatalf("a2e: %d %v", code, m)
	}
	traceID, _ := hex.DecodeString("0af7651916cd43dd8448eb211c80319c")
	var run *tracepb.Span
	testutil.Eventually(t, 10*time.Second, func() error {
		st.tracer.Flush(context.Background())
		for _, s := range st.rcv.trace(traceID) {
			if s.Name == "run a2e" {
				run = s
				return nil
			}
		}
		return errors.New("no run a2e span in the caller's trace yet")
	})
	if hex.EncodeToString(run.ParentSpanId) != "b7ad6b7169203331" {
		t.Fatalf("a2e run's parent %x, want the caller's span", run.ParentSpanId)
	}
	childOf(t, find(t, st.rcv.trace(traceID), "node e", 1)[0], run)
}
