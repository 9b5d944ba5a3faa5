package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// httpRunsInFlight is how many runs the benchmark's client keeps going at
// once: the server's slots on 2 cores (8 a core), so none waits in line.
const httpRunsInFlight = 16

// BenchmarkHTTPRuns: persisted runs per second through HTTP end to end. A
// real `studio serve` on its embedded SQLite store, on a free loopback
// port; a client on the same machine keeps 16 runs of a 10-node chain of
// echo nodes in flight, each started with POST /v1/chains/{id}/runs and
// waited for on its event stream (GET /v1/runs/{id}/events, which ends
// with the run's final answer when it finishes: the API has no wait
// option, and polling would add its interval to every run). b.N is the
// number of runs; runs/s counts from the first start to the last end;
// server-cpu-ms/run is the serve process's CPU time (user and system)
// over those runs, divided by b.N.
func BenchmarkHTTPRuns(b *testing.B) {
	dir := b.TempDir()
	api := benchProc(b, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "studio.db"),
		"--no-examples", "--agents", filepath.Join(dir, "no-agents")}, "Chain Studio is running")
	chainID := benchSaveChain(b, api, echoLine("http-runs", 10))
	benchPublish(b, api, chainID)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * httpRunsInFlight}}
	defer client.CloseIdleConnections()

	// Warm up: the connections, the store's statements, the chain's cache.
	if _, err := httpRuns(client, api.url, chainID, 2*httpRunsInFlight); err != nil {
		b.Fatalf("%v\n%s", err, api.logs())
	}
	b.ResetTimer()
	cpu0, start := cpuTicks(api.cmd.Process.Pid), time.Now()
	lat, err := httpRuns(client, api.url, chainID, b.N)
	el, cpu := time.Since(start), cpuTicks(api.cmd.Process.Pid)-cpu0
	b.StopTimer()
	if err != nil {
		b.Fatalf("%v\n%s", err, api.logs())
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/el.Seconds(), "runs/s")
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-ms")
	// The server's CPU a run: what a busy machine changes least.
	b.ReportMetric(1000*float64(cpu)/clockTick/float64(b.N), "server-cpu-ms/run")
}

// echoLine is a chain of n echo nodes one after another.
func echoLine(name string, n int) map[string]any {
	var nodes, edges []any
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, map[string]any{"node_id": id, "kind": "tool", "name": "echo", "input": map[string]any{"i": i, "text": "hello"}})
		if i > 0 {
			edges = append(edges, map[string]any{"source": fmt.Sprintf("n%d", i-1), "target": id})
		}
	}
	return map[string]any{"name": name, "nodes": nodes, "edges": edges}
}

// benchPublish publishes the chain's current version, which a run starts
// by default; a server older than publishing (no such route) runs the
// current version anyway.
func benchPublish(tb testing.TB, api *studioProc, chainID string) {
	tb.Helper()
	code, m, err := postJSON(api.url+"/v1/chains/"+chainID+"/publish", map[string]any{})
	switch {
	case err != nil:
		tb.Fatalf("publish: %v", err)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		tb.Logf("publish: %d: this server runs the current version", code)
	case code/100 != 2:
		tb.Fatalf("publish: %d %v", code, m)
	}
}

// httpRuns starts n runs of chainID, httpRunsInFlight at a time, waits for
// each to end completed, and returns each one's time from its POST to its
// stream's final answer.
func httpRuns(client *http.Client, url, chainID string, n int) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, httpRunsInFlight)
	for range httpRunsInFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := httpRun(client, url, chainID, i); err != nil {
					errs <- fmt.Errorf("run %d: %w", i, err)
					next.Store(int64(n)) // the others stop too
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return lat, <-errs
}

// httpRun starts one run and reads its event stream to the final answer.
func httpRun(client *http.Client, url, chainID string, i int) error {
	body := fmt.Appendf(nil, `{"input":{"i":%d}}`, i)
	res, err := client.Post(url+"/v1/chains/"+chainID+"/runs", "application/json", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	err = json.NewDecoder(res.Body).Decode(&started)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted || err != nil {
		return fmt.Errorf("start: %d %v", res.StatusCode, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/runs/"+started.RunID+"/events", nil)
	res, err = client.Do(req)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("events: %d", res.StatusCode)
	}
	status, err := finalStatus(res.Body)
	if err != nil {
		return fmt.Errorf("events of %s: %w", started.RunID, err)
	}
	if status != "completed" {
		return fmt.Errorf("run %s ended %q", started.RunID, status)
	}
	io.Copy(io.Discard, res.Body) // the connection goes back to the pool
	return nil
}

// finalStatus reads an event stream up to its `run` frame and returns the
// status that frame carries. Lines before it are skipped without a copy.
func finalStatus(r io.Reader) (string, error) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a long data line: skip the rest
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return "", fmt.Errorf("the stream ended without its final run event: %w", err)
		}
		if string(line) != "event: run\n" {
			continue
		}
		data, err := br.ReadBytes('\n')
		if err != nil {
			return "", fmt.Errorf("the final run event: %w", err)
		}
		var run struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(bytes.TrimPrefix(data, []byte("data: ")), &run); err != nil {
			return "", fmt.Errorf("the final run event: %w", err)
		}
		return run.Status, nil
	}
}
