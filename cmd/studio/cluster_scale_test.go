package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/examples"
)

// The cluster at scale: real `studio serve` and `studio worker` processes on
// one PostgreSQL database (loopback), checked in the database itself.

// pgConnect opens a connection to dsn for the test's own queries.
func pgConnect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// postJSON sends body to url and decodes the answer; safe off the test's
// goroutine (it returns the error instead of failing the test).
func postJSON(url string, body any) (int, map[string]any, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	res, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	rb, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, nil, err
	}
	var m map[string]any
	_ = json.Unmarshal(rb, &m)
	return res.StatusCode, m, nil
}

// scaleChain is a saved chain and how one process's engine ends it.
type scaleChain struct {
	name  string
	id    string
	input map[string]any
	want  chain.RunStatus
}

// expectedStatus runs doc in this test process's engine with the built-in
// tools (what every worker registers): the status a worker must reach too.
func expectedStatus(t *testing.T, doc *chain.Chain, input map[string]any) chain.RunStatus {
	t.Helper()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	res, err := engine.New(engine.Options{Registry: reg}).Run(context.Background(), enginetest.PlanOf(engine.New(engine.Options{Registry: reg}), doc), input, engine.RunOptions{})
	if err != nil {
		t.Fatalf("chain %s in one process: %v", doc.Name, err)
	}
	return res.Status
}

// scaleChains saves the examples that need no person and random routing
// graphs (guards, defaults, failing nodes under every on_error policy) on
// api, each with the status it must end in.
func scaleChains(t *testing.T, api *studioProc, random int) []scaleChain {
	t.Helper()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	var out []scaleChain
	for _, ex := range all {
		if strings.Contains(string(ex.Data), `"interrupt"`) {
			continue // pauses for a person
		}
		doc, err := chain.Decode(ex.Data, chain.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", ex.File, err)
		}
		var raw map[string]any
		if err := json.Unmarshal(ex.Data, &raw); err != nil {
			t.Fatal(err)
		}
		in, _ := raw["sample_input"].(map[string]any)
		if in == nil {
			in = map[string]any{}
		}
		out = append(out, scaleChain{name: ex.File, id: saveChain(t, api, raw), input: in, want: expectedStatus(t, doc, in)})
	}
	rng := rand.New(rand.NewPCG(14, 800))
	statuses := map[chain.RunStatus]int{}
	for k := 0; len(out) < random+5 && k < 10*random; k++ {
		c := enginetest.RandomChain(rng, true)
		if issues := chain.Validate(c); slices.ContainsFunc(issues, func(is chain.Issue) bool { return is.Severity == chain.SeverityError }) {
			continue
		}
		c.Name = fmt.Sprintf("random-%d", k)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		want := expectedStatus(t, c, map[string]any{})
		statuses[want]++
		out = append(out, scaleChain{name: c.Name, id: saveChain(t, api, raw), input: map[string]any{}, want: want})
	}
	// The random graphs must end in more than one way, or the test would
	// not check that a worker ends each as its chain dictates.
	if len(statuses) < 2 {
		t.Fatalf("the random chains all end %v: pick another seed", statuses)
	}
	return out
}

