package builtin_test

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// Runaway work: a chain that builds a huge value or loops without end is
// stopped by a budget or by its node's timeout, and afterwards nothing keeps
// running.

func runawayEngine() *engine.Engine {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	return engine.New(engine.Options{Registry: reg})
}

func decode(t *testing.T, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAlloc is the live heap after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// settle waits for the goroutines the run started to end and then proves
// the process idle: over one second it uses less than 100 ms of CPU.
func settle(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("goroutines back to %d, %v after the run returned", runtime.NumGoroutine(), time.Until(deadline.Add(-time.Second)).Abs().Round(time.Millisecond))
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left running (was %d):\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	c0, w0 := cpuTime(t), time.Now()
	time.Sleep(time.Second)
	used, wall := cpuTime(t)-c0, time.Since(w0)
	t.Logf("CPU over %v after the run: %v", wall.Round(time.Millisecond), used)
	if used > 100*time.Millisecond {
		t.Fatalf("process used %v of CPU in the second after the run: runaway work goes on", used)
	}
}

func TestRunawayWorkStops(t *testing.T) {
	doubling := func(root string, n int) string {
		return root + strings.Repeat(" | [@,@]", n)
	}
	cases := []struct {
		name    string
		doc     string
		cancel  time.Duration // cancel the run after this long (0: never)
		status  chain.RunStatus
		message string
		within  time.Duration
	}{
		{
			name: "template_memory_bomb",
			doc: `{"name":"t","nodes":[{"node_id":"t","kind":"tool","name":"template","timeout":5,
				"input":{"template":"{{$x := \"aaaaaaaaaaaaaaaa\"}}{{range 40}}{{$x = printf \"%s%s\" $x $x}}{{end}}done"}}]}`,
			status:  chain.StatusFailed,
			message: "template would build a value over the 1048576-byte output cap",
		},
		{
			name: "template_that_never_yields_times_out",
			doc: `{"name":"t","nodes":[{"node_id":"t","kind":"tool","name":"template","timeout":1,
				"input":{"template":"{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}"}}]}`,
			status:  chain.StatusFailed,
			message: "timed out after 1s",
			within:  1100 * time.Millisecond,
		},
		{
			name: "template_that_never_yields_cancelled",
			doc: `{"name":"t","nodes":[{"node_id":"t","kind":"tool","name":"template",
				"input":{"template":"{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}"}}]}`,
			cancel: 300 * time.Millisecond,
			status: chain.StatusCancelled,
			within: 400 * time.Millisecond,
		},
		{
			name: "transform_doubling_27",
			doc: `{"name":"t","nodes":[{"node_id":"t","kind":"tool","name":"transform","timeout":120,
				"input":{"expression":"` + doubling("@", 27) + `","data":"x"}}]}`,
			status:  chain.StatusFailed,
			message: "expression built more than 4194304 elements",
		},
		{
			name: "input_map_doubling_40",
			doc: `{"name":"t","nodes":[{"node_id":"e","kind":"tool","name":"echo","timeout":120,
				"input_map":{"v":"` + doubling("input", 40) + `"}}]}`,
			status:  chain.StatusFailed,
			message: "expression built more than 4194304 elements",
		},
	}
	e := runawayEngine()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			heap0 := heapAlloc()
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			start := time.Now()
			res, _ := e.Run(ctx, enginetest.PlanOf(e, decode(t, tc.doc)), map[string]any{"x": "x"}, engine.RunOptions{})
			took := time.Since(start)
			t.Logf("run returned after %v: %s", took.Round(time.Millisecond), res.Error.Message)
			if res == nil || res.Status != tc.status {
				t.Fatalf("status = %+v, want %s", res, tc.status)
			}
			if tc.message != "" && (res.Error == nil || !strings.Contains(res.Error.Message, tc.message)) {
				t.Fatalf("error = %+v, want it to say %q", res.Error, tc.message)
			}
			// A budget case has no "within" and a node timeout far beyond
			// anything the budget needs: its message proves the budget ended
			// the run, and how long building up to the budget takes depends
			// on the machine's load (over 5 s on a loaded CI machine under
			// the race detector).
			if tc.within > 0 {
				limit := tc.within + tc.cancel
				if builtin.RaceSlack > 1 {
					// The race detector on a loaded machine (make test runs
					// every package at once) slows the template engine's
					// steps between cancellation checks.
					limit += 1500 * time.Millisecond
				}
				if took > limit {
					t.Errorf("run returned after %v, want within %v", took, limit)
				}
			}
			if grown := int64(heapAlloc()) - int64(heap0); grown > 64<<20 {
				t.Errorf("live heap grew by %d MiB", grown>>20)
			}
			settle(t, before)
		})
	}
}

