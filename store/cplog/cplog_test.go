package cplog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Marshal must write what encoding/json writes: stored entries and events
// keep their bytes, and a chain keeps its hash (run_chains is keyed by it).
func TestMarshalSameBytesAsEncodingJSON(t *testing.T) {
	item := 3
	at := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	values := []any{
		&engine.Checkpoint{RunID: "r", Kind: engine.CheckpointNode, EventSeq: 12, Time: at,
			Node: &engine.NodeRecord{NodeID: "n<1>", Status: engine.PhaseDone, Output: map[string]any{"z": 1.5, "a": "x & <y>", "l": []any{nil, true, "é\u2028"}, "m": map[string]any{}}}},
		&engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, Time: at, End: &engine.EndRecord{Status: chain.StatusCompleted}},
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

func storeChain() *chain.Chain {
	return &chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "a", Kind: "tool", Input: map[string]any{"text": "<hi> & more"}}}}
}

// An Encoder encodes a chain once per pointer, and the stored form is the
// same as without it.
func TestEncoderRemembersChains(t *testing.T) {
	c1, c2 := storeChain(), storeChain()
	c2.Name = "other"
	start := func(c *chain.Chain) []engine.Checkpoint {
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

// A node's done event and its checkpoint entry share one encoding of the
// output (engine.OutputJSON): both are byte for byte what encoding/json
// writes for them, whichever is encoded first, and the output is encoded
// once and let go once both are written.
func TestSharedOutputSameBytes(t *testing.T) {
	at := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	outputs := []any{
		map[string]any{"z": 1.5, "a": "x & <y>", "l": []any{nil, true, "é\u2028"}, "m": map[string]any{}, "big": 1e21},
		map[string]any{},
		[]any{},
		"",
		"<b>",
		0.0,
		false,
		map[string]any(nil),
	}
	for i, out := range outputs {
		for _, eventFirst := range []bool{true, false} {
			memo := &engine.OutputJSON{}
			rec := &engine.NodeRecord{NodeID: "n", Status: engine.PhaseDone, Input: map[string]any{"q": "<in>"}, Output: out, Attempts: 1, Fired: []string{"e1"}, OutputJSON: memo}
			cp := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointNode, EventSeq: 7, Time: at, Node: rec}
			ev := engine.Event{RunID: "r", Seq: 7, NodeID: "n", Phase: engine.PhaseDone, Output: out, Attempt: 1, Edges: []string{"e1"}, Time: at, OutputJSON: memo}
			var entry string
			var event string
			encodeEntry := func() {
				enc, err := Encode([]engine.Checkpoint{cp})
				if err != nil {
					t.Fatalf("output %d: %v", i, err)
				}
				entry = enc.Bodies[0]
			}
			encodeEvent := func() {
				var err error
				if event, err = MarshalEvent(&ev); err != nil {
					t.Fatalf("output %d: %v", i, err)
				}
			}
			wantOut, _ := json.Marshal(out)
			first, second := encodeEvent, encodeEntry
			if !eventFirst {
				first, second = encodeEntry, encodeEvent
			}
			first()
			if got := memo.Load(); !bytes.Equal(got, wantOut) {
				t.Errorf("output %d: shared encoding %s, want %s", i, got, wantOut)
			}
			second()
			if got := memo.Load(); got != nil { // both written: it is let go
				t.Errorf("output %d: the shared encoding %s is still held after both were encoded", i, got)
			}
			wantEntry, _ := json.Marshal(&cp)
			wantEvent, _ := json.Marshal(&ev)
			if entry != string(wantEntry) {
				t.Errorf("output %d (event first %v): entry\n got %s\nwant %s", i, eventFirst, entry, wantEntry)
			}
			if event != string(wantEvent) {
				t.Errorf("output %d (event first %v): event\n got %s\nwant %s", i, eventFirst, event, wantEvent)
			}
		}
	}
}

// Once the output is encoded for one of the two, the other carries the
// same output even if the value changed in between (the engine never
// changes a record it handed out; a store must not write an event and an
// entry that disagree if something else does).
func TestSharedOutputFixedOnceEncoded(t *testing.T) {
	out := map[string]any{"v": "before"}
	memo := &engine.OutputJSON{}
	cp := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointNode, Node: &engine.NodeRecord{NodeID: "n", Status: engine.PhaseDone, Output: out, OutputJSON: memo}}
	ev := engine.Event{RunID: "r", Seq: 1, NodeID: "n", Phase: engine.PhaseDone, Output: out, OutputJSON: memo}
	enc, err := Encode([]engine.Checkpoint{cp})
	if err != nil {
		t.Fatal(err)
	}
	out["v"] = "after"
	b, err := MarshalEvent(&ev)
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Output map[string]any }
	var c struct {
		Node struct{ Output map[string]any }
	}
	if err := json.Unmarshal([]byte(b), &e); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(enc.Bodies[0]), &c); err != nil {
		t.Fatal(err)
	}
	if e.Output["v"] != "before" || c.Node.Output["v"] != "before" {
		t.Fatalf("event output %v, entry output %v: both must be the output as first encoded", e.Output, c.Node.Output)
	}
	// Without a shared encoding each is encoded as it is now.
	ev.OutputJSON = nil
	b, _ = MarshalEvent(&ev)
	if !strings.Contains(b, `"after"`) {
		t.Fatalf("an event without a shared encoding: %s", b)
	}
}

