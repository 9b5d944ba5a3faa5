package engine_test

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// A re-run records which nodes it reused and which ran again, on their
// events and results, and its state patch wins over the reused writes.
func TestRerunMarksReusedAndAppliesModifiedState(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"r","nodes":[
	 {"node_id":"a","kind":"tool","name":"count","input":{"v":1},"set_state":{"x":"output.v","y":"output.v"}},
	 {"node_id":"b","kind":"tool","name":"count","input_map":{"x":"state.x","y":"state.y"}},
	 {"node_id":"c","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusCompleted)
	before := len(h.sink.Events())
	res2, err := h.e.RerunFrom(context.Background(), res.RunID, "b", nil, engine.RunOptions{ModifiedState: map[string]any{"x": 42}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	if js(res2.FinalOutput) != `{"x":42,"y":1}` {
		t.Errorf("final = %s; want the patched x and the reused y", js(res2.FinalOutput))
	}
	reused := map[string]bool{}
	for _, ev := range h.sink.Events()[before:] {
		if ev.Phase == engine.PhaseDone {
			reused[ev.NodeID] = ev.Reused
		}
	}
	if !reused["a"] || reused["b"] || reused["c"] {
		t.Errorf("done events reused = %v; want a only", reused)
	}
	if !res2.Nodes["a"].Reused || res2.Nodes["b"].Reused {
		t.Errorf("node results: a reused %v, b reused %v", res2.Nodes["a"].Reused, res2.Nodes["b"].Reused)
	}
	log, err := h.cp.Load(context.Background(), res2.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if s := log[0].Start; s == nil || s.RerunFrom != "b" || js(s.ModifiedState) != `{"x":42}` {
		t.Errorf("start record = %s", js(log[0].Start))
	}
	if h.cnt.get("a") != 1 || h.cnt.get("b") != 2 {
		t.Errorf("counts a=%d b=%d", h.cnt.get("a"), h.cnt.get("b"))
	}
}

// A re-run that fails and is resumed keeps its state patch: the resume
// rebuilds the state from the re-run's own log.
func TestRerunStatePatchSurvivesResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"r","nodes":[
	 {"node_id":"a","kind":"tool","name":"count","input":{"v":1},"set_state":{"x":"output.v"}},
	 {"node_id":"b","kind":"tool","name":"flagfail","input_map":{"x":"state.x"}}],
	 "edges":[{"source":"a","target":"b"}]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusCompleted)
	h.flag.Store(true)
	res2, err := h.e.RerunFrom(context.Background(), res.RunID, "b", nil, engine.RunOptions{ModifiedState: map[string]any{"x": 42}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusFailed)
	h.flag.Store(false)
	res3, err := h.resume(res2.RunID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res3, chain.StatusCompleted)
	if got := js(res3.Nodes["b"].Input); got != `{"x":42}` {
		t.Errorf("b's input after the resume = %s; want the patched x", got)
	}
}
