package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
)

// liveProgress follows runID's live events (runs.Watch) and returns the
// highest seq seen so far (math.MaxInt64 once the run stopped): tests wait
// on the run's own events, not on time. Call it right after the start.
func liveProgress(t testing.TB, srv *Server, runID string) func() int64 {
	var seq atomic.Int64
	watch, err := service(srv).Watch(runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)
	// Only the live events count here: a gap is not filled from the store.
	noReplay := func(_ context.Context, after int64) (int64, error) { return after, nil }
	see := func(ev *runs.LiveEvent) error {
		seq.Store(max(seq.Load(), ev.Seq))
		return nil
	}
	go func() {
		for {
			_, open := <-watch.C()
			state, _ := watch.Next(context.Background(), open, noReplay, see)
			if state != runs.WatchOpen || !open {
				seq.Store(math.MaxInt64)
				return
			}
		}
	}()
	return seq.Load
}

// gatedRegistry is the test registry plus a "gate" tool that returns once
// open is called.
func gatedRegistry() (reg *engine.Registry, open func()) {
	reg = testRegistry()
	gate, open := gateTool()
	reg.Register("gate", gate)
	return reg, open
}

// gateTool is a tool that returns once open is called (open may be called
// more than once): a run that waits for the test, not for the clock.
func gateTool() (fn tool.Func, open func()) {
	gate := make(chan struct{})
	var once sync.Once
	fn = func(ctx context.Context, _ map[string]any, _ tool.Emitter) (any, error) {
		select {
		case <-gate:
			return "open", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return fn, func() { once.Do(func() { close(gate) }) }
}

// delayChain is a linear chain of n delay nodes of ms milliseconds each.
func delayChain(name string, n int, ms int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"name":%q,"nodes":[`, name)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"node_id":"n%d","kind":"tool","name":"delay","input":{"ms":%d}}`, i, ms)
	}
	b.WriteString(`],"edges":[`)
	for i := 1; i < n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"source":"n%d","target":"n%d"}`, i-1, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

type streamResult struct {
	events []engine.Event
	run    map[string]any // the final `run` event, nil when the stream ended without it
	frames []sseFrame
}

// readStream reads frames until the stream ends or stop says so.
func readStream(t testing.TB, body io.Reader, stop func(engine.Event) bool) streamResult {
	t.Helper()
	var out streamResult
	rd := newSSEReader(body)
	for {
		f, err := rd.next()
		if err != nil {
			return out
		}
		out.frames = append(out.frames, f)
		if f.Comment {
			continue
		}
		switch f.Event {
		case "run":
			if err := json.Unmarshal([]byte(f.Data), &out.run); err != nil {
				t.Errorf("run event: %v", err)
			}
		case "error":
			t.Errorf("stream error event: %s", f.Data)
		default:
			var ev engine.Event
			if err := json.Unmarshal([]byte(f.Data), &ev); err != nil {
				t.Errorf("event: %v: %s", err, f.Data)
				return out
			}
			if f.ID != strconv.FormatInt(ev.Seq, 10) || f.Event != string(ev.Phase) {
				t.Errorf("frame id/event %q/%q do not match event seq %d phase %s", f.ID, f.Event, ev.Seq, ev.Phase)
			}
			out.events = append(out.events, ev)
			if stop != nil && stop(ev) {
				return out
			}
		}
	}
}

func startChainRun(t testing.TB, ts *httptest.Server, doc string) string {
	t.Helper()
	id := createChain(t, ts, doc)
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{}`)
	wantStatus(t, r, http.StatusAccepted)
	return r.json(t)["run_id"].(string)
}

// checkSeqs fails unless seqs run 1..n with no gap and no duplicate.
func checkSeqs(t testing.TB, evs []engine.Event) {
	t.Helper()
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d (want %d): lost or duplicated events", i, ev.Seq, i+1)
		}
	}
}

func TestSSEStreamsRunAndCloses(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	runID := startChainRun(t, ts, delayChain("sse", 5, 20))
	res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := readStream(t, res.Body, nil)
	checkSeqs(t, out.events)
	if len(out.events) != 10 { // start + done per node
		t.Fatalf("%d events", len(out.events))
	}
	if out.run == nil || out.run["status"] != "completed" || out.run["id"] != runID {
		t.Fatalf("final run event: %v", out.run)
	}

	// A finished run replays and closes; ?after= skips what was seen.
	res2, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events?after=4")
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	out2 := readStream(t, res2.Body, nil)
	if len(out2.events) != 6 || out2.events[0].Seq != 5 || out2.run == nil {
		t.Fatalf("replay after 4: %d events, run %v", len(out2.events), out2.run != nil)
	}

	r := do(t, ts, "GET", "/v1/runs/nope/events", nil)
	wantStatus(t, r, 404)
	r = do(t, ts, "GET", "/v1/runs/"+runID+"/events", nil, "Last-Event-ID", "x")
	wantStatus(t, r, 400)
}

