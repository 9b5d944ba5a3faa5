//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// TestMain makes the test binary a sandbox child when started as one, the
// way the studio's binary is: the pool re-executes os.Args[0].
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ChildArg {
		Child(os.Args[2:])
	}
	os.Exit(m.Run())
}

func newTestPool(t testing.TB, lim Limits) *Pool {
	t.Helper()
	p, err := NewPool(os.Args[0], lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func run(t testing.TB, p *Pool, code string, scope any) *Response {
	t.Helper()
	b, _ := json.Marshal(scope)
	resp, err := p.Run(context.Background(), &Request{Code: code, Scope: b})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return resp
}

func TestPoolOutputAndLogs(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	resp := run(t, p, `console.log("n is", input.n, {a: [1]}); return {double: input.n * 2, item, index, s: state.k, up: nodes.a.x}`,
		map[string]any{"input": map[string]any{"n": 21}, "state": map[string]any{"k": "v"}, "nodes": map[string]any{"a": map[string]any{"x": true}}, "item": "it", "index": 3})
	if resp.Kind != "" {
		t.Fatalf("error: %+v", resp)
	}
	if got := string(resp.Value); got != `{"double":42,"item":"it","index":3,"s":"v","up":true}` {
		t.Fatalf("value %s", got)
	}
	if len(resp.Logs) != 1 || resp.Logs[0] != `n is 21 {"a":[1]}` {
		t.Fatalf("logs %q", resp.Logs)
	}
}

func TestPoolLogsBounded(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	resp := run(t, p, `for (let i = 0; i < 1000; i++) console.log("line " + i); return 1`, map[string]any{})
	if len(resp.Logs) != MaxLogLines || resp.LogsDropped != 1000-MaxLogLines {
		t.Fatalf("%d logs, %d dropped", len(resp.Logs), resp.LogsDropped)
	}
}

func TestPoolFreshRuntimePerCall(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	run(t, p, `globalThis.leak = 1; Array.prototype.evil = 1; return 1`, map[string]any{})
	resp := run(t, p, `return [typeof leak, [].evil === undefined]`, map[string]any{})
	if string(resp.Value) != `["undefined",true]` {
		t.Fatalf("a call saw the previous one's globals: %s", resp.Value)
	}
	// Two runs of the same script, one child: the second run starts from
	// nothing the first left, while the first run's calls share a world.
	code := `const before = [typeof leak, [].evil === undefined]; globalThis.leak = 1; Array.prototype.evil = 1; return before`
	for _, c := range []struct{ session, want string }{{"run-a", `["undefined",true]`}, {"run-a", `["number",false]`}, {"run-b", `["undefined",true]`}} {
		resp, err := p.Run(context.Background(), &Request{Code: code, Scope: json.RawMessage(`{}`), Session: c.session})
		if err != nil || string(resp.Value) != c.want {
			t.Fatalf("session %s: %s %v, want %s", c.session, resp.Value, err, c.want)
		}
	}
}

func TestPoolThrowHasLine(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	resp := run(t, p, "let a = 1;\n  throw new Error('bad ' + a)", map[string]any{})
	if resp.Kind != KindRuntime || resp.Line != 2 || !strings.Contains(resp.Error, "bad 1") {
		t.Fatalf("%+v", resp)
	}
}

func TestPoolSyntaxError(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	resp := run(t, p, "let a = 1;\nreturn a +;", map[string]any{})
	if resp.Kind != KindSyntax || resp.Line != 2 || resp.Column != 11 {
		t.Fatalf("%+v", resp)
	}
}

func TestCheckPositions(t *testing.T) {
	for _, c := range []struct {
		code      string
		line, col int
	}{
		{"return (", 1, 9},
		{"let x = 1\nlet x = 2", 2, 5},
		{"return 1\n)", 2, 1},
		{"x = {", 1, 6},
	} {
		err := Check(c.code)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: %v, want a SyntaxError", c.code, err)
			continue
		}
		if se.Line != c.line || se.Column != c.col {
			t.Errorf("%q: %d:%d %s, want %d:%d", c.code, se.Line, se.Column, se.Message, c.line, c.col)
		}
	}
	if err := Check("return input.a ?? 1 // ES2020"); err != nil {
		t.Fatal(err)
	}
	if err := Check(strings.Repeat(" ", MaxScriptBytes+1)); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Fatalf("oversized: %v", err)
	}
}

