package engine_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/examples"
)

// foldView is what a reader of the log shows of a node: everything but the
// times (an unfinished node's end time is its run's end entry's).
type foldView struct {
	Status    engine.Phase
	Input     any
	Output    any
	Error     string
	Reason    string
	Matched   string
	Attempts  int
	Iteration int
	Prompt    any
	Reused    bool
}

// wantFoldEqualsResult: folding the run's checkpoint log gives the node
// results the engine itself reported, node for node.
func wantFoldEqualsResult(t *testing.T, cp *engine.MemoryCheckpointer, res *engine.Result) {
	t.Helper()
	log, err := cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	folded, err := engine.FoldNodeResults(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(folded) != len(res.Nodes) {
		t.Fatalf("%d folded nodes, the engine reports %d", len(folded), len(res.Nodes))
	}
	for _, got := range folded {
		want := res.Nodes[got.NodeID]
		if want == nil {
			t.Fatalf("folded node %s the engine does not report", got.NodeID)
		}
		g, _ := json.Marshal(foldView{got.Status, got.Input, got.Output, got.Error, got.Reason, got.Matched, got.Attempts, got.Iteration, got.Prompt, got.Reused})
		w, _ := json.Marshal(foldView{want.Status, want.Input, want.Output, want.Error, want.Reason, want.Matched, want.Attempts, want.Iteration, want.Prompt, want.Reused})
		if string(g) != string(w) {
			t.Fatalf("node %s:\nfolded %s\nengine %s", got.NodeID, g, w)
		}
	}
}

// TestFoldEqualsEngineOnExamples runs every example chain (loops, maps,
// branches, parallel groups, an approval) and checks fold(log) against the
// engine's own node results.
func TestFoldEqualsEngineOnExamples(t *testing.T) {
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		t.Run(ex.File, func(t *testing.T) {
			h := newHarness(t)
			doc, err := engine.Decode(ex.Data, engine.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.e.Run(context.Background(), doc, map[string]any{"items": []any{1.0, 2.0, 3.0}, "n": 3.0, "text": "hi"}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantFoldEqualsResult(t, h.cp, res)
			if res.Status == engine.StatusPaused { // and again once the approval is given
				res, err = h.resume(res.RunID, val(map[string]any{"approved": true}), nil)
				if err != nil {
					t.Fatal(err)
				}
				wantFoldEqualsResult(t, h.cp, res)
			}
		})
	}
}

// TestFoldEqualsEngineOnRandomChains: the same property over random routing
// "all" graphs with guards, defaults (held ones included) and failing nodes
// under every on_error policy but a handler, inline and on goroutines, and
// over the resume of those that failed.
func TestFoldEqualsEngineOnRandomChains(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 7))
	failed := 0
	for k := 0; k < 300; k++ {
		c := randomChain(rng, true)
		if issues := engine.Validate(c); hasError(issues) {
			continue
		}
		h := newHarness(t)
		if k%2 == 1 {
			h.e.Registry().SetInline(builtin.Inline...)
		}
		res, err := h.e.Run(context.Background(), c, nil, engine.RunOptions{})
		if err != nil {
			t.Fatalf("chain %d: %v", k, err)
		}
		wantFoldEqualsResult(t, h.cp, res)
		if res.Status == engine.StatusFailed {
			failed++
			res, err = h.resume(res.RunID, nil, nil)
			if err != nil {
				t.Fatalf("chain %d: resume: %v", k, err)
			}
			wantFoldEqualsResult(t, h.cp, res)
		}
	}
	if failed == 0 {
		t.Fatal("no random chain failed: the generator no longer exercises aborts")
	}
}
