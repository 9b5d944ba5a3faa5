package cplog

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
)

// Marshal must write what encoding/json writes: stored entries and events
// keep their bytes, and a chain keeps its hash (run_chains is keyed by it).
func TestMarshalSameBytesAsEncodingJSON(t *testing.T) {
	item := 3
	at := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	values := []any{
		&engine.Checkpoint{RunID: "r", Kind: engine.CheckpointNode, EventSeq: 12, Time: at,
			Node: &engine.NodeRecord{NodeID: "n<1>", Status: engine.PhaseDone, Output: map[string]any{"z": 1.5, "a": "x & <y>", "l": []any{nil, true, "é\u2028"}, "m": map[string]any{}}}},
		&engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, Time: at, End: &engine.EndRecord{Status: engine.StatusCompleted}},
		&engine.Event{RunID: "r", Seq: 3, NodeID: "n", Phase: engine.PhaseDone, Output: map[string]any{"b": 1e21, "a": []any{}}, Item: &item, Edges: nil, Time: at},
		&engine.Event{RunID: "r", Seq: 4, NodeID: "n", Phase: engine.PhaseStart, Edges: []string{}, Time: at},
		storeChain(),
	}
	for i, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(v)
		if err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("value %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func storeChain() *engine.Chain {
	return &engine.Chain{Name: "c", Nodes: []engine.Node{{ID: "a", Kind: "tool", Input: map[string]any{"text": "<hi> & more"}}}}
}

// An Encoder encodes a chain once per pointer, and the stored form is the
// same as without it.
func TestEncoderRemembersChains(t *testing.T) {
	c1, c2 := storeChain(), storeChain()
	c2.Name = "other"
	start := func(c *engine.Chain) []engine.Checkpoint {
		return []engine.Checkpoint{{RunID: "r", Kind: engine.CheckpointStart, Start: &engine.StartRecord{Chain: c}}}
	}
	var e Encoder
	a, err := e.Encode(start(c1))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Encode(start(c1))
	if err != nil {
		t.Fatal(err)
	}
	if a.Bodies[0] != plain.Bodies[0] || a.ChainRefs[0] != plain.ChainRefs[0] || len(a.Chains) != 1 {
		t.Fatalf("encoder %v, plain %v", a, plain)
	}
	b, _ := e.Encode(start(c1))
	if b.ChainRefs[0] != a.ChainRefs[0] || b.Chains[a.ChainRefs[0].(string)] != a.Chains[a.ChainRefs[0].(string)] {
		t.Fatalf("the same chain again: %v, want %v", b.ChainRefs, a.ChainRefs)
	}
	c, _ := e.Encode(start(c2))
	if c.ChainRefs[0] == a.ChainRefs[0] {
		t.Fatal("another chain got the first one's hash")
	}
	// Bounded: older chains are pushed out, and still encode right.
	for i := 0; i < 2*encoderChains; i++ {
		x := storeChain()
		x.Name = string(rune('d' + i))
		if _, err := e.Encode(start(x)); err != nil {
			t.Fatal(err)
		}
	}
	if len(e.chains) > encoderChains || len(e.order) > encoderChains {
		t.Fatalf("encoder holds %d chains, bound %d", len(e.chains), encoderChains)
	}
	again, _ := e.Encode(start(c1))
	if again.ChainRefs[0] != a.ChainRefs[0] {
		t.Fatal("a chain pushed out came back with another hash")
	}
}
