package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// Failure tests of a cluster on PostgreSQL: the worker that owns a run is
// killed, paused past its lease, or cut off from its notifications, and the
// run still ends once, with its checkpointed nodes called once and its
// events numbered 1..N. Real processes of the built binary, loopback only.

const (
	failTTL    = 2 * time.Second
	failReaper = 500 * time.Millisecond
)

// startWorkerWith starts `studio worker` on dsn with extra flags and waits
// until it works jobs.
func startWorkerWith(t *testing.T, bin, dsn string, extra ...string) *studioProc {
	t.Helper()
	args := append([]string{"worker", "--db", dsn, "--agents", filepath.Join(t.TempDir(), "no-agents")}, extra...)
	p := &studioProc{cmd: exec.Command(bin, args...)}
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
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// failCluster is an API-only serve and workers with short leases whose
// http tool may call loopback (the counting server below).
func failCluster(t *testing.T, workers int, extra ...string) (api *studioProc, ws []*studioProc, dsn string, db *pgx.Conn) {
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
		ws = append(ws, startWorkerWith(t, bin, dsn, extra...))
	}
	ctx := context.Background()
	db, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return api, ws, dsn, db
}

// callCounter is a loopback HTTP server counting the calls of each
// (run tag, node); the very first call of the node named block waits until
// its caller goes away (killed, or its run cancelled) or the test ends.
type callCounter struct {
	srv     *httptest.Server
	mu      sync.Mutex
	calls   map[string]int // tag/node → calls
	block   string
	blocked bool
	arrived chan string // "node#call" as each call arrives
	release chan struct{}
}

