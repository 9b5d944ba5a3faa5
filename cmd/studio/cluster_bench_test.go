package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// The cluster's benchmarks (make bench-cluster): real `studio serve
// --worker=false` and `studio worker` processes on the PostgreSQL server
// STUDIO_TEST_PG names (default 127.0.0.1:5432), each on a fresh schema.

// benchProc starts the studio binary with args and waits for the line
// ready; it is killed when tb ends.
func benchProc(tb testing.TB, args []string, ready string) *studioProc {
	tb.Helper()
	p := &studioProc{cmd: exec.Command(builtStudio(tb), args...)}
	p.cmd.Env = append(os.Environ(), "STUDIO_TOKEN=", "STUDIO_DB=")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	up := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `msg="run started"`) || strings.Contains(line, `msg="run stopped"`) {
				continue // thousands of them: keep the memory for the rest
			}
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if strings.Contains(line, ready) {
				url := "" // a worker serves no HTTP
				if m := runningRE.FindStringSubmatch(line); m != nil {
					url = m[1]
				}
				select {
				case up <- url:
				default:
				}
			}
		}
	}()
	select {
	case p.url = <-up:
	case <-time.After(30 * time.Second):
		tb.Fatalf("%v did not start:\n%s", args[0], p.logs())
	}
	return p
}

// benchCluster starts one API-only serve and n workers of slots runs each
// on a fresh schema.
func benchCluster(b *testing.B, n, slots int) (api *studioProc, ws []*studioProc, dsn string) {
	b.Helper()
	if testing.Short() {
		b.Skip("runs several studio processes on PostgreSQL")
	}
	dsn = pgtest.Schema(b)
	noAgents := filepath.Join(b.TempDir(), "no-agents")
	api = benchProc(b, []string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--no-examples", "--agents", noAgents, "--worker=false"}, "Chain Studio is running")
	for range n {
		ws = append(ws, benchProc(b, []string{"worker", "--db", dsn, "--agents", noAgents, "--max-running-runs", strconv.Itoa(slots)}, "Chain Studio worker is running"))
	}
	return api, ws, dsn
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// cpuTicks is the user+system CPU time of a process in clock ticks
// (/proc/PID/stat, fields 14 and 15); 0 when it is gone.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name (field 2) is in parentheses and may hold spaces.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// clockTick is USER_HZ, 100 on every Linux this runs on.
const clockTick = 100

// postgresTicks sums the CPU ticks of every process named postgres (the
// server: its backends, WAL writer, checkpointer …).
func postgresTicks() int64 {
	entries, _ := os.ReadDir("/proc")
	var sum int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			sum += cpuTicks(pid)
		}
	}
	return sum
}

// backendTicks sums the CPU ticks of the PostgreSQL backends that serve
// the given studio processes (found by their application_name).
func backendTicks(tb testing.TB, db *pgx.Conn, procs []*studioProc) int64 {
	tb.Helper()
	var sum int64
	for _, p := range procs {
		rows, err := db.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name LIKE $1`,
			fmt.Sprintf("chain-studio pid %d %%", p.cmd.Process.Pid))
		if err != nil {
			tb.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			tb.Fatal(err)
		}
		for _, pid := range pids {
			sum += cpuTicks(pid)
		}
	}
	return sum
}

// waitEnded waits until none of ids is queued or running.
func waitEnded(tb testing.TB, db *pgx.Conn, ids []string, limit time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		var active int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM runs WHERE id = ANY($1) AND status IN ('queued', 'running')`, ids).Scan(&active); err != nil {
			tb.Fatal(err)
		}
		if active == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d runs still queued or running after %v", active, len(ids), limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// submitRuns starts n runs of chainID through api, from 8 clients, at most
// one every gap (0: as fast as the API takes them).
func submitRuns(tb testing.TB, api *studioProc, chainID string, n int, gap time.Duration) []string {
	tb.Helper()
	ids := make([]string, n)
	errs := make(chan error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code, m, err := postJSON(api.url+"/v1/chains/"+chainID+"/runs", map[string]any{"input": map[string]any{}})
				if err != nil || code != 202 {
					errs <- fmt.Errorf("start run %d: %d %v %v", i, code, m, err)
					continue
				}
				ids[i] = m["run_id"].(string)
			}
		}()
	}
	tick := time.Now()
	for i := range n {
		if gap > 0 {
			tick = tick.Add(gap)
			time.Sleep(time.Until(tick))
		}
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	return ids
}

// queueToStart returns, for runs' jobs, the time from the job's insert to
// a worker fetching it (River's attempted_at − created_at, both the
// database's clock), sorted.
func queueToStart(tb testing.TB, db *pgx.Conn, ids []string) []time.Duration {
	tb.Helper()
	rows, err := db.Query(context.Background(), `SELECT (extract(epoch FROM attempted_at - created_at) * 1e6)::bigint
FROM river_job WHERE args->>'run_id' = ANY($1) AND attempted_at IS NOT NULL`, ids)
	if err != nil {
		tb.Fatal(err)
	}
	us, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		tb.Fatal(err)
	}
	if len(us) != len(ids) {
		tb.Fatalf("%d of %d jobs were fetched", len(us), len(ids))
	}
	out := make([]time.Duration, len(us))
	for i, u := range us {
		out[i] = time.Duration(u) * time.Microsecond
	}
	slices.Sort(out)
	return out
}