func TestPoolInfiniteLoopStopsAtCPULimit(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, CPUSeconds: 1})
	start := time.Now()
	resp := run(t, p, `for (;;) {}`, map[string]any{})
	if resp.Kind != KindCPU || !strings.Contains(resp.Error, "CPU time limit of 1 s") {
		t.Fatalf("%+v", resp)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
	// The same child serves the next call.
	if resp := run(t, p, `return 2`, map[string]any{}); string(resp.Value) != "2" {
		t.Fatalf("after the loop: %+v", resp)
	}
}

func TestPoolContextKillsChild(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, errors.New("node timed out"))
	defer cancel()
	_, err := p.Run(ctx, &Request{Code: `for (;;) {}`, Scope: json.RawMessage(`{}`)})
	if err == nil || err.Error() != "node timed out" {
		t.Fatalf("err %v", err)
	}
	if resp := run(t, p, `return 3`, map[string]any{}); string(resp.Value) != "3" {
		t.Fatalf("after the kill: %+v", resp)
	}
}

func TestPoolMemoryLimit(t *testing.T) {
	if raceOn {
		t.Skip("the race detector cannot run under RLIMIT_AS")
	}
	p := newTestPool(t, Limits{Workers: 1, MemoryMB: 64})
	for _, code := range []string{
		`let a = []; for (;;) a.push({x: new Array(1000).fill(1)})`, // grows: the heap watch
		`return "x".repeat(4 * 1024 * 1024 * 1024)`,                 // one huge request
		`let s = "ab"; for (;;) s = s + s`,                          // doubles
	} {
		resp := run(t, p, code, map[string]any{})
		t.Logf("%s: %s", code, resp.Error)
		if resp.Kind != KindMemory && !(resp.Kind == KindRuntime && strings.Contains(resp.Error, "Invalid string length")) {
			t.Fatalf("%s: %+v", code, resp)
		}
		if resp.Kind == KindMemory && !strings.Contains(resp.Error, "memory limit of 64 MiB") {
			t.Fatalf("%s: %+v", code, resp)
		}
	}
	if resp := run(t, p, `return 4`, map[string]any{}); string(resp.Value) != "4" {
		t.Fatalf("after the memory limit: %+v", resp)
	}
}

func TestPoolNoEnvNoFilesNoNetwork(t *testing.T) {
	os.Setenv("SANDBOX_SECRET", "s3cret")
	defer os.Unsetenv("SANDBOX_SECRET")
	p := newTestPool(t, Limits{Workers: 1})
	for _, code := range []string{
		`return typeof process === "undefined" && typeof require === "undefined" && typeof fetch === "undefined" && typeof XMLHttpRequest === "undefined" && typeof setTimeout === "undefined"`,
		`try { return typeof require("fs") } catch (e) { return true }`,
		`try { return typeof import("fs") } catch (e) { return true }`,
		`return !JSON.stringify(Object.getOwnPropertyNames(globalThis)).includes("s3cret") && typeof Deno === "undefined" && typeof Bun === "undefined"`,
		`try { new WebSocket("ws://127.0.0.1:1"); return false } catch (e) { return true }`,
	} {
		resp := run(t, p, code, map[string]any{})
		if string(resp.Value) != "true" && resp.Kind != KindSyntax {
			t.Errorf("%s: %+v", code, resp)
		}
	}
}

