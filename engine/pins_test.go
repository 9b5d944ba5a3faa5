package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// pinsDoc: fetch (a counted tool) feeds shape, which reads its output;
// fetch's output is pinned.
const pinsDoc = `{"name":"pins","nodes":[
{"node_id":"fetch","kind":"tool","name":"count","input":{"real":true}},
{"node_id":"shape","kind":"tool","name":"echo","input_map":{"got":"fetch.output.score"}}],
"edges":[{"source":"fetch","target":"shape"}],
"pinned_outputs":{"fetch":{"score":7}}}`

func (h *harness) runWith(doc string, opts engine.RunOptions) *engine.Result {
	h.t.Helper()
	res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, mustDecode(h.t, doc)), nil, opts)
	if err != nil {
		h.t.Fatalf("run: %v", err)
	}
	checkSeq(h.t, h.sink.Events())
	return res
}

// runEvents are the node events of one run.
func (h *harness) runEvents(runID, nodeID string) []engine.Event {
	var out []engine.Event
	for _, e := range h.sink.Events() {
		if e.RunID == runID && e.NodeID == nodeID {
			out = append(out, e)
		}
	}
	return out
}

// TestUsePinsSkipsThePinnedNode: a run that uses the pins never executes a
// pinned node; its pin flows on as its output, its events and record say
// pinned, and its start entry says the run uses the pins.
func TestUsePinsSkipsThePinnedNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.runWith(pinsDoc, engine.RunOptions{UsePins: true})
	wantStatus(t, res, chain.StatusCompleted)
	if n := h.cnt.get("fetch"); n != 0 {
		t.Fatalf("the pinned node ran %d times", n)
	}
	if js(res.Outputs["shape"]) != `{"got":7}` {
		t.Errorf("shape = %s, want the pin's score", js(res.Outputs["shape"]))
	}
	if nr := res.Nodes["fetch"]; nr == nil || !nr.Pinned || nr.Status != engine.PhaseDone || js(nr.Output) != `{"score":7}` || nr.Attempts != 1 {
		t.Errorf("fetch = %+v", nr)
	}
	if res.Nodes["shape"].Pinned {
		t.Errorf("shape ran, yet says pinned")
	}
	evs := h.runEvents(res.RunID, "fetch")
	if len(evs) != 2 || !evs[0].Pinned || evs[0].Phase != engine.PhaseStart || !evs[1].Pinned || evs[1].Phase != engine.PhaseDone {
		t.Errorf("fetch's events = %s", js(evs))
	}
	log, err := h.cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var start *engine.StartRecord
	var rec *engine.NodeRecord
	for _, cp := range log {
		if cp.Start != nil {
			start = cp.Start
		}
		if cp.Node != nil && cp.Node.NodeID == "fetch" {
			rec = cp.Node
		}
	}
	if start == nil || !start.UsesPins || rec == nil || !rec.Pinned {
		t.Errorf("start %+v, fetch's record %+v", start, rec)
	}
}

// TestRunsWithoutPinsRunTheNode: a run that does not ask for the pins (a
// published run, a trigger's, a skill's, A2E's) runs the pinned node.
func TestRunsWithoutPinsRunTheNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.runWith(pinsDoc, engine.RunOptions{})
	wantStatus(t, res, chain.StatusCompleted)
	if n := h.cnt.get("fetch"); n != 1 {
		t.Fatalf("fetch ran %d times, want 1", n)
	}
	if nr := res.Nodes["fetch"]; nr.Pinned || js(res.Outputs["shape"]) != `{"got":null}` {
		t.Errorf("fetch = %+v, shape = %s", nr, js(res.Outputs["shape"]))
	}
	for _, e := range h.runEvents(res.RunID, "fetch") {
		if e.Pinned {
			t.Errorf("event %s says pinned", js(e))
		}
	}
	log, _ := h.cp.Load(context.Background(), res.RunID)
	if log[0].Start == nil || log[0].Start.UsesPins {
		t.Errorf("start entry = %+v", log[0].Start)
	}
}

