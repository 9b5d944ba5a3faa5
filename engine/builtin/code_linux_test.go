//go:build linux

package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/chaintest"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/sandbox"
)

// TestMain lets the test binary be the sandbox's child, as the studio's
// binary is (`studio __sandbox`).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.ChildArg {
		sandbox.Child(os.Args[2:])
	}
	os.Exit(m.Run())
}

var testPool struct {
	once sync.Once
	p    *sandbox.Pool
}

// codePool is one pool for the package's tests (children stay warm).
func codePool(t testing.TB) *sandbox.Pool {
	testPool.once.Do(func() {
		p, err := sandbox.NewPool(os.Args[0], sandbox.Limits{Workers: 2, CPUSeconds: 2, MemoryMB: 128})
		if err != nil {
			panic(err)
		}
		testPool.p = p
	})
	return testPool.p
}

func codeEngine(t testing.TB) *engine.Engine { return codeEngineWith(codePool(t)) }

func codeEngineWith(pool builtin.CodeRunner) *engine.Engine {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Code: pool}))
	reg.SetInline(builtin.Inline...)
	reg.SetScoped(builtin.Scoped...)
	for _, ti := range builtin.Catalog() {
		reg.SetInputSchema(ti.Name, ti.InputSchema)
	}
	for n, c := range builtin.Checks(builtin.Options{}) {
		reg.SetCheck(n, c)
	}
	return engine.New(engine.Options{Registry: reg})
}

type progressSink struct {
	mu  sync.Mutex
	evs []engine.Event
}

func (s *progressSink) Emit(e engine.Event) {
	s.mu.Lock()
	s.evs = append(s.evs, e)
	s.mu.Unlock()
}

func runCode(t *testing.T, doc string, input map[string]any) (*engine.Result, *progressSink) {
	t.Helper()
	c := decode(t, doc)
	sink := &progressSink{}
	res, err := codeEngine(t).Run(context.Background(), enginetest.PlanOf(codeEngine(t), c), input, engine.RunOptions{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	return res, sink
}

func TestCodeNodeReadsScopeAndLogs(t *testing.T) {
	res, sink := runCode(t, `{"name":"c","nodes":[
	  {"node_id":"first","kind":"tool","name":"echo","set_state":{"k":"'v'"}},
	  {"node_id":"js","kind":"tool","name":"code","input":{"code":"console.log('got', output.n, [1,2]);\nreturn {n: output.n * 2, run: input.n, s: state.k, first: nodes.first.n, same: node_results.first === nodes.first}"}}],
	 "edges":[{"source":"first","target":"js"}]}`, map[string]any{"n": 21.0})
	if res.Status != chain.StatusCompleted {
		t.Fatalf("%s %+v", res.Status, res.Error)
	}
	got, _ := json.Marshal(res.FinalOutput)
	if string(got) != `{"first":21,"n":42,"run":21,"s":"v","same":true}` {
		t.Fatalf("output %s", got)
	}
	var logged []any
	for _, e := range sink.evs {
		if m, ok := e.Progress.(map[string]any); ok && e.NodeID == "js" && m["step"] == builtin.StepLog {
			logged = m["lines"].([]any)
		}
	}
	if len(logged) != 1 || logged[0] != "got 21 [1,2]" {
		t.Fatalf("logs %v", logged)
	}
}

func TestCodeNodeInMap(t *testing.T) {
	res, _ := runCode(t, `{"name":"c","nodes":[
	  {"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	  {"node_id":"body","kind":"tool","name":"code","input":{"code":"return {v: item * 10, index, same: output === item}"}}]}`,
		map[string]any{"xs": []any{1.0, 2.0}})
	got, _ := json.Marshal(res.FinalOutput)
	if string(got) != `[{"index":0,"same":true,"v":10},{"index":1,"same":true,"v":20}]` {
		t.Fatalf("%s %+v: %s", res.Status, res.Error, got)
	}
}

func TestCodeNodeErrorsNameTheirCause(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{`throw new Error("nope")`, "code: Error: nope (line 1, column 7)"},
		{`return () => 1`, "a function or a symbol"},
		{`for (;;) {}`, "CPU time limit of 2 s"},
		{`let a = []; for (let i = 0; ; i++) a.push("x".repeat(1 << 20) + i)`, "memory limit of 128 MiB"},
		{`return "x".repeat(4 * 1024 * 1024 * 1024)`, "memory limit of 128 MiB"},
	} {
		if raceOn && strings.Contains(c.want, "memory") {
			continue // the race detector cannot run under RLIMIT_AS
		}
		doc := fmt.Sprintf(`{"name":"c","nodes":[{"node_id":"js","kind":"tool","name":"code","input":{"code":%q}}]}`, c.code)
		res, _ := runCode(t, doc, nil)
		if res.Status != chain.StatusFailed || res.Error == nil || !strings.Contains(res.Error.Message, c.want) {
			t.Errorf("%s: %s %+v, want %q", c.code, res.Status, res.Error, c.want)
		}
	}
}

func TestCodeNodeTimeoutKillsScript(t *testing.T) {
	start := time.Now()
	res, _ := runCode(t, `{"name":"c","nodes":[{"node_id":"js","kind":"tool","name":"code","timeout":0.5,"input":{"code":"for (;;) {}"}}]}`, nil)
	if res.Status != chain.StatusFailed || !strings.Contains(res.Error.Message, "timed out after 0.5s") {
		t.Fatalf("%s %+v", res.Status, res.Error)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("took %s: the CPU limit (2 s) stopped it, not the timeout", d)
	}
}

func TestCodeNodeSyntaxErrorAtValidation(t *testing.T) {
	c := decode(t, `{"name":"c","nodes":[{"node_id":"js","kind":"tool","name":"code","input":{"code":"let a = 1;\nreturn a +;"}}]}`)
	reg := engine.NewRegistry()
	for n, ch := range builtin.Checks(builtin.Options{}) {
		reg.SetCheck(n, ch)
	}
	issues := chain.ValidateWith(c, chain.ValidateOptions{Check: reg.NodeCheck})
	if len(issues) != 1 {
		t.Fatalf("%v", issues)
	}
	is := issues[0]
	if is.Rule != chain.RuleInputCheck || is.NodeID != "js" || is.Field != "input.code" || is.Line != 2 || is.Column != 11 || !strings.Contains(is.Message, "line 2, column 11") {
		t.Fatalf("%+v", is)
	}
	// A script input_map sets is not checked: it is known at run time only.
	c = decode(t, `{"name":"c","nodes":[{"node_id":"js","kind":"tool","name":"code","input":{"code":"return +"},"input_map":{"code":"input.src"}}]}`)
	if issues := chain.ValidateWith(c, chain.ValidateOptions{Check: reg.NodeCheck}); len(issues) != 0 {
		t.Fatalf("%v", issues)
	}
}

func TestCodeNodeRefusedWithoutSandbox(t *testing.T) {
	_, err := builtin.Tools(builtin.Options{})["code"](context.Background(), map[string]any{"code": "return 1"}, func(any) {})
	if err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Fatalf("%v", err)
	}
}