func TestPoolConcurrentCallsShareWorkers(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, _ := json.Marshal(map[string]any{"input": i})
			resp, err := p.Run(context.Background(), &Request{Code: `return input * 10`, Scope: b})
			if err != nil {
				errs <- err
				return
			}
			if string(resp.Value) != fmt.Sprint(i*10) {
				errs <- fmt.Errorf("%d: %s", i, resp.Value)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := p.children(); n > 2 {
		t.Fatalf("%d children for 2 workers", n)
	}
}

func TestPoolQueueBounded(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, MaxQueue: 1, CPUSeconds: 5})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // one in flight (a run of long calls has one a worker), one waiting
		wg.Add(1)
		go func() { defer wg.Done(); p.Run(ctx, &Request{Code: `for(;;){}`, Scope: json.RawMessage(`{}`)}) }()
	}
	err := testutil.Poll(10*time.Second, func() error {
		if p.sched.waitingOf("") < 1 {
			return errors.New("no call waiting yet")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(ctx, &Request{Code: `return 1`, Scope: json.RawMessage(`{}`)})
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("err %v, want ErrBusy", err)
	}
	cancel()
	wg.Wait()
}

// A call that times out while others wait behind it on the same child
// kills that child; the others run again elsewhere and succeed.
func TestPoolTimeoutDoesNotFailCallsBehindIt(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := p.Run(ctx, &Request{Code: `for(;;){}`, Scope: json.RawMessage(`{}`)}); err == nil {
			t.Error("the endless loop returned")
		}
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if p.children() != 1 {
			return errors.New("the child has not started")
		}
		return nil
	})
	results := make(chan string, 5)
	for i := 0; i < 5; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, _ := json.Marshal(map[string]any{"input": i})
			resp, err := p.Run(context.Background(), &Request{Code: `return input + 100`, Scope: b})
			if err != nil {
				results <- err.Error()
				return
			}
			results <- string(resp.Value)
		}(i)
	}
	wg.Wait()
	close(results)
	for r := range results {
		if len(r) != 3 || r[0] != '1' {
			t.Errorf("a call behind the timed-out one: %s", r)
		}
	}
}

func BenchmarkPoolTrivial(b *testing.B) {
	p := newTestPool(b, Limits{Workers: 1})
	req := &Request{Code: `return {n: input.n + 1}`, Scope: json.RawMessage(`{"input":{"n":1}}`)}
	if _, err := p.Run(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Run(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// A big request written behind a running endless loop fills the pipe and
// blocks its writer; the loop's timeout still kills the child at once, and
// the big request runs again on a fresh one.
func TestPoolKillWhileAWriteBlocks(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, CPUSeconds: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	loopDone := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx, &Request{Code: `for(;;){}`, Scope: json.RawMessage(`{}`)})
		loopDone <- err
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if p.children() != 1 {
			return errors.New("the child has not started")
		}
		return nil
	})
	big, _ := json.Marshal(map[string]any{"input": strings.Repeat("x", 4<<20)})
	start := time.Now()
	resp, err := p.Run(context.Background(), &Request{Code: `return input.length`, Scope: big})
	if err != nil || string(resp.Value) != fmt.Sprint(4<<20) {
		t.Fatalf("the big call: %v %+v", err, resp)
	}
	if err := <-loopDone; err == nil {
		t.Fatal("the loop returned")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s: the kill waited for the blocked write", d)
	}
}

// childCPU is the CPU time a process has used, all its threads: the sum of
// their run time in /proc/PID/task/*/schedstat, in nanoseconds (the
// process's stat counts in 10 ms ticks).
func childCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		var ns int64
		if _, err := fmt.Sscan(string(b), &ns); err != nil {
			t.Fatalf("schedstat %q: %v", b, err)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// An endless loop with a 1 s limit uses 1 s of its child's CPU time, not
// the whole seconds RLIMIT_CPU counts in.
func TestPoolCPULimitMeasuredInTheChild(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, CPUSeconds: 1})
	run(t, p, `return 1`, map[string]any{}) // the child is up
	p.mu.Lock()
	pid := p.workers[0].cmd.Process.Pid
	p.mu.Unlock()
	for i := 0; i < 2; i++ { // the second call starts with CPU time already used
		before := childCPU(t, pid)
		resp := run(t, p, `for (;;) {}`, map[string]any{})
		used := childCPU(t, pid) - before
		t.Logf("call %d: the child used %s", i, used)
		if resp.Kind != KindCPU || !strings.Contains(resp.Error, "CPU time limit of 1 s") {
			t.Fatalf("%+v", resp)
		}
		if used < time.Second || used > 1250*time.Millisecond {
			t.Fatalf("the loop used %s of the child's CPU time, want 1 s to 1.25 s", used)
		}
		if resp.CPU < time.Second || resp.CPU > 1250*time.Millisecond {
			t.Fatalf("the child reported %s of CPU time for the call", resp.CPU)
		}
	}
}

