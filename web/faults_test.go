package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store/sqlite"
)

// settleGoroutines waits until the goroutine count is at most want, and
// returns the last count seen.
func settleGoroutines(want int, within time.Duration) int {
	n := runtime.NumGoroutine()
	testutil.Poll(within, func() error {
		runtime.GC()
		if n = runtime.NumGoroutine(); n > want {
			return fmt.Errorf("%d goroutines, want at most %d", n, want)
		}
		return nil
	})
	return n
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// Faults (c): a tool that hangs until cancelled, a tool that ignores
// cancellation, and a process that forks children. Node and chain timeouts
// end them; afterwards no goroutine of the run and no child process is left
// (the one goroutine still inside the tool that ignores cancellation ends
// as soon as the tool returns).
func TestFaultsTimeoutsFreeEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("real child processes and seven timeouts, about 4 s (make test runs it)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	ws := t.TempDir()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Workspace: ws, ProcAllow: []string{sh}}))
	reg.SetInline(builtin.Inline...)
	var hangCancelled, ignoring atomic.Int32
	release := make(chan struct{})
	reg.Register("hang", func(ctx context.Context, _ map[string]any, _ tool.Emitter) (any, error) {
		<-ctx.Done()
		hangCancelled.Add(1)
		return nil, ctx.Err()
	})
	reg.Register("ignore_cancel", func(ctx context.Context, _ map[string]any, _ tool.Emitter) (any, error) {
		ignoring.Add(1)
		defer ignoring.Add(-1)
		<-release // never looks at ctx
		return "late", nil
	})
	_, ts := newTestServerWith(t, Config{}, reg)

	// Warm up (first run, connections, statement cache), then take the baseline.
	warm := createChain(t, ts, fmt.Sprintf(linearDoc, "warm"))
	r := do(t, ts, "POST", "/v1/chains/"+warm+"/runs", nil)
	wantStatus(t, r, http.StatusAccepted)
	waitRun(t, ts, r.json(t)["run_id"].(string))
	ts.Client().Transport.(*http.Transport).CloseIdleConnections()
	base := settleGoroutines(0, 300*time.Millisecond)

	pidFile := filepath.Join(ws, "pids")
	forker := `sleep 300 & echo $! >> pids; (sleep 301 & echo $! >> pids; wait) & sleep 302 & echo $! >> pids; wait`
	cases := []struct {
		name, doc, status, node, msg string
	}{
		{"node timeout, tool honours cancellation",
			`{"name":"hang-node","nodes":[{"node_id":"h","kind":"tool","name":"hang","timeout":0.3}]}`,
			"failed", "h", "timed out after 0.3s"},
		{"chain timeout, tool honours cancellation",
			`{"name":"hang-chain","timeout":0.3,"nodes":[{"node_id":"h","kind":"tool","name":"hang"}]}`,
			"timed_out", "h", ""},
		{"node timeout, tool ignores cancellation",
			`{"name":"ignore-node","nodes":[{"node_id":"i","kind":"tool","name":"ignore_cancel","timeout":0.3}]}`,
			"failed", "i", "timed out after 0.3s"},
		{"chain timeout, tool ignores cancellation",
			`{"name":"ignore-chain","timeout":0.3,"nodes":[{"node_id":"i","kind":"tool","name":"ignore_cancel"}]}`,
			"timed_out", "i", ""},
		{"node timeout, process forks children",
			fmt.Sprintf(`{"name":"fork-node","nodes":[{"node_id":"p","kind":"proc","timeout":0.5,"config":{"argv":[%q,"-c",%q]}}]}`, sh, forker),
			"failed", "p", "timed out"},
		{"chain timeout, process forks children",
			fmt.Sprintf(`{"name":"fork-chain","timeout":0.5,"nodes":[{"node_id":"p","kind":"proc","config":{"argv":[%q,"-c",%q]}}]}`, sh, forker),
			"timed_out", "p", ""},
		{"proc timeout, process forks children",
			fmt.Sprintf(`{"name":"fork-proc","nodes":[{"node_id":"p","kind":"proc","on_error":"continue","config":{"timeout":0.5,"argv":[%q,"-c",%q]}}]}`, sh, forker),
			"partial", "p", "proc timed out after 0.5s"},
	}
	var pids []int
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(pidFile)
			id := createChain(t, ts, tc.doc)
			start := time.Now()
			r := do(t, ts, "POST", "/v1/chains/"+id+"/runs", nil)
			wantStatus(t, r, http.StatusAccepted)
			run := waitRun(t, ts, r.json(t)["run_id"].(string))
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the run took %v to stop", d)
			}
			if run["status"] != tc.status {
				t.Fatalf("status %v, want %s: %v", run["status"], tc.status, run["error"])
			}
			if tc.msg != "" {
				found := false
				for _, x := range run["nodes"].([]any) {
					nd := x.(map[string]any)
					if nd["node_id"] == tc.node {
						found = true
						if msg, _ := nd["error"].(string); !strings.Contains(msg, tc.msg) {
							t.Errorf("node error %q, want %q", msg, tc.msg)
						}
					}
				}
				if !found {
					t.Errorf("no result for %s", tc.node)
				}
			}
			if b, err := os.ReadFile(pidFile); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
			}
		})
	}
	if len(pids) < 6 {
		t.Errorf("only %d child pids recorded", len(pids))
	}
	err = testutil.Poll(3*time.Second, func() error {
		for _, pid := range pids {
			if alive(pid) {
				return fmt.Errorf("child process %d outlived its run", pid)
			}
		}
		return nil
	})
	if err != nil {
		t.Error(err)
		for _, pid := range pids {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if hangCancelled.Load() != 2 {
		t.Errorf("the hanging tool saw %d cancellations, want 2", hangCancelled.Load())
	}
	ts.Client().Transport.(*http.Transport).CloseIdleConnections()
	// Two goroutines are still inside ignore_cancel (by design: Go cannot
	// stop them); nothing else of the runs is left.
	if n := settleGoroutines(base+int(ignoring.Load()), 5*time.Second); n > base+int(ignoring.Load()) {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d after the runs, %d before (+%d in ignore_cancel)\n%s", n, base, ignoring.Load(), buf[:runtime.Stack(buf, true)])
	}
	close(release)
	if n := settleGoroutines(base, 5*time.Second); n > base {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d once the stuck tools returned, %d before\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("goroutines: baseline %d, after %d", base, runtime.NumGoroutine())
}

// Faults (b): the database on a full disk. Writes fail with a clear 507 JSON
// error (no panic, no 500 without a reason), reads keep working, the file is
// not corrupted, and the studio recovers once space is freed.
func TestFaultsDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a 2 MiB tmpfs (%v: %s); the full-disk test needs it", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	path := filepath.Join(dir, "s.db")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Logger: testLogger()}, testDeps(t, db, testRegistry(), nil))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	defer func() {
		ts.Close()
		srv.Shutdown(ctx)
		service(srv).Close()
		db.Close()
	}()
	saved := createChain(t, ts, fmt.Sprintf(linearDoc, "before-full"))
	r := do(t, ts, "POST", "/v1/chains/"+saved+"/runs", `{"input":{"x":1}}`)
	wantStatus(t, r, http.StatusAccepted)
	savedRun := r.json(t)["run_id"].(string)
	waitRun(t, ts, savedRun)

	// Fill the disk, leaving a few KiB.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil {
		t.Logf("disk full: %d bytes free", st.Bavail*uint64(st.Bsize))
	}

	// Writes now fail: big enough documents cannot fit.
	big := strings.Repeat("x", 64<<10)
	full := 0
	for i := 0; i < 20; i++ {
		doc := fmt.Sprintf(`{"name":"full-%d","description":%q,"nodes":[]}`, i, big)
		r := do(t, ts, "POST", "/v1/chains", doc)
		if r.status == http.StatusCreated {
			continue
		}
		if r.status != http.StatusInsufficientStorage {
			t.Fatalf("a write on a full disk: %d %s, want 507", r.status, r.body)
		}
		if code := r.errCode(t); code != "insufficient_storage" {
			t.Fatalf("code %q: %s", code, r.body)
		}
		if !strings.Contains(string(r.body), "disk is full") {
			t.Fatalf("the error does not say the disk is full: %s", r.body)
		}
		full++
		if full >= 3 {
			break
		}
	}
	if full == 0 {
		t.Fatal("no write failed on a full disk")
	}
	// A run cannot be recorded either, and says why.
	r = do(t, ts, "POST", "/v1/chains/"+saved+"/runs", fmt.Sprintf(`{"input":{"pad":%q}}`, big))
	if r.status != http.StatusInsufficientStorage {
		t.Errorf("starting a run on a full disk: %d %s", r.status, r.body)
	}
	// Reads keep working.
	wantStatus(t, do(t, ts, "GET", "/v1/chains/"+saved, nil), 200)
	wantStatus(t, do(t, ts, "GET", "/v1/chains", nil), 200)
	wantStatus(t, do(t, ts, "GET", "/v1/runs/"+savedRun, nil), 200)
	wantStatus(t, do(t, ts, "GET", "/healthz", nil), 200)
	checkIntegrity(t, path)

	// Free the space: the studio recovers without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if r := do(t, ts, "POST", "/v1/chains", fmt.Sprintf(linearDoc, "after-full")); r.status != http.StatusCreated {
			return fmt.Errorf("writes did not recover once space was freed: %d %s", r.status, r.body)
		}
		return nil
	})
	r = do(t, ts, "POST", "/v1/chains/"+saved+"/runs", `{"input":{"x":2}}`)
	wantStatus(t, r, http.StatusAccepted)
	if run := waitRun(t, ts, r.json(t)["run_id"].(string)); run["status"] != "completed" {
		t.Fatalf("a run after recovery: %v", run)
	}
	checkIntegrity(t, path)
}