func benchRun(b *testing.B, doc string, input map[string]any) {
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	eng := codeEngine(b)
	p := enginetest.PlanOf(eng, c)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := eng.Run(context.Background(), p, input, engine.RunOptions{})
		if err != nil || res.Status != chain.StatusCompleted {
			b.Fatalf("%v %s %+v", err, res.Status, res.Error)
		}
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "median-ns/op")
}

// BenchmarkCodeTrivial is one code node's run against BenchmarkTransformTrivial's.
func BenchmarkCodeTrivial(b *testing.B) {
	benchRun(b, `{"name":"c","nodes":[{"node_id":"n","kind":"tool","name":"code","input":{"code":"return {n: input.n + 1}"}}]}`, map[string]any{"n": 1.0})
}

func BenchmarkTransformTrivial(b *testing.B) {
	benchRun(b, `{"name":"c","nodes":[{"node_id":"n","kind":"tool","name":"transform","input":{"expression":"{n: n}"},"input_map":{"data":"input"}}]}`, map[string]any{"n": 1.0})
}

func mapInput() map[string]any {
	xs := make([]any, 10000)
	for i := range xs {
		xs[i] = float64(i)
	}
	return map[string]any{"xs": xs}
}

// BenchmarkCodeMap10k: a map of 10,000 items over a code body, against
// BenchmarkTransformMap10k.
func BenchmarkCodeMap10k(b *testing.B) {
	benchRun(b, `{"name":"c","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	  {"node_id":"body","kind":"tool","name":"code","input":{"code":"return {v: item * 2}"}}]}`, mapInput())
}

func BenchmarkTransformMap10k(b *testing.B) {
	benchRun(b, `{"name":"c","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	  {"node_id":"body","kind":"tool","name":"transform","input":{"expression":"{v: v}"},"input_map":{"data":"{v: item}"}}]}`, mapInput())
}