// TestPinsInSubChainsAreNotUsed: a designer run's skill node runs its
// sub-chain as published runs do, its pins unused.
func TestPinsInSubChainsAreNotUsed(t *testing.T) {
	t.Parallel()
	sub := `{"name":"sub","nodes":[{"node_id":"inner","kind":"tool","name":"count"}],"pinned_outputs":{"inner":"pinned inner"}}`
	h := newHarness(t, func(o *engine.Options) {
		o.Chains = func(ctx context.Context, name string) (*chain.Chain, error) {
			if name != "sub" {
				return nil, fmt.Errorf("no chain %q", name)
			}
			return mustDecode(t, sub), nil
		}
	})
	res := h.runWith(`{"name":"top","nodes":[{"node_id":"sk","kind":"skill","name":"sub"}],"pinned_outputs":{}}`, engine.RunOptions{UsePins: true})
	wantStatus(t, res, chain.StatusCompleted)
	if n := h.cnt.get("inner"); n != 1 || js(res.Outputs["sk"]) == `"pinned inner"` {
		t.Errorf("inner ran %d times; sk = %s", n, js(res.Outputs["sk"]))
	}
}

// TestPinsOfAttachedNodesAndMocks: a pinned map body answers every item
// with its pin; a pinned router is never pinned (validation refuses it); a
// mock of a node wins over its pin.
func TestPinsOfAttachedNodesAndMocks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"m","nodes":[
{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
{"node_id":"body","kind":"tool","name":"count"},
{"node_id":"after","kind":"tool","name":"count"}],
"edges":[{"source":"m","target":"after"}],
"pinned_outputs":{"body":"pinned","after":"pinned after"}}`
	res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, doc)), map[string]any{"items": []any{1, 2}},
		engine.RunOptions{UsePins: true, Mocks: map[string]any{"after": "mocked"}})
	if err != nil {
		t.Fatal(err)
	}
	if h.cnt.get("body") != 0 || h.cnt.get("after") != 0 {
		t.Fatalf("body ran %d times, after %d", h.cnt.get("body"), h.cnt.get("after"))
	}
	if js(res.Outputs["m"]) != `["pinned","pinned"]` || res.Outputs["after"] != "mocked" || res.Nodes["after"].Pinned {
		t.Errorf("m = %s, after = %+v", js(res.Outputs["m"]), res.Nodes["after"])
	}
	done := 0
	for _, e := range h.runEvents(res.RunID, "body") {
		if e.Phase == engine.PhaseDone && e.Pinned {
			done++
		}
	}
	if done != 2 {
		t.Errorf("body's pinned done events = %d, want one per item", done)
	}
	if evs := h.runEvents(res.RunID, "after"); evs[0].Pinned {
		t.Errorf("a mocked node's start says pinned")
	}
}

// TestResumeKeepsPins: a designer run that pauses goes on with its pins
// after the answer (the start entry says so); a re-run of it too.
func TestResumeKeepsPins(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"r","nodes":[
{"node_id":"ask","kind":"interrupt","config":{"prompt":"go?"}},
{"node_id":"fetch","kind":"tool","name":"count"},
{"node_id":"out","kind":"tool","name":"echo","input_map":{"v":"fetch.output"}}],
"edges":[{"source":"ask","target":"fetch"},{"source":"fetch","target":"out"}],
"pinned_outputs":{"fetch":"from the pin"}}`
	res := h.runWith(doc, engine.RunOptions{UsePins: true})
	wantStatus(t, res, chain.StatusPaused)
	r2, err := h.resume(res.RunID, val("yes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r2, chain.StatusCompleted)
	if h.cnt.get("fetch") != 0 || js(r2.Outputs["out"]) != `{"v":"from the pin"}` || !r2.Nodes["fetch"].Pinned {
		t.Fatalf("after the resume: fetch ran %d times, out = %s", h.cnt.get("fetch"), js(r2.Outputs["out"]))
	}
	r3, err := h.e.RerunFrom(context.Background(), res.RunID, "fetch", nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.cnt.get("fetch") != 0 || !r3.Nodes["fetch"].Pinned {
		t.Errorf("re-run from fetch: it ran %d times; %+v", h.cnt.get("fetch"), r3.Nodes["fetch"])
	}
}
