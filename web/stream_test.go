package web

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/a2ehttp"
	dto "github.com/prometheus/client_model/go"
)

// bigFinishedRun stores a completed run of n events whose outputs are
// size bytes each, as a run of large node outputs leaves it.
func bigFinishedRun(t testing.TB, db Store, id string, n, size int) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainName: "big", Kind: "run", Status: chain.StatusCompleted, Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	out := strings.Repeat("x", size)
	for i := 1; i <= n; i++ {
		ev := engine.Event{RunID: id, Seq: int64(i), NodeID: fmt.Sprintf("n%d", i), Phase: engine.PhaseDone, Time: time.Now(), Output: out}
		if err := db.AppendEvents(ctx, []engine.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
}

// liveHeap is the heap the objects live at a collection occupy: what the
// collection marked, not what the streams allocated while it ran (HeapAlloc
// after runtime.GC counts those too, and 200 streams churn megabytes).
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// metricSum adds up a metric's samples over its label sets.
func metricSum(t testing.TB, srv *Server, name string) float64 {
	t.Helper()
	fams, err := srv.Metrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += gaugeOrCounter(m)
		}
	}
	return sum
}

func gaugeOrCounter(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

// Two hundred clients that ask for the events of a finished run of 100
// events of 1 MB and never read hold less than 64 MiB between them, and
// the server cuts every one of them once the write timeout passes.
func TestStalledStreamsBoundedAndCut(t *testing.T) {
	const (
		streams = 200
		bound   = 64 << 20
		timeout = 3 * time.Second
		slack   = 20 * time.Second // a shared machine, or the race detector
	)
	srv, _ := newTestServerWith(t, Config{StreamWriteTimeout: timeout}, testRegistry())
	bigFinishedRun(t, srv.DB, "big1", 100, 1<<20)
	// A server of its own: the API checker's recorder would keep bodies.
	ts := httptest.NewUnstartedServer(srv.Handler())
	// The connections the server closed: the reading client's stays open.
	var closed atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)

	// A reader that takes it all gets the whole run, ending with its result.
	res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/big1/events")
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, res.Body, nil)
	res.Body.Close()
	if len(got.events) != 100 || got.run == nil {
		t.Fatalf("a reading client got %d events, run %v", len(got.events), got.run != nil)
	}
	checkSeqs(t, got.events)
	got = streamResult{}

	base := liveHeap()
	maxGrowth := uint64(0)
	sample := func() error {
		if h := liveHeap(); h > base {
			maxGrowth = max(maxGrowth, h-base)
		}
		if maxGrowth >= bound {
			return fmt.Errorf("the heap grew by %d MiB with stalled streams open, over %d MiB", maxGrowth>>20, bound>>20)
		}
		return nil
	}
	addr := strings.TrimPrefix(ts.URL, "http://")
	stalled := &testutil.Stalled{}
	t.Cleanup(stalled.Close)
	req := testutil.GetRequest(addr, "/v1/runs/big1/events", "Accept: text/event-stream")
	for len(stalled.Conns) < streams {
		if err := stalled.Add(addr, 4, req); err != nil {
			t.Fatal(err)
		}
		if err := sample(); err != nil {
			t.Fatalf("after %d connections: %v", len(stalled.Conns), err)
		}
	}
	opened := time.Now()

	// Every one is counted as an open stream while it stalls...
	seen := 0.0
	cut := func() float64 {
		return metricSum(t, srv, "studio_stream_write_timeouts_total") + metricSum(t, srv, "studio_stream_budget_timeouts_total")
	}
	testutil.Eventually(t, timeout+slack, func() error {
		if err := sample(); err != nil {
			return nil // reported below
		}
		seen = max(seen, metricSum(t, srv, "studio_stream_connections")+cut())
		if seen < streams {
			return fmt.Errorf("%v of %d streams counted", seen, streams)
		}
		return nil
	})
	if err := sample(); err != nil {
		t.Fatal(err)
	}
	// ...and cut within the write timeout (and the machine's slack).
	testutil.Eventually(t, timeout+slack-time.Since(opened), func() error {
		if err := sample(); err != nil {
			return nil
		}
		if n := cut(); n < streams {
			return fmt.Errorf("%v of %d stalled streams cut; %v open, %v bytes buffered", n, streams,
				metricSum(t, srv, "studio_stream_connections"), metricSum(t, srv, "studio_stream_buffered_bytes"))
		}
		if n := metricSum(t, srv, "studio_stream_connections"); n != 0 {
			return fmt.Errorf("%v streams still open", n)
		}
		if n := closed.Load(); n < streams {
			return fmt.Errorf("the server closed %d of the %d connections", n, streams)
		}
		return nil
	})
	if err := sample(); err != nil {
		t.Fatal(err)
	}
	if b := metricSum(t, srv, "studio_stream_buffered_bytes"); b != 0 {
		t.Fatalf("%v bytes still buffered with every stream closed", b)
	}
	t.Logf("%d stalled streams: heap grew by at most %.1f MiB; all cut %v after the last opened", streams, float64(maxGrowth)/(1<<20), time.Since(opened).Round(time.Millisecond))
}