// A chain test runs a code node for real (its script cannot reach outside),
// reading the scope as a run does, while an http node still needs a mock.
func TestChainTestsRunCodeNodes(t *testing.T) {
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{Code: codePool(t)}))
	reg.SetInline(builtin.Inline...)
	reg.SetScoped(builtin.Scoped...)
	reg.SetContained(builtin.Contained...)
	c, err := chain.Decode([]byte(`{"name":"c","nodes":[
	  {"node_id":"score","kind":"tool","name":"code","input":{"code":"return {total: input.items.reduce((s, x) => s + x, 0)}"}},
	  {"node_id":"post","kind":"tool","name":"http","input":{"url":"http://127.0.0.1:1/"}}],
	 "edges":[{"source":"score","target":"post"}],
	 "tests":[
	  {"name":"sums","input":{"items":[1,2,3]},"mocks":{"post":{"status":200}},"assert":{"status":"completed","expect":[{"path":"score.output.total","equals":6}]}},
	  {"name":"unmocked http","input":{"items":[1]},"assert":{"status":"completed"}}]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chaintest.Run(context.Background(), c, chaintest.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Tests[0].Passed {
		t.Errorf("the code node's test: %+v", rep.Tests[0].Failures)
	}
	if rep.Tests[1].Passed || len(rep.Tests[1].Failures) == 0 || !strings.Contains(rep.Tests[1].Failures[0].Message, "not mocked") && rep.Tests[1].Failures[0].Kind != "unmocked" {
		t.Errorf("the unmocked http node: %+v", rep.Tests[1])
	}
}

// ownPool is a pool with its own limits, closed with the test.
func ownPool(t *testing.T, lim sandbox.Limits) *sandbox.Pool {
	p, err := sandbox.NewPool(os.Args[0], lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// A run whose map sends 150 endless loops to the sandbox does not hold up
// another run's trivial code node: it completes while the first run is
// still going.
func TestCodeRunDoesNotStarveAnotherRun(t *testing.T) {
	eng := codeEngineWith(ownPool(t, sandbox.Limits{Workers: 2, CPUSeconds: 1}))
	xs := make([]any, 150)
	for i := range xs {
		xs[i] = float64(i)
	}
	flood := decode(t, `{"name":"flood","max_concurrency":150,"nodes":[
	  {"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	  {"node_id":"body","kind":"tool","name":"code","input":{"code":"for (;;) {}"}}]}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{}, 150)
	floodDone := make(chan *engine.Result, 1)
	go func() {
		sink := engine.SinkFunc(func(e engine.Event) {
			if e.NodeID == "body" && e.Phase == engine.PhaseStart {
				started <- struct{}{}
			}
		})
		res, _ := eng.Run(ctx, enginetest.PlanOf(eng, flood), map[string]any{"xs": xs}, engine.RunOptions{Sink: sink})
		floodDone <- res
	}()
	for i := 0; i < 64; i++ { // the flood's items are in the sandbox's queue
		<-started
	}
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, decode(t, `{"name":"small","nodes":[{"node_id":"js","kind":"tool","name":"code","input":{"code":"return 42"}}]}`)), nil, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted || res.FinalOutput != 42.0 {
		t.Fatalf("the other run: %v %+v", err, res)
	}
	select {
	case r := <-floodDone:
		t.Fatalf("the other run waited for the flood to end (%s)", r.Status)
	default:
	}
	cancel()
	<-floodDone
}

// A run over its CPU budget fails its further code calls, naming the flag.
func TestCodeRunCPUBudgetFailsTheRun(t *testing.T) {
	eng := codeEngineWith(ownPool(t, sandbox.Limits{Workers: 1, CPUSeconds: 1, RunCPUSeconds: 1}))
	c := decode(t, `{"name":"c","nodes":[
	  {"node_id":"spin","kind":"tool","name":"code","input":{"code":"for (;;) {}"},"on_error":"continue"},
	  {"node_id":"after","kind":"tool","name":"code","input":{"code":"return 1"}}],
	 "edges":[{"source":"spin","target":"after"}]}`)
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusFailed || res.Error == nil || res.Error.NodeID != "after" || !strings.Contains(res.Error.Message, "--code-run-cpu-seconds") {
		t.Fatalf("%s %+v", res.Status, res.Error)
	}
	// Another run has its own budget.
	res, err = eng.Run(context.Background(), enginetest.PlanOf(eng, decode(t, `{"name":"c","nodes":[{"node_id":"js","kind":"tool","name":"code","input":{"code":"return 2"}}]}`)), nil, engine.RunOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("another run: %v %+v", err, res)
	}
}