// storedSeqs checks, in the database, that every run's stored events are
// numbered 1..N with no gap and no duplicate, and that each batch row's
// bounds are those of the events it holds. It returns the events stored.
func storedSeqs(t *testing.T, c *pgx.Conn, runIDs []string) int {
	t.Helper()
	ctx := context.Background()
	rows, err := c.Query(ctx, `WITH ev AS (
  SELECT b.run_id, (e->>'seq')::bigint AS seq, e->>'run_id' AS ev_run
  FROM event_batches b, jsonb_array_elements(b.body::jsonb) e
  WHERE b.run_id = ANY($1))
SELECT r.id, count(ev.seq), count(DISTINCT ev.seq), coalesce(min(ev.seq), 0), coalesce(max(ev.seq), 0),
       count(*) FILTER (WHERE ev.ev_run <> r.id)
FROM runs r LEFT JOIN ev ON ev.run_id = r.id
WHERE r.id = ANY($1) GROUP BY r.id`, runIDs)
	if err != nil {
		t.Fatal(err)
	}
	seen, total := 0, 0
	for rows.Next() {
		var id string
		var n, distinct, lo, hi, foreign int64
		if err := rows.Scan(&id, &n, &distinct, &lo, &hi, &foreign); err != nil {
			t.Fatal(err)
		}
		seen++
		total += int(n)
		if n == 0 || lo != 1 || hi != n || distinct != n || foreign != 0 {
			t.Errorf("run %s: %d events stored, %d distinct seqs from %d to %d, %d of another run (want 1..N, no gap, no duplicate)", id, n, distinct, lo, hi, foreign)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen != len(runIDs) {
		t.Fatalf("%d of %d runs are in the database", seen, len(runIDs))
	}
	var bad int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM event_batches b
WHERE b.run_id = ANY($1) AND (b.first_seq <> (b.body::jsonb->0->>'seq')::bigint
   OR b.last_seq <> (b.body::jsonb->(jsonb_array_length(b.body::jsonb)-1)->>'seq')::bigint)`, runIDs).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Errorf("%d event batch rows whose first_seq/last_seq are not those of the events they hold", bad)
	}
	return total
}

var runStartedRE = regexp.MustCompile(`msg="run started" run_id=(\S+)`)

// 1 API process and 3 workers run 800 runs of the examples and of random
// routing graphs: every run ends as the engine in one process ends its
// chain, was started exactly once by exactly one worker, every worker took
// a share, and every run's events are numbered 1..N in the database.
func TestClusterScale800Runs(t *testing.T) {
	api, ws, dsn := cluster(t, 3)
	chains := scaleChains(t, api, 40)
	const total = 800
	type started struct {
		id    string
		chain int
	}
	runs := make([]started, total)
	errs := make(chan error, total)
	var wg sync.WaitGroup
	next := make(chan int)
	begin := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := chains[i%len(chains)]
				code, m, err := postJSON(api.url+"/v1/chains/"+c.id+"/runs", map[string]any{"input": c.input})
				if err != nil || code != 202 {
					errs <- fmt.Errorf("start run %d of %s: %d %v %v", i, c.name, code, m, err)
					continue
				}
				runs[i] = started{m["run_id"].(string), i % len(chains)}
			}
		}()
	}
	for i := range total {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	submitted := time.Since(begin)

	db := pgConnect(t, dsn)
	ctx := context.Background()
	ids := make([]string, total)
	for i, r := range runs {
		ids[i] = r.id
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var active int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = ANY($1) AND status IN ('queued', 'running')`, ids).Scan(&active); err != nil {
			t.Fatal(err)
		}
		if active == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs still queued or running after 60 s", active, total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d runs: submitted in %v, all ended after %v", total, submitted.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))

	status := map[string]string{}
	rows, err := db.Query(ctx, `SELECT id, status FROM runs WHERE id = ANY($1)`, ids)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, s string
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		status[id] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	ended := map[string]int{}
	for _, r := range runs {
		c := chains[r.chain]
		ended[status[r.id]]++
		if status[r.id] != string(c.want) {
			t.Errorf("run %s of %s ended %q; in one process the chain ends %q", r.id, c.name, status[r.id], c.want)
		}
	}
	t.Logf("statuses: %v", ended)
	events := storedSeqs(t, db, ids)
	t.Logf("%d events stored", events)

	// Every run started once, in one worker; every worker took a share;
	// the API process started none.
	starts := map[string]int{}
	for i, w := range ws {
		n := 0
		for _, m := range runStartedRE.FindAllStringSubmatch(w.logs(), -1) {
			starts[m[1]]++
			n++
		}
		if n == 0 {
			t.Errorf("worker %d executed no run", i)
		}
		t.Logf("worker %d executed %d runs", i, n)
	}
	for _, id := range ids {
		if starts[id] != 1 {
			t.Errorf("run %s was started %d times across the workers, want once", id, starts[id])
		}
	}
	if runStartedRE.MatchString(api.logs()) {
		t.Errorf("the API-only serve executed runs")
	}
	// Each run has one job, completed: none left behind, none retried.
	// River marks a job completed a moment after its worker returned (its
	// completer writes in batches), after the run itself has ended: wait
	// for that, a few seconds at most.
	var jobs, done int
	for wait := time.Now().Add(10 * time.Second); ; {
		if err := db.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state = 'completed' AND attempt = 1)