// POST /v1/a2e answered as SSE, to a client that never reads: the server
// cuts it within the write timeout (which cancels its run) and holds
// nothing after.
func TestStalledA2EAnswerCut(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	srv, _ := newTestServerWith(t, Config{StreamWriteTimeout: timeout}, testRegistry())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	body := bigA2ERequest("big")
	addr := strings.TrimPrefix(ts.URL, "http://")
	req := fmt.Sprintf("POST /v1/a2e HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body)
	testutil.OpenStalled(t, addr, 2, req)

	testutil.Eventually(t, timeout+45*time.Second, func() error { // slack for -race
		cut := metricSum(t, srv, "studio_stream_write_timeouts_total") + metricSum(t, srv, "studio_stream_budget_timeouts_total")
		open := metricSum(t, srv, "studio_stream_connections")
		if cut < 2 || open != 0 {
			return fmt.Errorf("%v of 2 stalled A2E answers cut, %v streams open", cut, open)
		}
		return nil
	})
	if b := metricSum(t, srv, "studio_stream_buffered_bytes"); b != 0 {
		t.Fatalf("%v bytes still buffered", b)
	}
	waitRunsEnded(t, srv)
}

// waitRunsEnded waits for the runs of a test's big A2E requests to end on
// their own: a cut stream does not stop its run, and under the race detector
// the checkpoint of twenty 1 MB entries that a shutdown writes can take
// longer than the shutdown's own deadline.
func waitRunsEnded(t *testing.T, srv *Server) {
	t.Helper()
	testutil.Eventually(t, 3*time.Minute, func() error {
		if n := srv.Runs.ActiveCount(); n != 0 {
			return fmt.Errorf("%d runs still going", n)
		}
		return nil
	})
}

// bigA2ERequest is a chain/req of twenty echo nodes in a line, each passing
// on a 1 MB input: twenty 1 MB events, more than the sockets' buffers hold.
func bigA2ERequest(id string) string {
	var nodes []string
	for i := range 20 {
		next := ""
		if i < 19 {
			next = fmt.Sprintf(`,"next_node":"n%d"`, i+1)
		}
		nodes = append(nodes, fmt.Sprintf(`{"node_id":"n%d","kind":"tool","name":"echo"%s}`, i, next))
	}
	return fmt.Sprintf(`{"type":"chain/req","id":%q,"version":"1.0","nodes":[%s],"entry_node":"n0","initial_input":{"text":%q},"streaming":true}`,
		id, strings.Join(nodes, ","), strings.Repeat("z", 1<<20))
}

// An A2E session's stream nobody reads is cut within the write timeout.
func TestStalledA2ESessionStreamCut(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	srv, _ := newTestServerWith(t, Config{StreamWriteTimeout: timeout}, testRegistry())
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	r := do(t, ts, "POST", "/v1/a2e/session", nil)
	wantStatus(t, r, 200)
	session := r.json(t)["session_id"].(string)
	addr := strings.TrimPrefix(ts.URL, "http://")
	testutil.OpenStalled(t, addr, 1, testutil.GetRequest(addr, "/v1/a2e/stream", "Accept: text/event-stream", HeaderSessionID+": "+session))
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := srv.streams.Connections(a2ehttp.StreamSession); n != 1 {
			return fmt.Errorf("%d session streams open", n)
		}
		return nil
	})
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/send", bigA2ERequest("s1"), "Content-Type", "text/plain", HeaderSessionID, session), 202)
	testutil.Eventually(t, timeout+45*time.Second, func() error { // slack for -race
		cut := metricSum(t, srv, "studio_stream_write_timeouts_total") + metricSum(t, srv, "studio_stream_budget_timeouts_total")
		if open := srv.streams.Connections(""); cut < 1 || open != 0 {
			return fmt.Errorf("%v stalled session streams cut, %v streams open", cut, open)
		}
		return nil
	})
	waitRunsEnded(t, srv)
}
