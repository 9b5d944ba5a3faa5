package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// newEngine returns an engine with the built-in tools and an in-memory
// checkpointer and event sink.
func newEngine(t testing.TB) (*engine.Engine, *engine.MemorySink, *engine.MemoryCheckpointer) {
	t.Helper()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	sink := &engine.MemorySink{}
	cp := engine.NewMemoryCheckpointer()
	return engine.New(engine.Options{Registry: reg, Sink: sink, Checkpointer: cp}), sink, cp
}

func mustDecode(t testing.TB, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}

func run(t testing.TB, doc string, input map[string]any) (*engine.Result, []engine.Event) {
	t.Helper()
	e, sink, _ := newEngine(t)
	res, err := e.Run(context.Background(), enginetest.PlanOf(e, mustDecode(t, doc)), input, engine.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, sink.Events()
}

func phases(evs []engine.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Phase == engine.PhaseProgress {
			continue
		}
		out = append(out, e.NodeID+":"+string(e.Phase))
	}
	return out
}

func js(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func TestA2ELinearChainRuns(t *testing.T) {
	t.Parallel()
	res, evs := run(t, `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"echo","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"tool","name":"echo","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`, nil)
	if res.Status != chain.StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, js(res.Error))
	}
	if got := js(res.FinalOutput); got != `{"text":{"path":"/data/input.txt"}}` {
		t.Errorf("final_output = %s", got)
	}
	t.Log(phases(evs))
}

// ---- shared helpers for the runtime tests ----

// counter counts tool calls by node id.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// testTools are tools registered by every engine the runtime tests build.
//
//	count   returns its input, counting calls per node id
//	inc     returns {"n": input.n + 1} (null counts as 0)
//	ints    returns Go ints: {"n": 2, "list": []int{1, 2}}
//	block   blocks until the test ends, ignoring cancellation
//	flagfail fails while the flag is set
func testTools(t testing.TB, cnt *counter, flag *atomic.Bool) map[string]tool.Func {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	return map[string]tool.Func{
		"count": func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
			cnt.mu.Lock()
			cnt.n[tool.Node(ctx)]++
			cnt.mu.Unlock()
			return in, nil
		},
		"inc": func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
			n, _ := in["n"].(float64)
			return map[string]any{"n": n + 1}, nil
		},
		"ints": func(context.Context, map[string]any, tool.Emitter) (any, error) {
			return map[string]any{"n": 2, "list": []int{1, 2}, "u": uint8(7)}, nil
		},
		"block": func(context.Context, map[string]any, tool.Emitter) (any, error) {
			<-stop
			return nil, errors.New("released")
		},
		"flagfail": func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
			if flag.Load() {
				return nil, errors.New("flag is set")
			}
			return map[string]any{"ok": true, "in": in}, nil
		},
	}
}

// harness is an engine with the built-in and test tools.
type harness struct {
	t    testing.TB
	e    *engine.Engine
	sink *engine.MemorySink
	cp   *engine.MemoryCheckpointer
	cnt  *counter
	flag *atomic.Bool
}

func newHarness(t testing.TB, opts ...func(*engine.Options)) *harness {
	t.Helper()
	h := &harness{t: t, sink: &engine.MemorySink{}, cp: engine.NewMemoryCheckpointer(), cnt: &counter{n: map[string]int{}}, flag: &atomic.Bool{}}
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	reg.RegisterAll(testTools(t, h.cnt, h.flag))
	o := engine.Options{Registry: reg, Sink: h.sink, Checkpointer: h.cp}
	for _, f := range opts {
		f(&o)
	}
	h.e = engine.New(o)
	return h
}

func (h *harness) run(doc string, input map[string]any) *engine.Result {
	h.t.Helper()
	return h.runCtx(context.Background(), doc, input)
}

func (h *harness) runCtx(ctx context.Context, doc string, input map[string]any) *engine.Result {
	h.t.Helper()
	res, err := h.e.Run(ctx, enginetest.PlanOf(h.e, mustDecode(h.t, doc)), input, engine.RunOptions{})
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	checkSeq(h.t, h.sink.Events())
	return res
}

// checkSeq: per-run seq starts at 1 and has no gaps or duplicates.
func checkSeq(t testing.TB, evs []engine.Event) {
	t.Helper()
	next := map[string]int64{}
	for _, e := range evs {
		if next[e.RunID] == 0 {
			next[e.RunID] = 1
		}
		if e.Seq != next[e.RunID] {
			t.Fatalf("run %s: event seq %d, want %d (%s:%s)", e.RunID, e.Seq, next[e.RunID], e.NodeID, e.Phase)
		}
		next[e.RunID]++
	}
}

// lastPhase returns each node's last non-progress phase.
func lastPhase(evs []engine.Event) map[string]engine.Phase {
	m := map[string]engine.Phase{}
	for _, e := range evs {
		if e.Phase != engine.PhaseProgress {
			m[e.NodeID] = e.Phase
		}
	}
	return m
}

// nodeStatus returns "phase" or "phase/reason" of a node result.
func nodeStatus(res *engine.Result, id string) string {
	nr := res.Nodes[id]
	if nr == nil {
		return "-"
	}
	if nr.Reason != "" {
		return string(nr.Status) + "/" + nr.Reason
	}
	return string(nr.Status)
}

func wantStatus(t testing.TB, res *engine.Result, want chain.RunStatus) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status = %s, want %s (error %s)", res.Status, want, js(res.Error))
	}
}

// wantNodes checks node statuses: id → "done", "skip/condition_false", …
func wantNodes(t testing.TB, res *engine.Result, want map[string]string) {
	t.Helper()
	for id, w := range want {
		if got := nodeStatus(res, id); got != w {
			t.Errorf("node %s = %s, want %s", id, got, w)
		}
	}
}

// everyNodeEnded: each node's last event is done, error or skip.
func everyNodeEnded(t testing.TB, c *chain.Chain, evs []engine.Event) {
	t.Helper()
	lp := lastPhase(evs)
	for _, n := range c.Nodes {
		switch lp[n.ID] {
		case engine.PhaseDone, engine.PhaseError, engine.PhaseSkip:
		default:
			t.Errorf("node %s ended with phase %q, want done, error or skip", n.ID, lp[n.ID])
		}
	}
}

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

func itoa(n int) string { return strconv.Itoa(n) }
