package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/examples"
	"github.com/chainstudio/studio/store"
)

func testEngineRunPersisted(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	w := db.NewEventWriter(store.EventWriterOptions{})
	defer w.Close()
	mem := &engine.MemorySink{}
	eng := newPersistentEngine(db, w, mem)

	doc := LinearChain("echo5", "echo", 5, func(i int) map[string]any { return map[string]any{"i": float64(i)} })
	ch, err := db.CreateChain(ctx, doc, "", true)
	if err != nil {
		t.Fatal(err)
	}
	const id = "run-echo5"
	if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, Input: map[string]any{"x": "y"}}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, ch.Doc), map[string]any{"x": "y"}, engine.RunOptions{RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != chain.StatusCompleted {
		t.Fatalf("status %s %+v", res.Status, res.Error)
	}
	// Run returned: the engine flushed the writer, so every event is stored.
	stored, err := db.EventsAfter(ctx, id, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, stored, mem.Events())
	r, err := db.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != chain.StatusCompleted || r.ChainID != ch.ID || r.NodesRun != res.NodesRun || len(r.Nodes) != 5 || r.Ended.IsZero() {
		t.Fatalf("stored run %+v", r)
	}
	JSONEqual(t, r.FinalOutput, res.FinalOutput)
	JSONEqual(t, r.Outputs, res.Outputs)
	for i, n := range r.Nodes {
		if n.NodeID != fmt.Sprintf("n%d", i) || n.Status != engine.PhaseDone {
			t.Fatalf("node %d: %+v", i, n)
		}
	}
	if sums, _, _ := db.ListChains(ctx, store.ChainFilter{}); sums[0].LastRunStatus != chain.StatusCompleted {
		t.Fatalf("last run status %q", sums[0].LastRunStatus)
	}
}

// testFoldedNodesMatchTheEngine runs every example chain persisted (loops,
// maps, branches, parallel groups, an approval) and checks that the node
// results folded from the stored log are what the engine itself reports:
// same nodes, phases, outputs, errors, reasons, attempts and iterations.
func testFoldedNodesMatchTheEngine(t *testing.T, open Opener) {
	ctx := context.Background()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	db := open(t)
	w := db.NewEventWriter(store.EventWriterOptions{})
	defer w.Close()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: db, Sink: w, Chains: db.ResolveChain})
	for _, ex := range all {
		t.Run(ex.File, func(t *testing.T) {
			doc, err := chain.Decode(ex.Data, chain.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			id := "fold-" + ex.File
			res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), map[string]any{"items": []any{1.0, 2.0, 3.0}, "n": 3.0, "text": "hi"}, engine.RunOptions{RunID: id})
			if err != nil {
				t.Fatal(err)
			}
			r, err := db.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Nodes) != len(res.Nodes) {
				t.Fatalf("%d folded nodes, the engine reports %d", len(r.Nodes), len(res.Nodes))
			}
			for _, got := range r.Nodes {
				want := res.Nodes[got.NodeID]
				if want == nil {
					t.Fatalf("folded node %s the engine does not report", got.NodeID)
				}
				type view struct {
					Status    engine.Phase
					Output    any
					Error     string
					Reason    string
					Matched   string
					Attempts  int
					Iteration int
					Prompt    any
				}
				JSONEqual(t, view{got.Status, got.Output, got.Error, got.Reason, got.Matched, got.Attempts, got.Iteration, got.Prompt},
					view{want.Status, want.Output, want.Error, want.Reason, want.Matched, want.Attempts, want.Iteration, want.Prompt})
			}
			if res.Status != chain.StatusPaused {
				JSONEqual(t, r.Outputs, res.Outputs)
			}
		})
	}
}

// testFoldAcrossResume: a failed run's never-reached nodes read as skipped
// (upstream stopped); once a resume runs them they read as done, once each.
func testFoldAcrossResume(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	reg := Tools()
	calls := 0
	reg.Register("flaky", func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
		calls++
		if calls == 1 {
			return nil, fmt.Errorf("first call fails")
		}
		return map[string]any{"ok": true}, nil
	})
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: db})
	doc := &chain.Chain{Name: "flaky", EntryNode: "a", Nodes: []chain.Node{
		{ID: "a", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 1.0}},
		{ID: "b", Kind: chain.KindTool, Name: "flaky"},
		{ID: "c", Kind: chain.KindTool, Name: "echo", Input: map[string]any{"v": 3.0}},
	}, Edges: []chain.Edge{{ID: "e1", Source: "a", Target: "b"}, {ID: "e2", Source: "b", Target: "c"}}}
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: "flaky"})
	if err != nil || res.Status != chain.StatusFailed {
		t.Fatalf("first leg: %v %v", err, res.Status)
	}
	phases := func() string {
		r, err := db.GetRun(ctx, "flaky")
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, n := range r.Nodes {
			parts = append(parts, n.NodeID+":"+string(n.Status)+":"+n.Reason)
		}
		return strings.Join(parts, " ")
	}
	if got := phases(); got != "a:done: b:error: c:skip:upstream_stopped" {
		t.Fatalf("after the failure: %s", got)
	}
	if one, err := db.GetRunNode(ctx, "flaky", "c"); err != nil || one == nil || one.Status != engine.PhaseSkip {
		t.Fatalf("node c alone: %v %+v", err, one)
	}
	res, err = eng.Resume(ctx, "flaky", nil, nil, engine.ResumeOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("resume: %v %+v", err, res)
	}
	if got := phases(); got != "a:done: b:done: c:done:" {
		t.Fatalf("after the resume: %s", got)
	}
}

// tee sends events to the writer and then to another sink, and flushes the
// writer (the engine only finds a Flusher at the top of its sink).
type tee struct {
	w     store.EventWriter
	extra engine.EventSink
}

func (t tee) Emit(e engine.Event) {
	t.w.Emit(e)
	t.extra.Emit(e)
}

func (t tee) Flush(ctx context.Context) error { return t.w.Flush(ctx) }

// newPersistentEngine is an engine that keeps its checkpoints in db and its
// events through w (and, when extra is not nil, sends them there too).
func newPersistentEngine(db store.Backend, w store.EventWriter, extra engine.EventSink) *engine.Engine {
	var sink engine.EventSink = w
	if extra != nil {
		sink = tee{w, extra}
	}
	return engine.New(engine.Options{Registry: Tools(), Checkpointer: db, Sink: sink, Chains: db.ResolveChain})
}
