package inspect_test

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// newEngine is an engine with the built-in tools, recording events and
// checkpoints in memory.
func newEngine(t testing.TB) (*engine.Engine, *engine.MemorySink, *engine.MemoryCheckpointer) {
	t.Helper()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	sink := &engine.MemorySink{}
	cp := engine.NewMemoryCheckpointer()
	return engine.New(engine.Options{Registry: reg, Sink: sink, Checkpointer: cp}), sink, cp
}

// harness runs and resumes documents on one engine.
type harness struct {
	t    testing.TB
	e    *engine.Engine
	sink *engine.MemorySink
	cp   *engine.MemoryCheckpointer
}

func newHarness(t testing.TB) *harness {
	e, sink, cp := newEngine(t)
	return &harness{t: t, e: e, sink: sink, cp: cp}
}

func (h *harness) run(doc string, input map[string]any) *engine.Result {
	h.t.Helper()
	res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, enginetest.MustDecode(h.t, doc)), input, engine.RunOptions{})
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	return res
}

// start runs a document that pauses.
func (h *harness) start(doc string, input map[string]any) *engine.Result {
	h.t.Helper()
	return h.run(doc, input)
}

func (h *harness) resume(id string, v *engine.ResumeValue, state map[string]any) (*engine.Result, error) {
	h.t.Helper()
	return h.e.Resume(context.Background(), id, v, state, engine.ResumeOptions{})
}

func val(v any) *engine.ResumeValue { return &engine.ResumeValue{Value: v} }

func wantStatus(t testing.TB, res *engine.Result, want chain.RunStatus) {
	t.Helper()
	if res.Status != want {
		t.Fatalf("status = %s, want %s (error %s)", res.Status, want, enginetest.JSON(res.Error))
	}
}