// An output that cannot be encoded is reported as before, and leaves no
// encoding behind for the other.
func TestSharedOutputUnencodable(t *testing.T) {
	memo := &engine.OutputJSON{}
	out := map[string]any{"f": func() {}}
	if _, err := Encode([]engine.Checkpoint{{Kind: engine.CheckpointNode, Node: &engine.NodeRecord{NodeID: "n", Output: out, OutputJSON: memo}}}); err == nil {
		t.Fatal("an unencodable output was stored")
	}
	if _, err := MarshalEvent(&engine.Event{NodeID: "n", Output: out, OutputJSON: memo}); err == nil {
		t.Fatal("an unencodable event output was encoded")
	}
	if memo.Load() != nil {
		t.Fatalf("a failed encoding was kept: %s", memo.Load())
	}
}

// BenchmarkEncodeNodes1000: a 1,000-node run's node entries and done
// events, as a store encodes them, for outputs of about 40 bytes (the
// store benchmarks' echo nodes), 300 bytes and 4 KB of JSON; shared: with
// an engine.OutputJSON (each output encoded once), twice: without.
func BenchmarkEncodeNodes1000(b *testing.B) {
	for _, size := range []int{40, 300, 4000} {
		for _, shared := range []bool{false, true} {
			name := fmt.Sprintf("out%d/twice", size)
			if shared {
				name = fmt.Sprintf("out%d/shared", size)
			}
			b.Run(name, func(b *testing.B) {
				at := time.Now()
				cps := make([]engine.Checkpoint, 1000)
				evs := make([]engine.Event, 1000)
				fields := map[string]any{}
				for k := 0; len(js(fields)) < size-40; k++ {
					fields[fmt.Sprintf("field%d", k)] = map[string]any{"n": float64(k), "s": "some text of a typical field", "ok": true}
				}
				for i := range cps {
					out := map[string]any{"i": float64(i), "text": "hello"}
					for k, v := range fields {
						out[k] = v
					}
					rec := &engine.NodeRecord{NodeID: "n", Status: engine.PhaseDone, Input: map[string]any{"i": float64(i), "text": "hello"}, Output: out, Attempts: 1, Started: at, Ended: at, Fired: []string{"e"}}
					cps[i] = engine.Checkpoint{RunID: "run", Kind: engine.CheckpointNode, EventSeq: int64(2 * i), Time: at, Node: rec}
					evs[i] = engine.Event{RunID: "run", Seq: int64(2 * i), NodeID: "n", Phase: engine.PhaseDone, Output: out, Attempt: 1, Edges: []string{"e"}, Time: at}
				}
				b.ReportAllocs()
				for b.Loop() {
					for i := range cps {
						if shared {
							m := &engine.OutputJSON{}
							cps[i].Node.OutputJSON, evs[i].OutputJSON = m, m
						}
						if _, err := MarshalEvent(&evs[i]); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := Encode(cps); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