FROM river_job WHERE args->>'run_id' = ANY($1)`, ids).Scan(&jobs, &done); err != nil {
			t.Fatal(err)
		}
		if done == total || time.Now().After(wait) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if jobs != total || done != total {
		t.Errorf("%d River jobs for %d runs, %d completed at their first attempt; want one each", jobs, total, done)
	}
}

// clusterAPIs starts n API-only serves and w workers on one fresh schema.
func clusterAPIs(t *testing.T, n, w int) (apis, ws []*studioProc, dsn string) {
	t.Helper()
	api, ws, dsn := cluster(t, w)
	apis = []*studioProc{api}
	bin := builtStudio(t)
	for range n - 1 {
		p := startStudioDB(t, bin, dsn, "--worker=false")
		t.Cleanup(func() {
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		})
		apis = append(apis, p)
	}
	return apis, ws, dsn
}

// 50 concurrent resumes of one pause, spread over 3 API processes: exactly
// one is accepted (200), 49 get 409, one River job continues the run, and
// the run completes once with its events numbered 1..N.
func TestClusterResumes50Over3APIs(t *testing.T) {
	apis, ws, dsn := clusterAPIs(t, 3, 1)
	var approval map[string]any
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
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
	runID := startChainRun(t, apis[0], saveChain(t, apis[0], approval), approval["sample_input"])
	for _, a := range apis {
		a.waitStatus(t, runID, "paused") // every instance reads the pause
	}
	const n = 50
	codes := make([]int, n)
	bodies := make([]map[string]any, n)
	errs := make([]error, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate // all at once
			codes[i], bodies[i], errs[i] = postJSON(apis[i%len(apis)].url+"/v1/runs/"+runID+"/resume",
				map[string]any{"resume_value": map[string]any{"approved": true}})
		}()
	}
	close(gate)
	wg.Wait()
	ok, conflict := 0, 0
	okAt := map[int]int{}
	for i, c := range codes {
		if errs[i] != nil {
			t.Fatalf("resume %d: %v", i, errs[i])
		}
		switch c {
		case 200:
			ok++
			okAt[i%len(apis)]++
		case 409:
			conflict++
			if e, _ := bodies[i]["error"].(map[string]any); e["code"] != engine.CodeAlreadyResumed {
				t.Errorf("a refused resume answers %v, want code %s", bodies[i], engine.CodeAlreadyResumed)
			}
		}
	}
	if ok != 1 || conflict != n-1 {
		t.Fatalf("resume answers %v: want one 200 and %d × 409", codes, n-1)
	}
	t.Logf("the accepted resume went to instance %v; 409 bodies look like %v", okAt, bodies[slices.Index(codes, 409)])
	for _, a := range apis {
		a.waitStatus(t, runID, "completed")
	}
	db := pgConnect(t, dsn)
	ctx := context.Background()
	var resumeJobs, allJobs int
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE args->>'kind' = 'resume'), count(*) FROM river_job WHERE args->>'run_id' = $1`, runID).Scan(&resumeJobs, &allJobs); err != nil {
		t.Fatal(err)
	}
	if resumeJobs != 1 || allJobs != 2 {
		t.Fatalf("%d resume jobs and %d jobs in all for the run; want 1 resume job beside the run's own", resumeJobs, allJobs)
	}
	storedSeqs(t, db, []string{runID})
	// The approved branch ran once: one resume entry in the run's log.
	var resumes int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM checkpoints WHERE run_id = $1 AND kind = $2`, runID, engine.CheckpointResume).Scan(&resumes); err != nil {
		t.Fatal(err)
	}
	if resumes != 1 {
		t.Fatalf("%d resume entries in the run's log, want 1", resumes)
	}
	if n := len(runStartedRE.FindAllString(ws[0].logs(), -1)); n != 2 {
		t.Fatalf("the worker started the run %d times, want 2 (the run, its continuation)", n)
	}
}

// listeners returns the backend pids of the connections a studio process
// (by its OS pid, in application_name) holds listening.
func listeners(t *testing.T, db *pgx.Conn, p *studioProc) []int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT pid FROM pg_stat_activity
WHERE application_name LIKE $1 AND query ILIKE 'LISTEN%' ORDER BY pid`, fmt.Sprintf("chain-studio pid %d %%", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// terminate ends backends (pg_terminate_backend).
func terminate(t *testing.T, db *pgx.Conn, pids []int) {
	t.Helper()
	ctx := context.Background()
	if len(pids) == 0 {
		t.Fatal("no listening connection to kill")
	}
	for _, pid := range pids {
		var ok bool
		if err := db.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
			t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
		}
	}
}

