package engine_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
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

func mustDecode(t testing.TB, doc string) *engine.Chain {
	t.Helper()
	c, err := engine.Decode([]byte(doc), engine.Limits{})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return c
}

func run(t testing.TB, doc string, input map[string]any) (*engine.Result, []engine.Event) {
	t.Helper()
	e, sink, _ := newEngine(t)
	res, err := e.Run(context.Background(), mustDecode(t, doc), input, engine.RunOptions{})
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
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSeed000LinearChain(t *testing.T) {
	res, evs := run(t, `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"echo","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"tool","name":"echo","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`, nil)
	if res.Status != engine.StatusCompleted {
		t.Fatalf("status %s: %v", res.Status, js(res.Error))
	}
	if got := js(res.FinalOutput); got != `{"text":{"path":"/data/input.txt"}}` {
		t.Errorf("final_output = %s", got)
	}
	t.Log(phases(evs))
}
