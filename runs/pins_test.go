package runs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// pinnedGateDoc pins the gate node, which waits until the test opens it.
const pinnedGateDoc = `{"name":"gated","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"wait","kind":"tool","name":"gate"},
	{"node_id":"b","kind":"tool","name":"echo","input_map":{"got":"wait.output"}}],
	"edges":[{"source":"a","target":"wait"},{"source":"wait","target":"b"}],
	"pinned_outputs":{"wait":"pinned"}}`

// StartWithPins runs the version with its pins (kind pinned, the gate never
// reached); Start, which every published run, trigger and run by name uses,
// runs the pinned node.
func TestStartWithPinsAndWithout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ch := &store.Chain{ID: "c1", Version: 2, Name: "gated", Doc: chainOf(t, pinnedGateDoc)}
	ctx := context.Background()
	id, err := f.svc.StartWithPins(ctx, ch, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	res := f.end(t)
	if res.Status != chain.StatusCompleted || res.Outputs["b"].(map[string]any)["got"] != "pinned" {
		t.Fatalf("pinned run: %s, b = %v", res.Status, res.Outputs["b"])
	}
	if len(f.inGate) != 0 {
		t.Fatal("the pinned gate was called")
	}
	if r, _ := f.store.GetRunInfo(ctx, id); r.Kind != store.KindPinned {
		t.Errorf("kind = %q, want %q", r.Kind, store.KindPinned)
	}
	var pinned bool
	for _, ev := range f.events.all(id) {
		pinned = pinned || (ev.NodeID == "wait" && ev.Phase == engine.PhaseDone && ev.Pinned)
	}
	if !pinned {
		t.Error("no pinned done event for wait")
	}

	close(f.gate)
	id2, err := f.svc.Start(ctx, ch, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	res = f.end(t)
	if res.Status != chain.StatusCompleted || res.Outputs["b"].(map[string]any)["got"] != "open" || len(f.inGate) != 1 {
		t.Fatalf("published run: %s, b = %v, gate calls %d", res.Status, res.Outputs["b"], len(f.inGate))
	}
	if r, _ := f.store.GetRunInfo(ctx, id2); r.Kind != store.KindRun {
		t.Errorf("kind = %q, want %q", r.Kind, store.KindRun)
	}
}

// A version without pins runs as any run; pins with problems refuse the
// run, naming the pin, before anything is recorded.
func TestStartWithPinsKindsAndRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	close(f.gate)
	ctx := context.Background()
	plain := &store.Chain{ID: "c1", Version: 1, Name: "gated", Doc: chainOf(t, gatedDoc)}
	id, err := f.svc.StartWithPins(ctx, plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.end(t)
	if r, _ := f.store.GetRunInfo(ctx, id); r.Kind != store.KindRun {
		t.Errorf("a version without pins: kind %q", r.Kind)
	}
	stale := &store.Chain{ID: "c1", Version: 3, Name: "gated", Doc: chainOf(t, strings.Replace(pinnedGateDoc, `{"wait":"pinned"}`, `{"gone":"pinned"}`, 1))}
	_, err = f.svc.StartWithPins(ctx, stale, nil)
	var inv *InvalidChainError
	if !errors.As(err, &inv) || len(inv.Issues) != 1 || inv.Issues[0].Rule != chain.RulePinUnknownNode || inv.Issues[0].Field != "pinned_outputs.gone" {
		t.Fatalf("a stale pin: %v", err)
	}
	if len(f.store.runs) != 1 {
		t.Errorf("a refused run was recorded: %d runs", len(f.store.runs))
	}
	// the same version runs when it is not the designer's run
	if _, err := f.svc.Start(ctx, stale, nil); err != nil {
		t.Fatalf("Start refused a version whose only problem is a pin: %v", err)
	}
	f.end(t)
}

// An ad-hoc run (A2E, an agent's chain) of a document with pins runs the
// pinned node: nothing but StartWithPins uses pins.
func TestAdHocRunsIgnorePins(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	close(f.gate)
	res, err := f.svc.RunAdHoc(context.Background(), chainOf(t, pinnedGateDoc), map[string]any{"x": 1}, store.KindA2E, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCompleted || res.Outputs["wait"] != "open" || len(f.inGate) != 1 {
		t.Fatalf("ad-hoc run: %s, wait = %v, gate calls %d", res.Status, res.Outputs["wait"], len(f.inGate))
	}
}
