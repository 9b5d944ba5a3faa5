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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/examples"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// startWorker starts `studio worker` on dsn and waits until it works jobs.
func startWorker(t *testing.T, bin, dsn string) *studioProc {
	t.Helper()
	p := &studioProc{cmd: exec.Command(bin, "worker", "--db", dsn, "--agents", filepath.Join(t.TempDir(), "no-agents"))}
	p.cmd.Env = append(os.Environ(), "STUDIO_TOKEN=", "STUDIO_DB=")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(sc.Text(), "Chain Studio worker is running") {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("the worker did not start:\n%s", p.logs())
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// cluster is one API-only serve and n workers on a fresh schema.
func cluster(t *testing.T, workers int) (api *studioProc, ws []*studioProc, dsn string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the studio and runs several processes on PostgreSQL (make test runs it)")
	}
	dsn = pgtest.Schema(t)
	bin := builtStudio(t)
	api = startStudioDB(t, bin, dsn, "--worker=false")
	t.Cleanup(func() {
		if api.cmd.ProcessState == nil {
			api.cmd.Process.Kill()
			api.cmd.Wait()
		}
	})
	for range workers {
		ws = append(ws, startWorker(t, bin, dsn))
	}
	return api, ws, dsn
}

func saveChain(t *testing.T, p *studioProc, doc any) string {
	t.Helper()
	code, m := p.do(t, "POST", "/v1/chains", doc)
	if code != 201 {
		t.Fatalf("create chain: %d %v", code, m)
	}
	return m["id"].(string)
}

func startChainRun(t *testing.T, p *studioProc, chainID string, input any) string {
	t.Helper()
	code, m := p.do(t, "POST", "/v1/chains/"+chainID+"/runs", map[string]any{"input": input})
	if code != 202 {
		t.Fatalf("start run: %d %v", code, m)
	}
	return m["run_id"].(string)
}

func checkSeqs(t *testing.T, runID string, evs []map[string]any) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatalf("run %s: no events", runID)
	}
	for i, e := range evs {
		if int(e["seq"].(float64)) != i+1 {
			t.Fatalf("run %s: event %d has seq %v (want 1..N, no gap, no duplicate)", runID, i, e["seq"])
		}
	}
}

// One API process and two workers execute 50 runs of the examples: every
// run completes on a worker, and its events are numbered 1..N.
func TestClusterRunsExamples(t *testing.T) {
	api, ws, _ := cluster(t, 2)
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	type chain struct {
		id, want string
		input    any
	}
	var chains []chain
	for _, ex := range all {
		var doc map[string]any
		if err := json.Unmarshal(ex.Data, &doc); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(ex.Data), `"interrupt"`) {
			continue // pauses for a person: TestClusterConcurrentResumes
		}
		// Each ends as `studio run` ends it in one process: the parallel
		// example's failing branch makes it partial.
		want := "completed"
		if ex.File == "parallel.json" {
			want = "partial"
		}
		chains = append(chains, chain{saveChain(t, api, doc), want, doc["sample_input"]})
	}
	if len(chains) < 4 {
		t.Fatalf("only %d examples run without a person", len(chains))
	}
	ids := make([]string, 50)
	for i := range ids {
		c := chains[i%len(chains)]
		ids[i] = startChainRun(t, api, c.id, c.input)
	}
	for i, id := range ids {
		api.waitStatus(t, id, chains[i%len(chains)].want)
		checkSeqs(t, id, api.events(t, id))
	}
	// The API process executed none of them.
	if strings.Contains(api.logs(), "run started") {
		t.Fatalf("the API-only serve executed runs:\n%s", api.logs())
	}
	worked := 0
	for _, w := range ws {
		if strings.Contains(w.logs(), "run started") {
			worked++
		}
	}
	t.Logf("workers that executed runs: %d of %d", worked, len(ws))
}

