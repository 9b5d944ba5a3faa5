package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/web/ops"
)

// The load test (docs/reliability.md "Under load"): for
// STUDIO_LOAD_DURATION (default 10s; the documented figure is 2m), on
// loopback,
//
//   - 50 workers each keep one run of a 100-node chain going (50 concurrent
//     runs), each run watched by 4 SSE watchers (200 watchers);
//   - 20 editors each save their own chain every 200 ms (PUT with If-Match)
//     and re-read it, expecting exactly the version they saved.
//
// No request may fail, every watcher must see every event of its run exactly
// once and in order (seq 1..n, the same n as the stored history), and the
// p99 API latency and the memory high-water mark are logged.
//
//	STUDIO_LOAD_DURATION=2m go test ./web -run TestLoad -count=1 -v
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	dur := 10 * time.Second
	if v := os.Getenv("STUDIO_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > 30*time.Minute {
			t.Fatalf("STUDIO_LOAD_DURATION=%q: want a duration up to 30m", v)
		}
		dur = d
	}
	const (
		runners        = 50
		watchersPerRun = 4
		editors        = 20
		nodes          = 100
		maxIterations  = 100_000 // per loop, besides the deadline
	)
	srv, ts := newTestServer(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}}
	defer client.CloseIdleConnections()

	// A 100-node chain: a line of echo nodes, one in ten a 10 ms delay, so
	// each run lasts long enough for watchers to join it while it runs.
	var b strings.Builder
	b.WriteString(`{"name":"load","nodes":[`)
	for i := 0; i < nodes; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%10 == 5 {
			fmt.Fprintf(&b, `{"node_id":"n%d","kind":"tool","name":"delay","input":{"ms":10}}`, i)
		} else {
			fmt.Fprintf(&b, `{"node_id":"n%d","kind":"tool","name":"echo","input_map":{"i":"input.i"}}`, i)
		}
	}
	b.WriteString(`],"edges":[`)
	for i := 1; i < nodes; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"source":"n%d","target":"n%d"}`, i-1, i)
	}
	b.WriteString(`]}`)
	chainID := createChain(t, ts, b.String())

	var (
		latMu     sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		errMu     sync.Mutex
		errs      []string
		runsDone  atomic.Int64
		saves     atomic.Int64
		events    atomic.Int64
		watchers  atomic.Int64
		maxWatch  atomic.Int64
	)
	fail := func(format string, args ...any) {
		failures.Add(1)
		errMu.Lock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		errMu.Unlock()
	}
	// call makes one API request and records its latency.
	call := func(method, path string, body []byte, headers ...string) (int, http.Header, []byte, error) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, ts.URL+path, rd)
		if err != nil {
			return 0, nil, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		out, err := io.ReadAll(res.Body)
		res.Body.Close()
		d := time.Since(start)
		latMu.Lock()
		latencies = append(latencies, d)
		latMu.Unlock()
		return res.StatusCode, res.Header, out, err
	}
	// watch reads a run's event stream to its end and returns the seqs seen.
	watch := func(ctx context.Context, runID string) ([]int64, bool, error) {
		n := watchers.Add(1)
		defer watchers.Add(-1)
		for {
			m := maxWatch.Load()
			if n <= m || maxWatch.CompareAndSwap(m, n) {
				break
			}
		}
		res, err := openSSE(ctx, client, ts.URL+"/v1/runs/"+runID+"/events")
		if err != nil {
			return nil, false, err
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			return nil, false, fmt.Errorf("events: %d", res.StatusCode)
		}
		rd := newSSEReader(res.Body)
		var seqs []int64
		for {
			f, err := rd.next()
			if err == io.EOF {
				return seqs, false, nil
			}
			if err != nil {
				return seqs, false, err
			}
			if f.Comment || f.Event == "queued" { // waiting for a slot: no seq yet
				continue
			}
			if f.Event == "run" {
				return seqs, true, nil
			}
			seq, err := strconv.ParseInt(f.ID, 10, 64)
			if err != nil {
				return seqs, false, fmt.Errorf("event id %q", f.ID)
			}
			seqs = append(seqs, seq)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), dur+2*time.Minute)
	defer cancel()
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	var memMu sync.Mutex
	var peakHeap, peakSys uint64
	stopMem := make(chan struct{})
	memDone := make(chan struct{})
	go func() {
		defer close(memDone)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			memMu.Lock()
			peakHeap = max(peakHeap, ms.HeapAlloc)
			peakSys = max(peakSys, ms.Sys)
			memMu.Unlock()
			select {
			case <-stopMem:
				return
			case <-tick.C:
			}
		}
	}()

	for w := 0; w < runners; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for it := 0; it < maxIterations && time.Now().Before(deadline); it++ {
				body, _ := json.Marshal(map[string]any{"input": map[string]any{"i": w*maxIterations + it}})
				code, _, out, err := call("POST", "/v1/chains/"+chainID+"/runs", body)
				if err != nil || code != http.StatusAccepted {
					fail("start run: %d %v %.200s", code, err, out)
					continue
				}
				var started struct {
					RunID string `json:"run_id"`
				}
				_ = json.Unmarshal(out, &started)
				var wwg sync.WaitGroup
				seen := make([][]int64, watchersPerRun)
				for k := 0; k < watchersPerRun; k++ {
					wwg.Add(1)
					go func(k int) {
						defer wwg.Done()
						seqs, ended, err := watch(ctx, started.RunID)
						if err != nil || !ended {
							fail("watch %s: ended=%v err=%v after %d events", started.RunID, ended, err, len(seqs))
						}
						seen[k] = seqs
					}(k)
				}
				wwg.Wait()
				// The stored history, replayed after the end, is the reference.
				stored, ended, err := watch(ctx, started.RunID)
				if err != nil || !ended {
					fail("replay %s: %v", started.RunID, err)
					continue
				}
				for i, s := range stored {
					if s != int64(i+1) {
						fail("run %s: stored seqs not 1..n at %d: %d", started.RunID, i, s)
						break
					}
				}
				for k, seqs := range seen {
					if len(seqs) != len(stored) {
						fail("run %s watcher %d: %d events, stored %d", started.RunID, k, len(seqs), len(stored))
						continue
					}
					for i, s := range seqs {
						if s != int64(i+1) {
							fail("run %s watcher %d: event %d has seq %d (lost or reordered)", started.RunID, k, i, s)
							break
						}
					}
					events.Add(int64(len(seqs)))
				}
				code, _, out, err = call("GET", "/v1/runs/"+started.RunID, nil)
				if err != nil || code != 200 || !bytes.Contains(out, []byte(`"status":"completed"`)) {
					fail("run %s: %d %v %.300s", started.RunID, code, err, out)
				}
				runsDone.Add(1)
			}
		}(w)
	}
	for e := 0; e < editors; e++ {
		wg.Add(1)
		go func(e int) {
			defer wg.Done()
			doc := fmt.Sprintf(linearDoc, fmt.Sprintf("editor-%d", e))
			code, _, out, err := call("POST", "/v1/chains", []byte(doc))
			if err != nil || code != http.StatusCreated {
				fail("editor %d create: %d %v %.200s", e, code, err, out)
				return
			}
			var ch struct {
				ID      string `json:"id"`
				Version int    `json:"version"`
			}
			_ = json.Unmarshal(out, &ch)
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for it := 0; it < maxIterations && time.Now().Before(deadline); it++ {
				<-tick.C
				var d map[string]any
				_ = json.Unmarshal([]byte(doc), &d)
				d["description"] = fmt.Sprintf("edit %d", it)
				body, _ := json.Marshal(d)
				code, h, out, err := call("PUT", "/v1/chains/"+ch.ID, body, "If-Match", ops.Etag(ch.Version))
				if err != nil || code != 200 {
					fail("editor %d save on v%d: %d %v %.200s", e, ch.Version, code, err, out)
					return
				}
				if h.Get("ETag") != ops.Etag(ch.Version+1) {
					fail("editor %d: saved v%d, ETag %s", e, ch.Version, h.Get("ETag"))
				}
				code, _, out, err = call("GET", "/v1/chains/"+ch.ID, nil)
				var got struct {
					Version     int    `json:"version"`
					Description string `json:"description"`
				}
				_ = json.Unmarshal(out, &got)
				if err != nil || code != 200 || got.Version != ch.Version+1 || got.Description != d["description"] {
					fail("editor %d re-read: %d %v version %d, want %d", e, code, err, got.Version, ch.Version+1)
					return
				}
				ch.Version = got.Version
				saves.Add(1)
			}
		}(e)
	}
	wg.Wait()
	close(stopMem)
	<-memDone

	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}
	rss := "?"
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				rss = strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
			}
		}
	}
	var dbSize int64
	if st, err := os.Stat(srv.DB.(*sqlite.DB).Path()); err == nil {
		dbSize = st.Size()
	}
	t.Logf("load for %v: %d runs of %d nodes completed (%.1f/s), %d events delivered to watchers (%.0f/s), peak %d SSE watchers, %d saves re-read",
		dur, runsDone.Load(), nodes, float64(runsDone.Load())/dur.Seconds(), events.Load(), float64(events.Load())/dur.Seconds(), maxWatch.Load(), saves.Load())
	t.Logf("API requests: %d; latency p50 %v, p99 %v, max %v", len(latencies), pct(0.50), pct(0.99), pct(1))
	t.Logf("memory (test process: server and clients): peak heap %d MiB, peak Go runtime Sys %d MiB, peak RSS %s; database %d MiB",
		peakHeap>>20, peakSys>>20, rss, dbSize>>20)
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d failures, first ones:\n%s", n, strings.Join(errs, "\n"))
	}
	if runsDone.Load() < runners || saves.Load() < editors {
		t.Fatalf("too little work done: %d runs, %d saves", runsDone.Load(), saves.Load())
	}
	checkIntegrity(t, srv.DB.(*sqlite.DB).Path())
}