func newCallCounter(t *testing.T, block string) *callCounter {
	c := &callCounter{calls: map[string]int{}, block: block, arrived: make(chan string, 100), release: make(chan struct{})}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		node := strings.TrimPrefix(r.URL.Path, "/call/")
		key := r.URL.Query().Get("tag") + "/" + node
		c.mu.Lock()
		c.calls[key]++
		n := c.calls[key]
		hold := node == c.block && !c.blocked
		c.blocked = c.blocked || hold
		c.mu.Unlock()
		c.arrived <- fmt.Sprintf("%s#%d", node, n)
		if hold {
			select {
			case <-r.Context().Done():
				return
			case <-c.release:
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"node":%q,"call":%d}`, node, n)
	}))
	t.Cleanup(func() {
		close(c.release)
		c.srv.Close()
	})
	return c
}

func (c *callCounter) count(tag, node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[tag+"/"+node]
}

// waitCall waits for the given call ("n3#2") to arrive.
func (c *callCounter) waitCall(t *testing.T, want string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case got := <-c.arrived:
			if got == want {
				return time.Now()
			}
		case <-deadline:
			t.Fatalf("call %s did not arrive within %v", want, within)
		}
	}
}

// httpChain calls the counter from four nodes in a line; the run's input
// carries each node's URL (with the run's tag).
func httpChain() map[string]any {
	var nodes, edges []any
	for i := 1; i <= 4; i++ {
		id := fmt.Sprintf("n%d", i)
		nodes = append(nodes, map[string]any{"node_id": id, "kind": "tool", "name": "http", "input_map": map[string]any{"url": "input." + id}})
		if i > 1 {
			edges = append(edges, map[string]any{"source": fmt.Sprintf("n%d", i-1), "target": id})
		}
	}
	return map[string]any{"name": "counted-http", "nodes": nodes, "edges": edges}
}

func (c *callCounter) input(tag string) map[string]any {
	in := map[string]any{}
	for i := 1; i <= 4; i++ {
		in[fmt.Sprintf("n%d", i)] = fmt.Sprintf("%s/call/n%d?tag=%s", c.srv.URL, i, tag)
	}
	return in
}

var ownerPID = regexp.MustCompile(`pid (\d+) `)

// owner returns the worker that owns a run now, and the run's epoch.
func owner(t *testing.T, db *pgx.Conn, ws []*studioProc, runID string) (*studioProc, int64) {
	t.Helper()
	var o *string
	var epoch int64
	if err := db.QueryRow(context.Background(), `SELECT owner, epoch FROM runs WHERE id = $1`, runID).Scan(&o, &epoch); err != nil {
		t.Fatal(err)
	}
	if o == nil {
		t.Fatalf("run %s has no owner", runID)
	}
	m := ownerPID.FindStringSubmatch(*o)
	if m == nil {
		t.Fatalf("owner %q names no pid", *o)
	}
	pid, _ := strconv.Atoi(m[1])
	for _, w := range ws {
		if w.cmd.Process.Pid == pid {
			return w, epoch
		}
	}
	t.Fatalf("run %s is owned by %q, none of the workers", runID, *o)
	return nil, 0
}

// waitNodeEntries waits until the run's log holds n node entries.
func waitNodeEntries(t *testing.T, db *pgx.Conn, runID string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var k int
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM checkpoints WHERE run_id = $1 AND kind = 'node'`, runID).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %d node entries stored, want %d", runID, k, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// storedWrites counts a run's checkpoint entries and stored events, and
// checks that the stored event batches cover 1..N once each.
func storedWrites(t *testing.T, db *pgx.Conn, runID string) (entries, events int64) {
	t.Helper()
	ctx := context.Background()
	if err := db.QueryRow(ctx, `SELECT count(*) FROM checkpoints WHERE run_id = $1`, runID).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, `SELECT first_seq, last_seq FROM event_batches WHERE run_id = $1 ORDER BY first_seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	next := int64(1)
	for rows.Next() {
		var first, last int64
		if err := rows.Scan(&first, &last); err != nil {
			t.Fatal(err)
		}
		if first != next || last < first {
			t.Fatalf("run %s: a stored batch holds seq %d..%d after %d: a gap or a duplicate", runID, first, last, next-1)
		}
		next = last + 1
	}
	return entries, next - 1
}

// SIGKILL the worker that owns a run while a node is in flight: another
// worker takes the run over within the lease TTL and the reaper period;
// the checkpointed nodes are not called again, the node in flight is
// called once more, the run completes, its events are 1..N.
func TestClusterKillOwnerMidNode(t *testing.T) {
	api, ws, _, db := failCluster(t, 2, "--http-allow-private", "--lease-ttl", failTTL.String(), "--reaper-period", failReaper.String())
	calls := newCallCounter(t, "n3")
	doc := saveChain(t, api, httpChain())
	tag := uuid.NewString()
	runID := startChainRun(t, api, doc, calls.input(tag))
	calls.waitCall(t, "n3#1", 30*time.Second)
	waitNodeEntries(t, db, runID, 2)
	victim, epoch := owner(t, db, ws, runID)
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	killed := time.Now()
	again := calls.waitCall(t, "n3#2", 30*time.Second)
	took := again.Sub(killed)
	t.Logf("the in-flight node ran again %v after the SIGKILL (lease TTL %v, reaper every %v)", took.Round(time.Millisecond), failTTL, failReaper)
	// The lease passes at most a TTL after the last heartbeat, the reaper
	// looks every period; a second of slack for this loaded machine.
	if limit := failTTL + failReaper + time.Second; took > limit {
		t.Errorf("taken over after %v, want within %v", took, limit)
	}
	api.waitStatus(t, runID, "completed")
	for node, want := range map[string]int{"n1": 1, "n2": 1, "n3": 2, "n4": 1} {
		if got := calls.count(tag, node); got != want {
			t.Errorf("node %s called %d times, want %d", node, got, want)
		}
	}
	checkSeqs(t, runID, api.events(t, runID))
	storedWrites(t, db, runID)
	survivor, newEpoch := ws[0], int64(0)
	if survivor == victim {
		survivor = ws[1]
	}
	if err := db.QueryRow(context.Background(), `SELECT epoch FROM runs WHERE id = $1`, runID).Scan(&newEpoch); err != nil {
		t.Fatal(err)
	}
	if newEpoch < epoch+2 { // the reaper's bump, the new owner's take
		t.Errorf("epoch %d after the takeover, was %d", newEpoch, epoch)
	}
	if !strings.Contains(survivor.logs(), "taking the run over from its log") {
		t.Errorf("the surviving worker did not log the takeover:\n%s", survivor.logs())
	}
}

// SIGSTOP the owner past its lease, let another worker take the run over
// and finish it, SIGCONT: the old owner writes nothing more (its node's
// cancellation, its end entry and its events are all refused), logs that
// it lost the lease, and goes on executing other runs.
func TestClusterPausedOwnerIsFenced(t *testing.T) {
	api, ws, _, db := failCluster(t, 2, "--http-allow-private", "--lease-ttl", failTTL.String(), "--reaper-period", failReaper.String())
	calls := newCallCounter(t, "n3")
	doc := saveChain(t, api, httpChain())
	tag := uuid.NewString()
	runID := startChainRun(t, api, doc, calls.input(tag))
	calls.waitCall(t, "n3#1", 30*time.Second)
	waitNodeEntries(t, db, runID, 2)
	time.Sleep(100 * time.Millisecond) // its event writer idle: no transaction left open
	old, _ := owner(t, db, ws, runID)
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The takeover needs the lease to lapse, a reaper pass and the other
	// worker's pickup: seconds alone, but once over 30 s under -race beside
	// the rest of `make test`; the bound only keeps a broken takeover from
	// hanging the test.
	calls.waitCall(t, "n3#2", 90*time.Second)
	api.waitStatus(t, runID, "completed")
	entries, events := storedWrites(t, db, runID)

	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Its heartbeat runs at once (a tick is due), finds the lease gone and
	// cancels the run there; give it a few heartbeats to try writing.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(old.logs(), "lease lost") {
		if time.Now().After(deadline) {
			t.Fatalf("the old owner never logged the lost lease:\n%s", old.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Stopping, the run tried to write its end: refused.
	for !strings.Contains(old.logs(), "a write of the run was refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the old owner never tried to write (or was not refused):\n%s", old.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(failTTL)
	entries2, events2 := storedWrites(t, db, runID)
	if entries2 != entries || events2 != events {
		t.Fatalf("after SIGCONT the old owner wrote: %d → %d entries, %d → %d events", entries, entries2, events, events2)
	}
	m := api.waitStatus(t, runID, "completed")
	if m["status"] != "completed" {
		t.Fatalf("the run is %v after the old owner woke", m["status"])
	}
	checkSeqs(t, runID, api.events(t, runID))
	if n := calls.count(tag, "n4"); n != 1 {
		t.Fatalf("n4 called %d times", n)
	}

	// It keeps working: with the other worker stopped, it runs a new run.
	for _, w := range ws {
		if w != old {
			w.stop(t)
		}
	}
	tag2 := uuid.NewString()
	run2 := startChainRun(t, api, doc, calls.input(tag2))
	api.waitStatus(t, run2, "completed")
	// The worker releases its lease just after it writes the run's end.
	if err := testutil.Poll(10*time.Second, func() error {
		if o, _ := ownerOrNone(db, run2); o != "" {
			return fmt.Errorf("the finished run still names an owner: %q", o)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(old.logs(), run2) {
		t.Fatalf("the old owner did not execute the next run:\n%s", old.logs())
	}
}

func ownerOrNone(db *pgx.Conn, runID string) (string, error) {
	var o *string
	err := db.QueryRow(context.Background(), `SELECT owner FROM runs WHERE id = $1`, runID).Scan(&o)
	if o == nil {
		return "", err
	}
	return *o, err
}

// Cancel through the API process a run executing on a worker: cancelled
// within 1 s through River's notification; and within 6 s while every
// listening connection of the worker (River's notifier and the studio's
// event listener) is killed as soon as it comes back, through the lease's
// heartbeat (default TTL 15 s: a renewal every 5 s).
func TestClusterCancelWithoutNotifications(t *testing.T) {
	api, ws, _, db := failCluster(t, 1)
	doc := saveChain(t, api, slowChain("slow-cancel-fail", 3, 20000))
	cancelWithin := func(runID string, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		if code, m := api.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil); code != 202 {
			t.Fatalf("cancel: %d %v", code, m)
		}
		for {
			_, m := api.do(t, "GET", "/v1/runs/"+runID, nil)
			if m["status"] == "cancelled" {
				return time.Since(start)
			}
			if time.Since(start) > limit {
				t.Fatalf("not cancelled %v after the cancel: %v\n%s", limit, m["status"], ws[0].logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	runID := startChainRun(t, api, doc, map[string]any{})
	api.waitStatusActive(t, runID, "running")
	t.Logf("cancelled with notifications after %v", cancelWithin(runID, time.Second).Round(time.Millisecond))

	runID = startChainRun(t, api, doc, map[string]any{})
	api.waitStatusActive(t, runID, "running")
	app := fmt.Sprintf("chain-studio pid %d on %%", ws[0].cmd.Process.Pid)
	kill := func() int {
		var n int
		err := db.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
WHERE application_name LIKE $1 AND (query ILIKE 'listen%' OR query ILIKE 'unlisten%')) k`, app).Scan(&n)
		if err != nil {
			t.Errorf("kill the listeners: %v", err)
		}
		return n
	}
	if n := kill(); n == 0 {
		t.Fatal("the worker has no listening connection to kill")
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				kill()
			}
		}
	}()
	took := cancelWithin(runID, 6*time.Second)
	close(stop)
	<-done
	t.Logf("cancelled with the listeners killed after %v", took.Round(time.Millisecond))
}