// sseWatch reads a run's event stream (after lastID), handing each event to
// on, which says whether to go on; it returns true when the run's final
// event arrived.
func sseWatch(t testing.TB, url, lastID string, on func(ev map[string]any) bool) bool {
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
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	frames := newFrameReader(res.Body)
	for {
		event, data, err := frames.next()
		if err != nil {
			t.Fatalf("the stream ended without its final run event: %v", err)
		}
		switch event {
		case "run":
			return true
		case "queued", "":
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		m["_arrived"] = time.Now()
		if !on(m) {
			return false
		}
	}
}

// frameReader splits an event stream into (event, data) frames.
type frameReader struct {
	r   io.Reader
	buf []byte
}

func newFrameReader(r io.Reader) *frameReader { return &frameReader{r: r} }

func (f *frameReader) next() (event, data string, err error) {
	for {
		if i := bytes.Index(f.buf, []byte("\n\n")); i >= 0 {
			frame := string(f.buf[:i])
			f.buf = f.buf[i+2:]
			for _, line := range strings.Split(frame, "\n") {
				if v, ok := strings.CutPrefix(line, "event: "); ok {
					event = v
				} else if v, ok := strings.CutPrefix(line, "data: "); ok {
					data = v
				}
			}
			if data == "" {
				continue // a comment (keep-alive) or an id alone
			}
			return event, data, nil
		}
		chunk := make([]byte, 32<<10)
		n, err := f.r.Read(chunk)
		f.buf = append(f.buf, chunk[:n]...)
		if err != nil && n == 0 {
			return "", "", err
		}
	}
}

// latencies returns emission → arrival of each event, sorted.
func latencies(t testing.TB, evs []map[string]any) []time.Duration {
	t.Helper()
	var lat []time.Duration
	for _, e := range evs {
		at, err := time.Parse(time.RFC3339Nano, e["time"].(string))
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, e["_arrived"].(time.Time).Sub(at))
	}
	slices.Sort(lat)
	return lat
}

// A watcher on API process A of a run executing on worker B receives every
// event once and in order, live, while A's listening connection is killed
// (pg_terminate_backend), then B's, and when the watcher drops and
// reconnects with Last-Event-ID; and A listens again after the kill.
func TestClusterWatchSurvivesKilledListeners(t *testing.T) {
	api, ws, dsn := cluster(t, 1)
	a, b := api, ws[0]
	db := pgConnect(t, dsn)
	if len(listeners(t, db, a)) == 0 {
		t.Fatalf("API process A holds no listening connection:\n%s", a.logs())
	}
	// 16 steps of 250 ms: about 4 s of events, long enough to do all three
	// things mid-run.
	runID := startChainRun(t, a, saveChain(t, a, slowChain("watch-kills", 16, 250)), map[string]any{})
	url := a.url + "/v1/runs/" + runID + "/events"
	var got []map[string]any
	var afterKill []map[string]any // events emitted once both kills were done
	killedAt := time.Time{}
	var killedA []int
	step := func(ev map[string]any) bool {
		got = append(got, ev)
		if !killedAt.IsZero() {
			if at, err := time.Parse(time.RFC3339Nano, ev["time"].(string)); err == nil && at.After(killedAt.Add(1500*time.Millisecond)) {
				afterKill = append(afterKill, ev)
			}
		}
		switch len(got) {
		case 4:
			killedA = listeners(t, db, a)
			terminate(t, db, killedA)
			t.Logf("killed A's listening connections %v", killedA)
		case 8:
			pids := listeners(t, db, b)
			terminate(t, db, pids)
			t.Logf("killed B's listening connections %v", pids)
			killedAt = time.Now()
		case 14:
			return false // the watcher drops
		}
		return true
	}
	if sseWatch(t, url, "", step) {
		t.Fatalf("the run ended before the watcher dropped (%d events): too fast to test a reconnect", len(got))
	}
	if _, m := a.do(t, "GET", "/v1/runs/"+runID, nil); m["status"] != "running" {
		t.Fatalf("the run is %v when the watcher drops, want running", m["status"])
	}
	last := fmt.Sprint(int64(got[len(got)-1]["seq"].(float64)))
	if !sseWatch(t, url, last, step) {
		t.Fatal("the reconnected watcher stopped early")
	}
	checkSeqs(t, runID, got)
	a.waitStatus(t, runID, "completed")
	stored := storedSeqs(t, db, []string{runID})
	if len(got) != stored {
		t.Fatalf("the watcher got %d events across the kills and the reconnect, the database holds %d", len(got), stored)
	}
	// A listens again (a new connection), and events after the kills still
	// arrive live: a NOTIFY, not the 1 s poll, woke the reader.
	if now := listeners(t, db, a); len(now) == 0 || slices.ContainsFunc(now, func(pid int) bool { return slices.Contains(killedA, pid) }) {
		t.Fatalf("A's listening connections after the kill: %v (killed %v), want a new one:\n%s", now, killedA, a.logs())
	}
	if len(afterKill) < 5 {
		t.Fatalf("only %d events after the kills settled", len(afterKill))
	}
	lat := latencies(t, afterKill)
	p90 := lat[len(lat)*9/10]
	t.Logf("after the kills: %d events, median %v, p90 %v, max %v", len(lat), lat[len(lat)/2], p90, lat[len(lat)-1])
	if p90 > 600*time.Millisecond {
		t.Errorf("after the kills events reach the watcher in p90 %v: no faster than the 1 s poll, the listener did not come back", p90)
	}
}