func pct(d []time.Duration, p float64) time.Duration {
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkClusterDistribution: STUDIO_BENCH_RUNS (default 2,000) runs of a
// 20-node chain whose every node waits 20 ms (the built-in delay tool), on
// 1, 2 and 4 (STUDIO_BENCH_WORKERS, e.g. "1,4") `studio worker` processes of STUDIO_BENCH_SLOTS (default 8)
// runs each, started through one API-only serve as fast as it takes them.
// It reports runs/s (first start to last end), the p95 queue-to-start
// latency at half the cluster's capacity, and the CPU that PostgreSQL and
// the workers spent per run.
func BenchmarkClusterDistribution(b *testing.B) {
	runs := envInt("STUDIO_BENCH_RUNS", 2000)
	slots := envInt("STUDIO_BENCH_SLOTS", 8)
	counts := []int{1, 2, 4}
	if v := os.Getenv("STUDIO_BENCH_WORKERS"); v != "" { // e.g. "1,4"
		counts = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
				counts = append(counts, n)
			}
		}
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			api, ws, dsn := benchCluster(b, n, slots)
			db := pgConnect(b, dsn)
			chainID := benchSaveChain(b, api, slowChain("distribution", 20, 20))
			// Warm up: every worker has run a job and opened its pool.
			waitEnded(b, db, submitRuns(b, api, chainID, n*slots, 0), time.Minute)
			var rate, pgCPU, beCPU, wCPU float64
			var p95, p50 time.Duration
			for range b.N {
				pg0, be0, w0 := postgresTicks(), backendTicks(b, db, append(ws, api)), workerTicks(ws)
				start := time.Now()
				ids := submitRuns(b, api, chainID, runs, 0)
				waitEnded(b, db, ids, 10*time.Minute)
				el := time.Since(start)
				rate = float64(runs) / el.Seconds()
				pgCPU = float64(postgresTicks()-pg0) / clockTick
				beCPU = float64(backendTicks(b, db, append(ws, api))-be0) / clockTick
				wCPU = float64(workerTicks(ws)-w0) / clockTick
				b.Logf("workers=%d slots=%d: %d runs in %v = %.1f runs/s; CPU: postgres %.1f s (%.0f%% of a core; its backends for this cluster %.1f s), workers %.1f s",
					n, slots, runs, el.Round(time.Millisecond), rate, pgCPU, 100*pgCPU/el.Seconds(), beCPU, wCPU)

				// Queue-to-start at half the capacity: a run arrives while
				// slots are free, so the wait is River's fetch, not a
				// backlog. Capacity: n*slots runs per 20 × 20 ms.
				capacity := float64(n*slots) / 0.4
				paced := min(runs/4, int(capacity*10/2)) // ~10 s
				ids = submitRuns(b, api, chainID, paced, time.Duration(float64(time.Second)/(capacity/2)))
				waitEnded(b, db, ids, 5*time.Minute)
				q := queueToStart(b, db, ids)
				p50, p95 = pct(q, 0.5), pct(q, 0.95)
				b.Logf("workers=%d: %d runs at %.0f runs/s: queue-to-start median %v, p95 %v, max %v",
					n, paced, capacity/2, p50.Round(time.Millisecond), p95.Round(time.Millisecond), q[len(q)-1].Round(time.Millisecond))
			}
			b.ReportMetric(rate, "runs/s")
			b.ReportMetric(float64(p95.Microseconds())/1000, "p95-queue-to-start-ms")
			// All of PostgreSQL (other clients of the server included), and
			// the backends serving this cluster's processes alone.
			b.ReportMetric(1000*pgCPU/float64(runs), "pg-cpu-ms/run")
			b.ReportMetric(1000*beCPU/float64(runs), "pg-backends-cpu-ms/run")
			b.ReportMetric(1000*wCPU/float64(runs), "worker-cpu-ms/run")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func workerTicks(ws []*studioProc) int64 {
	var sum int64
	for _, w := range ws {
		sum += cpuTicks(w.cmd.Process.Pid)
	}
	return sum
}

// benchSaveChain saves doc through api and returns its id.
func benchSaveChain(tb testing.TB, api *studioProc, doc any) string {
	tb.Helper()
	code, m, err := postJSON(api.url+"/v1/chains", doc)
	if err != nil || code != 201 {
		tb.Fatalf("create chain: %d %v %v", code, m, err)
	}
	return m["id"].(string)
}

// BenchmarkClusterWatchLatency: a watcher on an API-only serve of runs
// executing on a `studio worker` (another process): the time from an
// event's emission (its time, set by the worker's engine) to its arrival
// in the watcher's event stream, over STUDIO_BENCH_WATCH_RUNS (default 20)
// runs of 25 nodes waiting 20 ms each (1,000+ events).
func BenchmarkClusterWatchLatency(b *testing.B) {
	api, _, _ := benchCluster(b, 1, 8)
	chainID := benchSaveChain(b, api, slowChain("watch-latency", 25, 20))
	n := envInt("STUDIO_BENCH_WATCH_RUNS", 20)
	var lat []time.Duration
	for range b.N {
		lat = lat[:0]
		for range n {
			code, m, err := postJSON(api.url+"/v1/chains/"+chainID+"/runs", map[string]any{"input": map[string]any{}})
			if err != nil || code != 202 {
				b.Fatalf("start run: %d %v %v", code, m, err)
			}
			var evs []map[string]any
			sseWatch(b, api.url+"/v1/runs/"+m["run_id"].(string)+"/events", "", func(ev map[string]any) bool {
				evs = append(evs, ev)
				return true
			})
			// The replay of what was stored before the watcher came is
			// not live: count the events from the third on.
			if len(evs) > 2 {
				lat = append(lat, latencies(b, evs[2:])...)
			}
		}
	}
	slices.Sort(lat)
	b.Logf("%d events: emission to a watcher on another process: median %v, p95 %v, p99 %v, max %v",
		len(lat), pct(lat, 0.5).Round(time.Microsecond), pct(lat, 0.95).Round(time.Microsecond), pct(lat, 0.99).Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
	b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}