// A watcher that disconnects mid-run and reconnects with Last-Event-ID gets
// every event exactly once.
func TestSSEReconnectWithLastEventID(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	runID := startChainRun(t, ts, delayChain("reconnect", 20, 15))
	seen := liveProgress(t, srv, runID)

	ctx, cancel := context.WithCancel(context.Background())
	res, err := openSSE(ctx, ts.Client(), ts.URL+"/v1/runs/"+runID+"/events")
	if err != nil {
		t.Fatal(err)
	}
	first := readStream(t, res.Body, func(ev engine.Event) bool { return ev.Seq >= 9 })
	cancel()
	res.Body.Close()
	if len(first.events) == 0 || first.run != nil {
		t.Fatalf("first leg: %d events, run %v", len(first.events), first.run)
	}
	last := first.events[len(first.events)-1].Seq

	// Events go on while the watcher is away.
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := seen(); n < last+3 {
			return fmt.Errorf("the run is at seq %d; want a few past %d while the watcher is away", n, last)
		}
		return nil
	})
	res, err = openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events", "Last-Event-ID", strconv.FormatInt(last, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	second := readStream(t, res.Body, nil)
	all := append(first.events, second.events...)
	checkSeqs(t, all)
	if len(all) != 40 || second.run == nil || second.run["status"] != "completed" {
		t.Fatalf("%d events, run %v", len(all), second.run)
	}
}

// Several watchers at once, one of them joining late: each gets every event
// once, in order.
func TestSSEManyWatchers(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	runID := startChainRun(t, ts, delayChain("many", 10, 10))
	seen := liveProgress(t, srv, runID)
	var wg sync.WaitGroup
	results := make([]streamResult, 8)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Watcher i joins once the run is past seq 2i.
			if err := testutil.Poll(10*time.Second, func() error {
				if seen() < int64(2*i) {
					return fmt.Errorf("watcher %d: the run is not past seq %d", i, 2*i)
				}
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
			res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events")
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			results[i] = readStream(t, res.Body, nil)
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		checkSeqs(t, r.events)
		if len(r.events) != 20 || r.run == nil {
			t.Fatalf("watcher %d: %d events, run %v", i, len(r.events), r.run != nil)
		}
	}
}

// A slow watcher is cut loose (the hub drops it); it ends without the run
// event and catches up from the store when it reconnects.
func TestSSEDroppedWatcherCatchesUp(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	// A burst of progress events in a tight loop: no watcher drains a
	// one-event buffer that fast, so the hub cuts it loose.
	const burst = 2000
	reg.Register("burst", func(_ context.Context, _ map[string]any, emit tool.Emitter) (any, error) {
		for i := range burst {
			emit(i)
		}
		return burst, nil
	})
	// The run stays active after the burst, until the first stream ended:
	// the watcher is dropped, not merely replayed a finished run.
	hold, release := gateTool()
	reg.Register("hold", hold)
	_, ts := newTestServerOpts(t, Config{}, reg, func(o *runs.Options) { o.HubBuffer = 1 })
	// A gate that opens once the watcher is connected, the burst, the hold.
	runID := startChainRun(t, ts, `{"name":"drop","nodes":[{"node_id":"gate","kind":"tool","name":"gate"},
		{"node_id":"burst","kind":"tool","name":"burst"},{"node_id":"hold","kind":"tool","name":"hold"}],
		"edges":[{"source":"gate","target":"burst"},{"source":"burst","target":"hold"}]}`)
	var all []engine.Event
	dropped := 0
	for attempt := 0; attempt < 100; attempt++ {
		hdr := []string{}
		if len(all) > 0 {
			hdr = []string{"Last-Event-ID", strconv.FormatInt(all[len(all)-1].Seq, 10)}
		}
		res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events", hdr...)
		if err != nil {
			t.Fatal(err)
		}
		if attempt == 0 {
			open() // the stream is subscribed once its headers are here
		}
		out := readStream(t, res.Body, nil)
		res.Body.Close()
		release()
		all = append(all, out.events...)
		if out.run != nil {
			break
		}
		dropped++
	}
	checkSeqs(t, all)
	if want := 2 + 2 + burst + 2; len(all) != want {
		t.Fatalf("%d events after %d reconnects, want %d", len(all), dropped, want)
	}
	if dropped == 0 {
		t.Fatalf("the watcher was never dropped; the test proves nothing")
	}
	t.Logf("caught up after %d drops", dropped)
}

func TestSSEPausedRunClosesAndHeartbeat(t *testing.T) {
	t.Parallel()
	reg, open := gatedRegistry()
	_, ts := newTestServerWith(t, Config{SSEHeartbeat: 30 * time.Millisecond}, reg)

	runID := startChainRun(t, ts, approvalDoc)
	waitRun(t, ts, runID)
	res, err := openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events")
	if err != nil {
		t.Fatal(err)
	}
	out := readStream(t, res.Body, nil)
	res.Body.Close()
	if out.run == nil || out.run["status"] != "paused" || len(out.run["pending"].([]any)) != 1 {
		t.Fatalf("paused run: %v", out.run)
	}
	if out.events[len(out.events)-1].Phase != engine.PhasePaused {
		t.Fatalf("last event %v", out.events[len(out.events)-1])
	}

	// Idle stream: heartbeats. The run waits at its gate until two have
	// come, then finishes and the stream ends with the run event.
	runID = startChainRun(t, ts, `{"name":"idle","nodes":[{"node_id":"g","kind":"tool","name":"gate"}]}`)
	res, err = openSSE(context.Background(), ts.Client(), ts.URL+"/v1/runs/"+runID+"/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := newSSEReader(res.Body)
	beats, ended := 0, false
	for !ended {
		f, err := rd.next()
		if err != nil {
			t.Fatalf("the stream ended after %d heartbeats without the run event: %v", beats, err)
		}
		switch {
		case f.Comment && f.Data == "heartbeat":
			if beats++; beats == 2 {
				open()
			}
		case f.Event == "run":
			ended = true
		}
	}
	if beats < 2 {
		t.Fatalf("%d heartbeats before the run ended", beats)
	}
}