// One run flooding the sandbox with long calls (more than its queue holds)
// neither makes another run's calls fail as busy nor holds them until its
// own are done: the other run's call answers while the first still has
// calls waiting.
func TestPoolFloodingRunDoesNotStarveAnother(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 2, CPUSeconds: 1, MaxQueue: 64})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan error, 150)
	for i := 0; i < 150; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Run(ctx, &Request{Code: `for (;;) {}`, Scope: json.RawMessage(`{}`), Session: "flood"})
			done <- err
		}()
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := p.sched.waitingOf("flood"); n < 64 {
			return fmt.Errorf("%d calls of the flood waiting", n)
		}
		return nil
	})

	resp, err := p.Run(context.Background(), &Request{Code: `return 42`, Scope: json.RawMessage(`{}`), Session: "other"})
	if err != nil || string(resp.Value) != "42" {
		t.Fatalf("the other run's call: %+v %v", resp, err)
	}
	if n := p.sched.waitingOf("flood"); n == 0 {
		t.Fatal("the other run's call waited for the whole flood")
	}
	cancel()
	wg.Wait()
	close(done)
	busy := 0
	for err := range done {
		if errors.Is(err, ErrBusy) {
			busy++
		}
	}
	if busy == 0 {
		t.Fatal("the flood's own queue never filled")
	}
}

// A run over its CPU budget fails its remaining calls, naming the flag;
// another run still runs.
func TestPoolRunCPUBudget(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, CPUSeconds: 5, RunCPUSeconds: 1})
	call := func(session, code string) (*Response, error) {
		return p.Run(context.Background(), &Request{Code: code, Scope: json.RawMessage(`{}`), Session: session})
	}
	resp, err := call("a", `for (;;) {}`)
	if err != nil || resp.Kind != KindCPU || !strings.Contains(resp.Error, "CPU time budget of 1 s a run (--code-run-cpu-seconds)") {
		t.Fatalf("the call that used the budget: %+v %v", resp, err)
	}
	if resp.CPU > 1250*time.Millisecond {
		t.Fatalf("the call used %s of a 1 s budget", resp.CPU)
	}
	_, err = call("a", `return 1`)
	if !errors.Is(err, ErrRunCPU) || !strings.Contains(err.Error(), "--code-run-cpu-seconds") {
		t.Fatalf("a call past the budget: %v", err)
	}
	if resp, err := call("b", `return 2`); err != nil || string(resp.Value) != "2" {
		t.Fatalf("another run: %+v %v", resp, err)
	}
	// Calls outside a run have no budget.
	if resp, err := call("", `for (let i = 0; i < 1e5; i++) {} return 3`); err != nil || string(resp.Value) != "3" {
		t.Fatalf("a call without a run: %+v %v", resp, err)
	}
}

// On a busy machine a script may run past the backstop's wall time without
// having had its CPU time: the pool does not kill it as stuck, and the
// child's own watch stops it at its limit. The child is stopped (SIGSTOP)
// to stand for a machine that gives it no CPU.
func TestPoolBackstopGoesByTheChildsCPU(t *testing.T) {
	p := newTestPool(t, Limits{Workers: 1, CPUSeconds: 1})
	run(t, p, `return 1`, map[string]any{})
	p.mu.Lock()
	w := p.workers[0]
	p.mu.Unlock()
	pid := w.cmd.Process.Pid
	got := make(chan *Response, 1)
	go func() {
		resp, err := p.Run(context.Background(), &Request{Code: `for (;;) {}`, Scope: json.RawMessage(`{}`)})
		if err != nil {
			resp = &Response{Error: err.Error()}
		}
		got <- resp
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n, _ := w.load(time.Now()); n == 0 {
			return errors.New("the loop has not been sent")
		}
		return nil
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if w.spared.Load() == 0 {
			return errors.New("the backstop's wall time has not passed")
		}
		return nil
	})
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resp := <-got
	if resp.Kind != KindCPU || resp.Error != "the script went over its CPU time limit of 1 s" {
		t.Fatalf("%+v", resp)
	}
}