// slowChain waits between steps, so that a run is seen while it executes.
func slowChain(name string, steps, ms int) map[string]any {
	var nodes, edges []any
	for i := range steps {
		id := fmt.Sprintf("s%d", i)
		nodes = append(nodes, map[string]any{"node_id": id, "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}})
		if i > 0 {
			edges = append(edges, map[string]any{"source": fmt.Sprintf("s%d", i-1), "target": id})
		}
	}
	return map[string]any{"name": name, "nodes": nodes, "edges": edges}
}

// sseFrames reads an event stream until its final `run` event.
func sseFrames(t *testing.T, url string) []map[string]any {
	t.Helper()
	return sseFramesFrom(t, url, "", 0)
}

// sseFramesFrom reads an event stream sent after lastID until its final
// `run` event, or until it has stop events (stop > 0), then disconnects.
func sseFramesFrom(t *testing.T, url, lastID string, stop int) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out []map[string]any
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			if event == "run" {
				return out
			}
			if event == "queued" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(v), &m); err != nil {
				t.Fatalf("event %q: %v", v, err)
			}
			m["_arrived"] = time.Now()
			out = append(out, m)
			if stop > 0 && len(out) == stop {
				return out
			}
		} else if line == "" {
			event = ""
		}
	}
	t.Fatalf("the stream ended without its final run event (%d events): %v", len(out), sc.Err())
	return nil
}

