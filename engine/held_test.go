package engine_test

import (
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
)

// heldDoc: a routing "all" source with a guarded edge, an unguarded edge to
// target `fan`, and a default edge to `def`.
func heldDoc(fan string) string {
	return `{"name":"held","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"},
	{"node_id":"guarded","kind":"tool","name":"echo"},` + fan + `,{"node_id":"def","kind":"tool","name":"echo"}],
	"edges":[{"id":"g","source":"a","target":"guarded","condition":"{{ output.score > 7 }}"},{"id":"f","source":"a","target":"fan"},{"id":"d","source":"a","target":"def","default":true}]}`
}

func indexOf(evs []engine.Event, node string, ph engine.Phase) int {
	for k, e := range evs {
		if e.NodeID == node && e.Phase == ph {
			return k
		}
	}
	return -1
}

// The default of a parallel routing "all" node runs after the links that
// fired with it have finished (seed 004), and says when it is dispatched.
func TestHeldDefaultRunsAfterTheFanOut(t *testing.T) {
	h := newHarness(t)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"delay","input":{"ms":30}}`), map[string]any{"score": 2.0})
	wantStatus(t, res, engine.StatusCompleted)
	wantNodes(t, res, map[string]string{"guarded": "skip/condition_false", "fan": "done", "def": "done"})
	evs := h.sink.Events()
	fanDone, defStart := indexOf(evs, "fan", engine.PhaseDone), indexOf(evs, "def", engine.PhaseStart)
	if fanDone < 0 || defStart < fanDone {
		t.Fatalf("def started (event %d) before fan finished (event %d): %v", defStart, fanDone, phases(evs))
	}
	aDone := evs[indexOf(evs, "a", engine.PhaseDone)]
	if strings.Join(aDone.Edges, ",") != "f" {
		t.Fatalf("a's done event names edges %v, want only f", aDone.Edges)
	}
	dispatched := false
	for _, e := range evs {
		if e.NodeID == "a" && e.Phase == engine.PhaseProgress && strings.Join(e.Edges, ",") == "d" {
			dispatched = true
		}
	}
	if !dispatched {
		t.Fatal("no progress event fired edge d")
	}
	// The same with the fan-out run inline on the coordinator (pure tools).
	hi := newHarness(t)
	hi.e.Registry().SetInline(builtin.Inline...)
	res = hi.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"echo"}`), map[string]any{"score": 2.0})
	wantNodes(t, res, map[string]string{"fan": "done", "def": "done"})
	if evs := hi.sink.Events(); indexOf(evs, "def", engine.PhaseStart) < indexOf(evs, "fan", engine.PhaseDone) {
		t.Fatalf("inline: def started before fan finished: %v", phases(evs))
	}
	// A guard that matched: the default is pruned at once, as before.
	h2 := newHarness(t)
	res = h2.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"echo"}`), map[string]any{"score": 9.0})
	wantNodes(t, res, map[string]string{"guarded": "done", "fan": "done", "def": "skip/condition_false"})
}

// A fan-out target that pauses holds the default until it is resumed and
// finishes; the held edge survives the checkpoint log.
func TestHeldDefaultAcrossAPause(t *testing.T) {
	h := newHarness(t)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"interrupt","config":{"prompt":"ok?"}}`), map[string]any{"score": 2.0})
	wantStatus(t, res, engine.StatusPaused)
	if st := nodeStatus(res, "def"); st != "-" {
		t.Fatalf("def is %q while fan is paused", st)
	}
	if indexOf(h.sink.Events(), "def", engine.PhaseStart) >= 0 {
		t.Fatal("def started while the fan-out was paused")
	}
	res, err := h.resume(res.RunID, val("yes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, engine.StatusCompleted)
	wantNodes(t, res, map[string]string{"fan": "done", "def": "done"})
	evs := h.sink.Events()
	if fanDone, defStart := indexOf(evs, "fan", engine.PhaseDone), indexOf(evs, "def", engine.PhaseStart); defStart < fanDone {
		t.Fatalf("after the resume def started (event %d) before fan finished (event %d)", defStart, fanDone)
	}
}

// A fan-out target that fails stops the run before the default fires; a
// resume runs the failed target again and then the default.
func TestHeldDefaultAfterAFailedFanOut(t *testing.T) {
	h := newHarness(t)
	h.flag.Store(true)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"flagfail"}`), map[string]any{"score": 2.0})
	wantStatus(t, res, engine.StatusFailed)
	if indexOf(h.sink.Events(), "def", engine.PhaseStart) >= 0 {
		t.Fatal("def started although the fan-out failed")
	}
	h.flag.Store(false)
	res, err := h.resume(res.RunID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, engine.StatusCompleted)
	wantNodes(t, res, map[string]string{"fan": "done", "def": "done"})
}
