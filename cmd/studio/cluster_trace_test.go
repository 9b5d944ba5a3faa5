package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpans is an OTLP/HTTP receiver on loopback keeping every span the
// studio processes export (decoded with the OpenTelemetry protobufs).
type otlpSpans struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPSpans(t *testing.T) *otlpSpans {
	r := &otlpSpans{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ex collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(r.Close)
	return r
}

// named returns the spans of run runID named name.
func (r *otlpSpans) named(runID, name string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if s.Name != name {
			continue
		}
		for _, a := range s.Attributes {
			if a.Key == "studio.run.id" && a.Value.GetStringValue() == runID {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestClusterTakeoverContinuesTheTrace: the worker executing a run is
// killed mid-node; the worker that takes the run over continues its trace:
// its "run takeover" span is a child of (and links to) the run's first span,
// whose nodes the dead worker exported before it died.
func TestClusterTakeoverContinuesTheTrace(t *testing.T) {
	rcv := newOTLPSpans(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL) // every process started below exports here
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	api, ws, _, db := failCluster(t, 2, "--http-allow-private", "--lease-ttl", failTTL.String(), "--reaper-period", failReaper.String())
	calls := newCallCounter(t, "n3")
	doc := saveChain(t, api, httpChain())
	runID := startChainRun(t, api, doc, calls.input(uuid.NewString()))
	calls.waitCall(t, "n3#1", 30*time.Second)
	waitNodeEntries(t, db, runID, 2)
	deadline := time.Now().Add(10 * time.Second)
	for len(rcv.named(runID, "node n1")) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the first worker exports its ended spans
	}
	first := rcv.named(runID, "node n1")
	if len(first) != 1 {
		t.Fatalf("the first worker exported %d spans of node n1", len(first))
	}
	victim, _ := owner(t, db, ws, runID)
	victim.cmd.Process.Kill()
	victim.cmd.Wait()
	api.waitStatus(t, runID, "completed")
	var takeover []*tracepb.Span
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if takeover = rcv.named(runID, "run takeover"); len(takeover) == 1 && len(rcv.named(runID, "node n4")) == 1 {
			break
		}
	}
	if len(takeover) != 1 {
		t.Fatalf("%d takeover spans", len(takeover))
	}
	tk, n1 := takeover[0], first[0]
	if !bytes.Equal(tk.TraceId, n1.TraceId) {
		t.Fatalf("takeover in trace %x, the run's first nodes in %x", tk.TraceId, n1.TraceId)
	}
	// n1's parent is the first worker's run span (never exported: the
	// worker died before the run ended).
	if !bytes.Equal(tk.ParentSpanId, n1.ParentSpanId) || len(tk.Links) != 1 || !bytes.Equal(tk.Links[0].SpanId, n1.ParentSpanId) {
		t.Fatalf("takeover parent %x links %v, want the run's first span %x", tk.ParentSpanId, tk.Links, n1.ParentSpanId)
	}
	n4 := rcv.named(runID, "node n4")[0]
	if !bytes.Equal(n4.ParentSpanId, tk.SpanId) {
		t.Fatalf("node n4 under %x, want the takeover span %x", n4.ParentSpanId, tk.SpanId)
	}
}