// A watcher on the API process of a run executing on a worker receives
// every event once and in order, live, then the run's end.
func TestClusterWatchRunOnWorker(t *testing.T) {
	api, _, _ := cluster(t, 1)
	id := saveChain(t, api, slowChain("slow-watch", 8, 150))
	runID := startChainRun(t, api, id, map[string]any{})
	got := sseFrames(t, api.url+"/v1/runs/"+runID+"/events")
	checkSeqs(t, runID, got)
	// Live, not a poll every second: the worker's NOTIFY per stored batch
	// wakes the reader here. Emission to arrival, on one machine's clock.
	var lat []time.Duration
	for _, e := range got {
		at, err := time.Parse(time.RFC3339Nano, e["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, e["_arrived"].(time.Time).Sub(at))
	}
	slices.Sort(lat)
	p90 := lat[len(lat)*9/10]
	t.Logf("emission to watcher on another process: median %v, p90 %v, max %v", lat[len(lat)/2], p90, lat[len(lat)-1])
	if p90 > 600*time.Millisecond {
		t.Errorf("p90 latency %v: events reach a watcher on another process no faster than the 1 s poll", p90)
	}
	stored := api.events(t, runID)
	if len(got) != len(stored) {
		t.Fatalf("the watcher got %d events, the store holds %d", len(got), len(stored))
	}
	api.waitStatus(t, runID, "completed")

	// A watcher that leaves mid-run and comes back with Last-Event-ID gets
	// the rest, once each, live.
	runID = startChainRun(t, api, saveChain(t, api, slowChain("slower-watch", 10, 300)), map[string]any{})
	first := sseFramesFrom(t, api.url+"/v1/runs/"+runID+"/events", "", 3)
	if _, m := api.do(t, "GET", "/v1/runs/"+runID, nil); m["status"] == "completed" {
		t.Fatalf("the run ended before the watcher left: the reconnect is not live")
	}
	last := fmt.Sprint(int64(first[len(first)-1]["seq"].(float64)))
	rest := sseFramesFrom(t, api.url+"/v1/runs/"+runID+"/events", last, 0)
	checkSeqs(t, runID, append(first, rest...))
	if n := len(first) + len(rest); n != len(api.events(t, runID)) {
		t.Fatalf("the watcher got %d events across the reconnect, the store holds %d", n, len(api.events(t, runID)))
	}
}

// Cancel through the API process of a run executing on a worker: it ends
// cancelled within 2 s.
func TestClusterCancelRunOnWorker(t *testing.T) {
	api, _, _ := cluster(t, 1)
	id := saveChain(t, api, slowChain("slow-cancel", 3, 20000))
	runID := startChainRun(t, api, id, map[string]any{})
	api.waitStatusActive(t, runID, "running")
	start := time.Now()
	code, m := api.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil)
	if code != 202 {
		t.Fatalf("cancel: %d %v", code, m)
	}
	for {
		_, m = api.do(t, "GET", "/v1/runs/"+runID, nil)
		if m["status"] == "cancelled" {
			break
		}
		// The run would take a minute; the worker hears a cancel at its next
		// heartbeat (about a second). 10 s tells the two apart on a loaded
		// machine; the log line gives the actual delay.
		if time.Since(start) > 10*time.Second {
			t.Fatalf("not cancelled 10 s after the cancel: %v", m["status"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("cancelled after %v", time.Since(start).Round(time.Millisecond))
}

// Cancel of a run no worker has picked up: the job is cancelled and the
// run marked cancelled at once, in one transaction.
func TestClusterCancelQueued(t *testing.T) {
	api, _, _ := cluster(t, 0)
	id := saveChain(t, api, slowChain("queued-cancel", 1, 10))
	runID := startChainRun(t, api, id, map[string]any{})
	_, m := api.do(t, "GET", "/v1/runs/"+runID, nil)
	if m["status"] != "queued" || m["active"] != true {
		t.Fatalf("a run without workers: %v (active %v), want queued and active", m["status"], m["active"])
	}
	if code, m := api.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %v", code, m)
	}
	_, m = api.do(t, "GET", "/v1/runs/"+runID, nil)
	if m["status"] != "cancelled" || m["active"] != false {
		t.Fatalf("after the cancel: %v (active %v)", m["status"], m["active"])
	}
}

// 20 concurrent resumes of one pause: exactly one 200, the others 409, and
// one resume job.
func TestClusterConcurrentResumes(t *testing.T) {
	api, _, dsn := cluster(t, 1)
	var approval map[string]any
	all, _ := examples.All()
	for _, ex := range all {
		if ex.File == "approval.json" {
			if err := json.Unmarshal(ex.Data, &approval); err != nil {
				t.Fatal(err)
			}
		}
	}
	if approval == nil {
		t.Fatal("no approval example")
	}
	runID := startChainRun(t, api, saveChain(t, api, approval), approval["sample_input"])
	api.waitStatus(t, runID, "paused")
	codes := make([]int, 20)
	bodies := make([]map[string]any, 20)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], bodies[i] = api.do(t, "POST", "/v1/runs/"+runID+"/resume", map[string]any{"resume_value": map[string]any{"approved": true}})
		}()
	}
	wg.Wait()
	ok, conflict := 0, 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
			conflict++
		}
	}
	if ok != 1 || conflict != 19 {
		t.Fatalf("resume answers %v: want one 200 and 19 × 409", codes)
	}
	for i, c := range codes {
		// The claim marked the run running in the job's transaction.
		if c == 200 && bodies[i]["status"] == "paused" {
			t.Fatalf("the accepted resume answers %v", bodies[i])
		}
	}
	api.waitStatus(t, runID, "completed")
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var jobs int
	// The job carries the claimed interrupt's record.
	if err := c.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND args->>'kind' = 'resume' AND args->'resume'->>'node_id' <> ''`, runID).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 {
		t.Fatalf("%d resume jobs, want 1", jobs)
	}
}

// waitStatusActive waits until the run has the status while active.
func (p *studioProc) waitStatusActive(t *testing.T, runID, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		_, m := p.do(t, "GET", "/v1/runs/"+runID, nil)
		if m["status"] == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("run %s never %s:\n%s", runID, want, p.logs())
}

// A serve with its worker counts the River runs it executes in
// studio_runs_active, as it counts its in-process runs.
func TestServeWorkerCountsActiveRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio and runs it on PostgreSQL (make test runs it)")
	}
	dsn := pgtest.Schema(t)
	p := startStudioDB(t, builtStudio(t), dsn)
	defer p.stop(t)
	runID := startChainRun(t, p, saveChain(t, p, slowChain("slow-metrics", 2, 3000)), map[string]any{})
	p.waitStatusActive(t, runID, "running")
	res, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), "\nstudio_runs_active 1\n") {
		t.Fatalf("/metrics while one run executes:\n%s", grepLines(string(b), "studio_runs_active"))
	}
	p.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil)
	p.waitStatus(t, runID, "cancelled")
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