// The node timeout covers building the node's input: an input_map that
// takes longer than the node's timeout (though within the budget) ends as
// the node timing out, on time.
func TestNodeTimeoutCoversInputMap(t *testing.T) {
	items := make([]any, 4_000_000)
	for i := range items {
		items[i] = float64(i)
	}
	doc := `{"name":"t","nodes":[{"node_id":"e","kind":"tool","name":"echo","timeout":0.05,
		"input_map":{"n":"length(input.items[?@ < ` + "`0`" + `] || input.items[?@ < ` + "`0`" + `] || input.items[?@ < ` + "`0`" + `])"}}]}`
	before := runtime.NumGoroutine()
	start := time.Now()
	res, _ := runawayEngine().Run(context.Background(), enginetest.PlanOf(runawayEngine(), decode(t, doc)), map[string]any{"items": items}, engine.RunOptions{})
	took := time.Since(start)
	t.Logf("run returned after %v: %+v", took.Round(time.Millisecond), res.Error)
	if res.Status != chain.StatusFailed || res.Error == nil || !strings.Contains(res.Error.Message, "timed out after 0.05s") {
		t.Fatalf("status %s, error %+v: want the node's timeout", res.Status, res.Error)
	}
	// Measured on the node: the run first copies its 4-million-item input.
	nr := res.Nodes["e"]
	// Without the timeout the three filters over 4 million items take
	// seconds; within 100 ms of the timeout on a quiet machine, and within
	// half a second under the race detector on a loaded one (make test runs
	// every package at once).
	limit := 150 * time.Millisecond
	if builtin.RaceSlack > 1 {
		limit = 500 * time.Millisecond
	}
	if d := nr.Ended.Sub(nr.Started); d > limit {
		t.Errorf("node ran for %v, want within %v of its start (its timeout is 50 ms)", d, limit)
	} else {
		t.Logf("node ran for %v", d.Round(time.Millisecond))
	}
	settle(t, before)
}

// An error handler sees a budget stop as error.code "budget_exceeded".
func TestBudgetErrorCodeReachesHandler(t *testing.T) {
	t.Parallel()
	for _, n := range []string{
		`{"node_id":"t","kind":"tool","name":"template","on_error":"h","input":{"template":"{{$x := \"aaaaaaaaaaaaaaaa\"}}{{range 40}}{{$x = printf \"%s%s\" $x $x}}{{end}}"}}`,
		`{"node_id":"t","kind":"tool","name":"transform","on_error":"h","input":{"expression":"@` + strings.Repeat(" | [@,@]", 27) + `","data":"x"}}`,
		`{"node_id":"t","kind":"tool","name":"echo","on_error":"h","input_map":{"v":"input` + strings.Repeat(" | [@,@]", 27) + `"}}`,
	} {
		doc := `{"name":"t","nodes":[` + n + `,{"node_id":"h","kind":"tool","name":"echo","input_map":{"code":"error.code"}}]}`
		res, _ := runawayEngine().Run(context.Background(), enginetest.PlanOf(runawayEngine(), decode(t, doc)), map[string]any{}, engine.RunOptions{})
		if got := res.Outputs["h"]; got == nil || got.(map[string]any)["code"] != "budget_exceeded" {
			t.Errorf("%s: handler got %v (run %s %+v)", n[:40], got, res.Status, res.Error)
		}
	}
}
