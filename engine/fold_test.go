package engine_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
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
	t.Parallel()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		t.Run(ex.File, func(t *testing.T) {
			h := newHarness(t)
			doc, err := chain.Decode(ex.Data, chain.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, doc), map[string]any{"items": []any{1.0, 2.0, 3.0}, "n": 3.0, "text": "hi"}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantFoldEqualsResult(t, h.cp, res)
			if res.Status == chain.StatusPaused { // and again once the approval is given
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
	t.Parallel()
	rng := rand.New(rand.NewPCG(12, 7))
	failed := 0
	for k := 0; k < 300; k++ {
		c := randomChain(rng, true)
		if issues := chain.Validate(c); hasError(issues) {
			continue
		}
		h := newHarness(t)
		if k%2 == 1 {
			h.e.Registry().SetInline(builtin.Inline...)
		}
		res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, c), nil, engine.RunOptions{})
		if err != nil {
			t.Fatalf("chain %d: %v", k, err)
		}
		wantFoldEqualsResult(t, h.cp, res)
		if res.Status == chain.StatusFailed {
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

// TestReplayOfAnyPrefixFinishesLikeTheRun: a run that crashed after any
// entry of its log resumes (replaying that prefix through apply) to the same
// node results as the run that never stopped: every example that completes,
// and random routing "all" graphs with held defaults, guards and handled
// failures. The tools are deterministic.
func TestReplayOfAnyPrefixFinishesLikeTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	var chains []*chain.Chain
	for _, ex := range all {
		doc, err := chain.Decode(ex.Data, chain.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		chains = append(chains, doc)
	}
	rng := rand.New(rand.NewPCG(12, 8))
	for k := 0; k < 60; k++ {
		if c := randomChain(rng, true); !hasError(chain.Validate(c)) {
			chains = append(chains, c)
		}
	}
	prefixes := 0
	input := map[string]any{"items": []any{1.0, 2.0, 3.0}, "n": 3.0, "text": "hi"}
	for k, c := range chains {
		h := newHarness(t)
		want, err := h.e.Run(ctx, enginetest.PlanOf(h.e, c), input, engine.RunOptions{RunID: "whole"})
		if err != nil {
			t.Fatalf("chain %d: %v", k, err)
		}
		if want.Status != chain.StatusCompleted && want.Status != chain.StatusPartial {
			continue // paused or failed: resuming it is not the same run
		}
		log, err := h.cp.Load(ctx, "whole")
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n < len(log)-1; n++ { // every prefix with the start entry and without the end
			cp := engine.NewMemoryCheckpointer()
			if err := cp.Append(ctx, "crashed", log[:n]); err != nil {
				t.Fatal(err)
			}
			hr := newHarness(t, func(o *engine.Options) { o.Checkpointer = cp })
			got, err := hr.e.Resume(ctx, "crashed", nil, nil, engine.ResumeOptions{})
			if err != nil {
				t.Fatalf("chain %s, prefix %d: resume: %v", c.Name, n, err)
			}
			if got.Status != want.Status {
				t.Fatalf("chain %s, prefix %d: resumed run %s, the whole run %s", c.Name, n, got.Status, want.Status)
			}
			for id, w := range want.Nodes {
				g := got.Nodes[id]
				if g == nil || g.Status != w.Status || g.Reason != w.Reason || g.Error != w.Error || js(g.Output) != js(w.Output) {
					b, _ := json.Marshal(c)
					t.Fatalf("chain %s #%d, prefix %d: node %s = %+v, the whole run had %+v\n%s", c.Name, k, n, id, g, w, b)
				}
			}
			prefixes++
		}
	}
	if prefixes < 100 {
		t.Fatalf("only %d prefixes replayed", prefixes)
	}
}

type codedErr struct{}

func (codedErr) Error() string { return "quota exceeded" }
func (codedErr) Code() string  { return "E_QUOTA" }

// resumeAfter resumes a copy of run id's log cut after the entry of node
// (a crash right after it), on a fresh engine with the same tools.
func resumeAfter(t *testing.T, h *harness, id, node string, tools map[string]tool.Func) *engine.Result {
	t.Helper()
	ctx := context.Background()
	log, err := h.cp.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	cut := -1
	for k, e := range log {
		if e.Kind == engine.CheckpointNode && e.Node.NodeID == node {
			cut = k + 1
		}
	}
	if cut < 0 {
		t.Fatalf("no entry of node %s", node)
	}
	cp := engine.NewMemoryCheckpointer()
	if err := cp.Append(ctx, id, log[:cut]); err != nil {
		t.Fatal(err)
	}
	hr := newHarness(t, func(o *engine.Options) { o.Checkpointer = cp })
	for name, fn := range tools {
		hr.e.Registry().Register(name, fn)
	}
	res, err := hr.e.Resume(ctx, id, nil, nil, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Replay applies a record as the live run did: a skipped node passes its
// own reason down a pruned branch, and a handler started from a replayed
// failure reads the failure's own error code.
func TestReplayAppliesRecordsAsTheRunDid(t *testing.T) {
	t.Parallel()
	t.Run("skip_reason_cascades", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"s","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b","condition":"{{ output.go == true }}"},{"source":"b","target":"c"}]}`
		res := h.run(doc, map[string]any{"go": false})
		wantNodes(t, res, map[string]string{"a": "done", "b": "skip/condition_false", "c": "skip/condition_false"})
		res = resumeAfter(t, h, res.RunID, "b", nil)
		wantNodes(t, res, map[string]string{"a": "done", "b": "skip/condition_false", "c": "skip/condition_false"})
	})
	t.Run("handler_reads_the_failure_code", func(t *testing.T) {
		coded := map[string]tool.Func{"coded": func(context.Context, map[string]any, tool.Emitter) (any, error) { return nil, codedErr{} }}
		h := newHarness(t)
		for name, fn := range coded {
			h.e.Registry().Register(name, fn)
		}
		doc := `{"name":"h","nodes":[{"node_id":"x","kind":"tool","name":"coded","on_error":"h"},
		{"node_id":"h","kind":"tool","name":"echo","input_map":{"code":"error.code","msg":"error.message"}}]}`
		res := h.run(doc, nil)
		want := `{"code":"E_QUOTA","msg":"quota exceeded"}`
		if got := js(res.Outputs["h"]); got != want {
			t.Fatalf("live handler output %s, want %s", got, want)
		}
		res = resumeAfter(t, h, res.RunID, "x", coded)
		if got := js(res.Outputs["h"]); got != want {
			t.Fatalf("after a crash and resume the handler output %s, want %s", got, want)
		}
	})
}
