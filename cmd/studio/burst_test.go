package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// procRSS is a process's resident memory now (VmRSS).
func procRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// metric reads one gauge from /metrics.
func metric(p *studioProc, name string) float64 {
	res, err := http.Get(p.url + "/metrics")
	if err != nil {
		return -1
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(rest, 64)
			return v
		}
	}
	return -1
}

// The two bursts of the issue against a real `studio serve` on loopback,
// with its default limits (the queue raised to hold the whole burst): 1,500
// runs of a 64-branch parallel of delays (scaled down from 40 s to 300 ms
// so that it ends in about a minute), then 8,000 event-stream watchers of
// one run. It prints the figures docs/reliability.md quotes.
//
//	STUDIO_BURST=1 go test ./cmd/studio -run TestBurstFigures -v -timeout 10m
func TestBurstFigures(t *testing.T) {
	if os.Getenv("STUDIO_BURST") == "" {
		t.Skip("set STUDIO_BURST=1: a minute of load against a built studio")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "studio")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	p := startStudio(t, bin, filepath.Join(dir, "studio.db"), "--max-queued-runs", "1500")
	defer func() { p.cmd.Process.Kill(); p.cmd.Wait() }()
	pid := p.cmd.Process.Pid

	var b strings.Builder
	b.WriteString(`{"name":"wide","nodes":[{"node_id":"p","kind":"parallel","branches":[`)
	for k := range 64 {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"d%d"`, k)
	}
	b.WriteString(`]}`)
	for k := range 64 {
		fmt.Fprintf(&b, `,{"node_id":"d%d","kind":"tool","name":"delay","input":{"ms":300}}`, k)
	}
	b.WriteString(`]}`)
	code, ch := p.do(t, "POST", "/v1/chains", json.RawMessage(b.String()))
	if code != http.StatusCreated {
		t.Fatalf("create chain: %d %v", code, ch)
	}
	chainID := ch["id"].(string)

	// Burst 1: 1,500 starts from 100 clients at once.
	const runs = 1500
	start := time.Now()
	var ids sync.Map
	var accepted, refused atomic.Int64
	var peakRunning, peakGoroutines float64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peakRunning = max(peakRunning, metric(p, "studio_runs_active"))
			peakGoroutines = max(peakGoroutines, metric(p, "go_goroutines"))
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= runs {
				code, m := p.do(t, "POST", "/v1/chains/"+chainID+"/runs", json.RawMessage(`{}`))
				if code != http.StatusAccepted {
					refused.Add(1)
					continue
				}
				accepted.Add(1)
				ids.Store(m["run_id"], true)
			}
		}()
	}
	wg.Wait()
	posted := time.Since(start)
	testutil.Eventually(t, 5*time.Minute, func() error {
		if n := metric(p, "studio_runs_active"); n != 0 {
			return fmt.Errorf("%v runs still executing", n)
		}
		code, m := p.do(t, "GET", "/v1/runs?status=queued&limit=1", nil)
		if code != 200 || len(m["runs"].([]any)) > 0 {
			return fmt.Errorf("runs still queued")
		}
		return nil
	})
	close(stop)
	<-sampled
	completed := 0
	ids.Range(func(k, _ any) bool {
		if _, m := p.do(t, "GET", "/v1/runs/"+k.(string), nil); m["status"] == "completed" {
			completed++
		}
		return true
	})
	t.Logf("run burst: %d POSTs in %v, %d accepted, %d refused; at most %v runs executing at once; peak %v goroutines; all done after %v; %d of %d completed; peak RSS %d MiB",
		runs, posted.Round(time.Millisecond), accepted.Load(), refused.Load(), peakRunning, peakGoroutines, time.Since(start).Round(time.Second), completed, accepted.Load(), procPeakRSS(t, pid)>>20)
	if completed != runs {
		t.Errorf("%d of %d runs completed", completed, runs)
	}

	// Burst 2: 8,000 watchers of one running run.
	code, m := p.do(t, "POST", "/v1/chains", json.RawMessage(`{"name":"slow","nodes":[{"node_id":"w","kind":"tool","name":"delay","input":{"ms":60000}}]}`))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, m)
	}
	_, m = p.do(t, "POST", "/v1/chains/"+m["id"].(string)+"/runs", json.RawMessage(`{}`))
	runID := m["run_id"].(string)
	rssBefore := procRSS(t, pid)
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: 100}}
	var ok200, r503, other atomic.Int64
	var open sync.WaitGroup
	var held sync.WaitGroup
	for range 8000 {
		open.Add(1)
		held.Add(1)
		go func() {
			defer held.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/v1/runs/"+runID+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			res, err := client.Do(req)
			switch {
			case err != nil:
				other.Add(1)
			case res.StatusCode == http.StatusOK:
				ok200.Add(1)
			case res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "":
				r503.Add(1)
			default:
				other.Add(1)
			}
			open.Done()
			if err == nil {
				io.Copy(io.Discard, res.Body) // hold the stream until cancelled
				res.Body.Close()
			}
		}()
	}
	open.Wait()
	watchers := metric(p, "studio_sse_watchers")
	rssWith := procRSS(t, pid)
	// Once the refused connections are gone: what the 200 streams hold.
	testutil.Eventually(t, 30*time.Second, func() error {
		if g := metric(p, "go_goroutines"); g > 1000 {
			return fmt.Errorf("%v goroutines on the server", g)
		}
		return nil
	})
	heapWith := metric(p, "go_memstats_heap_inuse_bytes")
	cancel()
	held.Wait()
	p.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil)
	t.Logf("watcher burst: 8000 watchers of one run: %d streaming, %d refused 503 with Retry-After, %d other; %v watchers on the server; server RSS %d MiB before, %d MiB at the burst (+%d MiB, mostly 8,000 connections being served); heap in use with the 200 streams once the refused ones closed %.0f MiB; peak RSS %d MiB",
		ok200.Load(), r503.Load(), other.Load(), watchers, rssBefore>>20, rssWith>>20, (rssWith-rssBefore)>>20, heapWith/(1<<20), procPeakRSS(t, pid)>>20)
	if ok200.Load() > 200 || r503.Load() == 0 {
		t.Errorf("watcher caps did not hold: %d streaming, %d refused", ok200.Load(), r503.Load())
	}
	if code, _ := p.do(t, "GET", "/v1/runs/"+runID, nil); code != 200 {
		t.Errorf("server not serving after the bursts: %d", code)
	}
}

// The two runaway runs of the budget finding, against a built
// studio with its defaults: a loop of a 100 KB template and an echo, and a
// map of 2,500 items of 1 MB each. Each ends budget_exceeded; the figures
// (database growth, time, peak RSS) go to docs/reliability.md.
//
//	STUDIO_BURST=1 go test ./cmd/studio -run TestBudgetFigures -v
func TestBudgetFigures(t *testing.T) {
	if os.Getenv("STUDIO_BURST") == "" {
		t.Skip("set STUDIO_BURST=1: runs a built studio")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "studio")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "studio.db")
	p := startStudio(t, bin, db)
	defer func() { p.cmd.Process.Kill(); p.cmd.Wait() }()
	size := func() int64 {
		var n int64
		for _, f := range []string{db, db + "-wal"} {
			if st, err := os.Stat(f); err == nil {
				n += st.Size()
			}
		}
		return n
	}
	loop := func(iterations string) string {
		return `{"name":"grow` + iterations + `","timeout":15,"nodes":[
			{"node_id":"t","kind":"tool","name":"template","input":{"template":"{{printf \"%100000d\" 1}}"}},
			{"node_id":"e","kind":"tool","name":"echo","input_map":{"x":"t.output"}}],
			"edges":[{"source":"t","target":"e"},{"source":"e","target":"t","max_iterations":` + iterations + `}]}`
	}
	for _, tc := range []struct{ name, doc string }{
		{"loop, max_iterations 2,000,000,000", loop("2000000000")},
		{"loop, max_iterations 1,000,000", loop("1000000")},
		{"map of 2,500 items of 1 MB", `{"name":"wide map","nodes":[
			{"node_id":"m","kind":"map","items_path":"input.items","map_node":"big"},
			{"node_id":"big","kind":"tool","name":"template","input":{"template":"{{printf \"%1000000d\" 1}}"}}]}`},
	} {
		code, ch := p.do(t, "POST", "/v1/chains", json.RawMessage(tc.doc))
		if code != http.StatusCreated {
			t.Fatalf("%s: create %d %v", tc.name, code, ch)
		}
		items := make([]any, 2500)
		for k := range items {
			items[k] = k
		}
		before, start := size(), time.Now()
		code, m := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/runs", map[string]any{"input": map[string]any{"items": items}})
		if code != http.StatusAccepted {
			t.Logf("%s: refused %d %v", tc.name, code, m["error"])
			continue
		}
		end := p.waitStatus(t, m["run_id"].(string), "failed", "completed", "timed_out", "partial")
		t.Logf("%s: ended %v %v after %v; database grew %d MiB; server peak RSS %d MiB",
			tc.name, end["status"], end["error"], time.Since(start).Round(time.Millisecond), (size()-before)>>20, procPeakRSS(t, p.cmd.Process.Pid)>>20)
	}
	if code, _ := p.do(t, "GET", "/healthz", nil); code != 200 {
		t.Fatal("server not serving")
	}
}
