package engine_test

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// A node's done event and its checkpoint record carry the same output and
// the same *OutputJSON (a store encodes the output once for both); events
// without an output, and other entries, carry none.
func TestNodeEventAndRecordShareOutputJSON(t *testing.T) {
	t.Parallel()
	sink := &engine.MemorySink{}
	cps := engine.NewMemoryCheckpointer()
	eng := engine.New(engine.Options{Registry: benchRegistry, Sink: sink, Checkpointer: cps})
	c := linearChain(4)
	c.Nodes[0].Input = map[string]any{"text": "hi"}
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), map[string]any{"x": 1.0}, engine.RunOptions{RunID: "share"})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("%v %v", err, res.Status)
	}
	log, err := cps.Load(context.Background(), "share")
	if err != nil {
		t.Fatal(err)
	}
	records := map[int64]*engine.NodeRecord{} // by the seq of the event before the entry
	for _, cp := range log {
		if cp.Node != nil {
			records[cp.EventSeq] = cp.Node
		}
	}
	done := 0
	for _, ev := range sink.Events() {
		if ev.Phase != engine.PhaseDone || ev.NodeID == "" {
			if ev.OutputJSON != nil {
				t.Errorf("%s event of %q has a shared output encoding", ev.Phase, ev.NodeID)
			}
			continue
		}
		done++
		rec := records[ev.Seq]
		if rec == nil || rec.NodeID != ev.NodeID {
			t.Fatalf("no record right after the done event of %s (seq %d)", ev.NodeID, ev.Seq)
		}
		if ev.OutputJSON == nil || ev.OutputJSON != rec.OutputJSON {
			t.Errorf("%s: event encoding %p, record encoding %p: want one, shared", ev.NodeID, ev.OutputJSON, rec.OutputJSON)
		}
		if js(ev.Output) != js(rec.Output) {
			t.Errorf("%s: event output %s, record output %s", ev.NodeID, js(ev.Output), js(rec.Output))
		}
		if b := rec.OutputJSON.Load(); b != nil {
			t.Errorf("%s: the engine encoded the output (%s); only a store does", ev.NodeID, b)
		}
	}
	if done != len(c.Nodes) {
		t.Fatalf("%d done events, want %d", done, len(c.Nodes))
	}
}

// OutputJSON keeps the first encoding stored: a later Store gets it back.
func TestOutputJSONFirstStoreWins(t *testing.T) {
	t.Parallel()
	var o engine.OutputJSON
	if o.Load() != nil {
		t.Fatal("a new OutputJSON holds an encoding")
	}
	if got := o.Store([]byte(`{"a":1}`)); string(got) != `{"a":1}` {
		t.Fatalf("first store returned %s", got)
	}
	if got := o.Store([]byte(`{"a":2}`)); string(got) != `{"a":1}` {
		t.Fatalf("second store returned %s, want the first", got)
	}
	if string(o.Load()) != `{"a":1}` {
		t.Fatalf("load %s", o.Load())
	}
}

// The second of the event and the record takes the encoding: it is not
// kept after both are written, and a later encoding is not kept either.
func TestOutputJSONTakeLetsGo(t *testing.T) {
	t.Parallel()
	var o engine.OutputJSON
	if o.Take() != nil {
		t.Fatal("a new OutputJSON hands out an encoding")
	}
	o.Store([]byte(`{"a":1}`))
	if got := o.Take(); string(got) != `{"a":1}` {
		t.Fatalf("take returned %s, want the stored encoding", got)
	}
	if o.Load() != nil || o.Take() != nil {
		t.Fatal("the encoding is still held after it was taken")
	}
	if got := o.Store([]byte(`{"a":1}`)); string(got) != `{"a":1}` || o.Load() != nil {
		t.Fatalf("a store after the take returned %s and kept %s: want it returned, not kept", got, o.Load())
	}
}
