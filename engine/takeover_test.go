package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

const countDoc = `{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"count"},{"node_id":"b","kind":"tool","name":"count"},
{"node_id":"c","kind":"tool","name":"count"},{"node_id":"d","kind":"tool","name":"count"}],
"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d"}]}`

// A process died after a and b were checkpointed, with c in flight: the
// takeover replays the log, so a and b are not called again, c runs once
// more and d once; the events go on after the stored ones without a gap.
func TestTakeoverContinuesFromTheLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.start(countDoc, nil)
	wantStatus(t, res, chain.StatusCompleted)
	ctx := context.Background()
	full, err := h.e.Checkpointer().Load(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The log as the dead process left it: start, a, b.
	var cut []engine.Checkpoint
	for _, cp := range full {
		if cp.Kind == engine.CheckpointNode && (cp.Node.NodeID == "c" || cp.Node.NodeID == "d") || cp.Kind == engine.CheckpointEnd {
			continue
		}
		cut = append(cut, cp)
	}
	// A fresh engine (the other process) with that log and no calls yet.
	h2 := newHarness(t)
	if err := h2.cp.Append(ctx, res.RunID, cut); err != nil {
		t.Fatal(err)
	}
	stored := cut[len(cut)-1].EventSeq
	res2, err := h2.e.Takeover(ctx, res.RunID, cut, nil, engine.ResumeOptions{NextSeq: stored + 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	for node, want := range map[string]int{"a": 0, "b": 0, "c": 1, "d": 1} {
		if got := h2.cnt.get(node); got != want {
			t.Errorf("node %s called %d times by the takeover, want %d", node, got, want)
		}
	}
	evs := h2.sink.Events()
	if len(evs) == 0 || evs[0].Seq != stored+1 {
		t.Fatalf("the takeover's first event: %+v, want seq %d", evs, stored+1)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 {
			t.Fatalf("event seqs %d then %d", evs[i-1].Seq, evs[i].Seq)
		}
	}
	// Ended now: a second takeover has nothing to do.
	log, _ := h2.cp.Load(ctx, res.RunID)
	var cre *engine.ChainResumeError
	if _, err := h2.e.Takeover(ctx, res.RunID, log, nil, engine.ResumeOptions{}); !errors.As(err, &cre) {
		t.Fatalf("a takeover of an ended run: %v, want a *ChainResumeError", err)
	}
}
