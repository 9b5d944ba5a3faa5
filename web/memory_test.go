package web

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/sqlite"
)

// heapSampler records the largest heap seen while it runs, reading
// runtime/metrics every 2 ms (no stop of the world, unlike ReadMemStats):
// the live heap (marked live by a collection: what the run holds) and the
// heap with the garbage not yet collected (which the collector's pace
// decides, up to twice the live heap at GOGC=100).
type heapSampler struct {
	stop, done chan struct{}
	mu         sync.Mutex
	peak, live uint64
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			h.mu.Lock()
			h.peak = max(h.peak, s[0].Value.Uint64())
			h.live = max(h.live, s[1].Value.Uint64())
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// Stop returns the peaks: the heap with its garbage, and the live heap.
func (h *heapSampler) Stop() (peak, live uint64) {
	close(h.stop)
	<-h.done
	return h.peak, h.live
}

// heapInuse is HeapInuse after one collection: what a pool or a cache
// keeps past a collection shows, as it does in a server left idle.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// The repro of a run's memory: a map of 100 items, each a 1 MB template
// output (100 MB of outputs, within --max-output-bytes), on a real server.
// The heap's peak while it runs stays within mapPeakFactor × the outputs'
// 100 MB, and once it has ended, and its answer, its large output and its
// page were read as a poller would, the heap returns to where it was.
func TestMapOfLargeOutputsMemory(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("renders 100 MB of template output: minutes under -race; run it without -race or -short")
	}
	const outputs = 100_000_000
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv, err := New(Config{Logger: testLogger()}, testDeps(t, db, testRegistry(), nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ts := httptest.NewServer(srv.Handler()) // no OpenAPI check: it records answers
	t.Cleanup(ts.Close)
	id := createChain(t, ts, `{"name":"wide map","nodes":[
		{"node_id":"m","kind":"map","items_path":"input.items","map_node":"big"},
		{"node_id":"big","kind":"tool","name":"template","input":{"template":"{{printf \"%1000000d\" 1}}"}}]}`)
	items := make([]string, 100)
	for k := range items {
		items[k] = fmt.Sprint(k)
	}
	input := `{"input":{"items":[` + strings.Join(items, ",") + `]}}`
	base := heapInuse()
	hs := sampleHeap()
	r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", input)
	wantStatus(t, r, http.StatusAccepted)
	runID := r.json(t)["run_id"].(string)
	testutil.Eventually(t, 5*time.Minute, func() error {
		if srv.Runs.Active(runID) {
			return fmt.Errorf("run %s is still active", runID)
		}
		return nil
	})
	peak, live := hs.Stop()
	// Read it as the run page and a poller do: the answer a few times, the
	// large output by its link, the page.
	get := func(path string) int64 {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		n, _ := io.Copy(io.Discard, res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		return n
	}
	var answer int64
	for range 3 {
		answer = get("/v1/runs/" + runID)
	}
	out := get("/v1/runs/" + runID + "/nodes/m/output")
	get("/runs/" + runID)
	after := heapInuse()
	t.Logf("heap in use %d MiB before; while the run ran, live heap peak %d MiB (%.1f× its %d MB of outputs), with garbage %d MiB (%.1f×); %d MiB after it ended and was read (answer %d bytes, output %d bytes)",
		base>>20, live>>20, float64(live-min(live, base))/outputs, outputs/1_000_000, peak>>20, float64(peak-min(peak, base))/outputs, after>>20, answer, out)
	if answer > 64<<10 {
		t.Errorf("the run's answer is %d bytes: its outputs are carried, not elided", answer)
	}
	if out < outputs {
		t.Errorf("the output's link streamed %d bytes, want its 100 MB", out)
	}
	if limit := uint64(mapPeakFactor * outputs); live > base+limit {
		t.Errorf("live heap peak %d MiB over the %d MiB baseline: more than %d× the run’s %d MB of outputs", live>>20, base>>20, mapPeakFactor, outputs/1_000_000)
	}
	if after > base+heapTolerance {
		t.Errorf("heap in use %d MiB after the run ended and was read, %d MiB before: more than %d MiB stays", after>>20, base>>20, heapTolerance>>20)
	}
}

// mapPeakFactor is the multiple of a run's outputs its live heap stays
// within (docs/reliability.md states it); heapTolerance what may stay in
// use after runs end (caches, pools, the store's page cache).
const (
	mapPeakFactor = 8
	heapTolerance = 32 << 20
)

// With a memory budget the server is near, a new run waits as queued even
// with slots free, and its answer and stream say why, naming the flag; once
// the running run ends, it runs.
func TestMemoryBudgetQueuesRuns(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerOpts(t, Config{}, testRegistry(), func(o *runs.Options) { o.MaxMemory = 1 })
	slow := startChainRun(t, ts, delayChain("slow", 1, 60_000))
	waitStatus := func(id, status string) map[string]any {
		t.Helper()
		var m map[string]any
		testutil.Eventually(t, 20*time.Second, func() error {
			m = do(t, ts, "GET", "/v1/runs/"+id, nil).json(t)
			if m["status"] != status {
				return fmt.Errorf("run %s is %v, want %s", id, m["status"], status)
			}
			return nil
		})
		return m
	}
	waitStatus(slow, "running")
	quick := startChainRun(t, ts, fmt.Sprintf(linearDoc, "quick"))
	m := waitStatus(quick, "queued")
	if why, _ := m["queue_reason"].(string); !strings.Contains(why, "--max-memory") || m["queue_position"] != float64(1) {
		t.Fatalf("queued run: position %v, reason %q; want 1 and the memory budget's flag named", m["queue_position"], why)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := openSSE(sctx, ts.Client(), ts.URL+"/v1/runs/"+quick+"/events")
	if err != nil {
		t.Fatal(err)
	}
	var frame strings.Builder // up to the blank line that ends it
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadString('\n')
		frame.WriteString(line)
		if err != nil || line == "\n" {
			break
		}
	}
	res.Body.Close()
	if s := frame.String(); !strings.HasPrefix(s, "event: queued\n") || !strings.Contains(s, `"reason":"waiting for memory`) {
		t.Errorf("the queued run's stream starts %q, want a queued frame with the reason", s)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/runs/"+slow+"/cancel", nil), http.StatusAccepted)
	if m := waitRun(t, ts, quick); m["status"] != "completed" {
		t.Fatalf("the held run after the other ended: %v", m["status"])
	}
}
