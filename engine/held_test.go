package engine_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
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
// fired with it have finished, and says when it is dispatched.
func TestHeldDefaultRunsAfterTheFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"delay","input":{"ms":30}}`), map[string]any{"score": 2.0})
	wantStatus(t, res, chain.StatusCompleted)
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
	t.Parallel()
	h := newHarness(t)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"interrupt","config":{"prompt":"ok?"}}`), map[string]any{"score": 2.0})
	wantStatus(t, res, chain.StatusPaused)
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
	wantStatus(t, res, chain.StatusCompleted)
	wantNodes(t, res, map[string]string{"fan": "done", "def": "done"})
	evs := h.sink.Events()
	if fanDone, defStart := indexOf(evs, "fan", engine.PhaseDone), indexOf(evs, "def", engine.PhaseStart); defStart < fanDone {
		t.Fatalf("after the resume def started (event %d) before fan finished (event %d)", defStart, fanDone)
	}
}

// A fan-out target that fails stops the run before the default fires; a
// resume runs the failed target again and then the default.
func TestHeldDefaultAfterAFailedFanOut(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.flag.Store(true)
	res := h.run(heldDoc(`{"node_id":"fan","kind":"tool","name":"flagfail"}`), map[string]any{"score": 2.0})
	wantStatus(t, res, chain.StatusFailed)
	if indexOf(h.sink.Events(), "def", engine.PhaseStart) >= 0 {
		t.Fatal("def started although the fan-out failed")
	}
	h.flag.Store(false)
	res, err := h.resume(res.RunID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	wantNodes(t, res, map[string]string{"fan": "done", "def": "done"})
}

// TestHeldDefaultRandomChains runs random routing "all" graphs with guards,
// unguarded edges and defaults: every run completes, every node ends, no
// node is left "upstream stopped" (a held default never released), and each
// default that fired with others started after all of them finished.
func TestHeldDefaultRandomChains(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 2))
	held, rings := 0, 0
	defer func() {
		// the seed is fixed: these chains do hold defaults, and some holds
		// wait on each other in a ring that the run must break
		if !t.Failed() && (held == 0 || rings == 0) {
			t.Errorf("%d held defaults, %d rings: the random chains no longer exercise them", held, rings)
		}
	}()
	for k := 0; k < 300; k++ {
		c := randomChain(rng, false)
		if issues := chain.Validate(c); hasError(issues) {
			continue
		}
		h := newHarness(t)
		if k%2 == 1 { // every other chain runs its pure tools inline
			h.e.Registry().SetInline(builtin.Inline...)
		}
		res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, c), nil, engine.RunOptions{})
		if err != nil || res.Status != chain.StatusCompleted {
			t.Fatalf("chain %d: %v %s %+v", k, err, res.Status, res.Error)
		}
		evs := h.sink.Events()
		everyNodeEnded(t, c, evs)
		for id, nr := range res.Nodes {
			if nr.Reason == engine.ReasonUpstreamStopped {
				b, _ := json.Marshal(c.Edges)
				t.Fatalf("chain %d: node %s left upstream_stopped in a completed run: %v\n%s", k, id, phases(evs), b)
			}
		}
		// a default dispatched later started after every target of its source's done event
		for _, e := range evs {
			if e.Phase != engine.PhaseProgress || len(e.Edges) != 1 {
				continue
			}
			var def *chain.Edge
			for x := range c.Edges {
				if c.Edges[x].ID == e.Edges[0] {
					def = &c.Edges[x]
				}
			}
			// nodes downstream of the default's target wait for it: not part
			// of what it waits for; nor are those it was released without
			// (a ring of holds), which the event names
			below := map[string]bool{def.Target: true}
			held++
			if p, ok := e.Progress.(map[string]any); ok {
				if un, ok := p["unfinished"].([]string); ok {
					rings++
					for _, id := range un {
						below[id] = true
					}
				}
			}
			for changed := true; changed; {
				changed = false
				for _, x := range c.Edges {
					if below[x.Source] && !below[x.Target] {
						below[x.Target], changed = true, true
					}
				}
			}
			done := evs[indexOf(evs, e.NodeID, engine.PhaseDone)]
			for _, fid := range done.Edges {
				for x := range c.Edges {
					if c.Edges[x].ID == fid && !below[c.Edges[x].Target] && indexOf(evs, c.Edges[x].Target, engine.PhaseDone) > indexOf(evs, def.Target, engine.PhaseStart) {
						t.Fatalf("chain %d: default %s started before %s finished: %v", k, def.ID, c.Edges[x].Target, phases(evs))
					}
				}
			}
		}
	}
}

// randomChain is enginetest.RandomChain (shared with the cluster tests,
// which run the same graphs through worker processes).
func randomChain(rng *rand.Rand, failures bool) *chain.Chain {
	return enginetest.RandomChain(rng, failures)
}

func hasError(issues []chain.Issue) bool {
	for _, is := range issues {
		if is.Severity == chain.SeverityError {
			return true
		}
	}
	return false
}
