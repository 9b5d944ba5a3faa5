package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// testPausesAcrossRestart: a run paused at three map items and a skill's
// inner pause is answered pause by pause, each answer by a new engine on the
// same store (a restart between answers): the log round-trips pause ids and
// finished items, a second answer to one pause is AlreadyResumed, and the
// run completes with every answer in place.
func testPausesAcrossRestart(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	newEngine := func() *engine.Engine {
		reg := Tools()
		reg.Register("interrupt", builtin.Tools(builtin.Options{})["interrupt"])
		return engine.New(engine.Options{Registry: reg, Checkpointer: db, Chains: db.ResolveChain})
	}
	sub, err := chain.Decode([]byte(`{"name":"sub-ask","nodes":[{"node_id":"q","kind":"interrupt","config":{"prompt":"sub?"}}],"edges":[]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateChain(ctx, sub, "", true); err != nil {
		t.Fatal(err)
	}
	doc, err := chain.Decode([]byte(`{"name":"many","nodes":[
{"node_id":"review","kind":"map","items_path":"input.items","map_node":"ask"},
{"node_id":"ask","kind":"tool","name":"interrupt","input_map":{"prompt":"item"}},
{"node_id":"sk","kind":"skill","name":"sub-ask"},
{"node_id":"end","kind":"tool","name":"echo","input_map":{"r":"review.output","s":"sk.output"}}],
"edges":[{"source":"review","target":"end"},{"source":"sk","target":"end"}]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine()
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), map[string]any{"items": []any{"a", "b", "c"}}, engine.RunOptions{RunID: "many"})
	if err != nil || res.Status != chain.StatusPaused || len(res.Pending) != 4 {
		t.Fatalf("run: %v %+v", err, res)
	}
	for _, step := range []struct{ id, value string }{{"review[1]", "B"}, {"sk/q", "S"}, {"review[0]", "A"}, {"review[2]", "C"}} {
		log, err := db.Load(ctx, "many")
		if err != nil {
			t.Fatal(err)
		}
		if !pendingHas(engine.PendingPauses(log), step.id) {
			t.Fatalf("before %s: pending %+v", step.id, engine.PendingPauses(log))
		}
		res, err = newEngine().Resume(ctx, "many", &engine.ResumeValue{Value: step.value}, nil, engine.ResumeOptions{PauseID: step.id})
		if err != nil {
			t.Fatalf("answer %s: %v", step.id, err)
		}
		if _, err := newEngine().Resume(ctx, "many", &engine.ResumeValue{Value: "again"}, nil, engine.ResumeOptions{PauseID: step.id}); !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("second answer to %s: %v", step.id, err)
		}
	}
	if res.Status != chain.StatusCompleted {
		t.Fatalf("after every answer: %s %+v", res.Status, res.Pending)
	}
	JSONEqual(t, res.FinalOutput, map[string]any{"r": []any{"A", "B", "C"}, "s": "S"})
	r, err := db.GetRun(ctx, "many")
	if err != nil || r.Status != chain.StatusCompleted {
		t.Fatalf("stored run: %v %+v", err, r)
	}
}

func pendingHas(p []engine.Pending, id string) bool {
	for _, x := range p {
		if x.PauseID == id {
			return true
		}
	}
	return false
}
