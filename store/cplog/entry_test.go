package cplog

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Node entries written by hand are Marshal's bytes: every field of the
// record set and unset, escaping, times, free-form values, and with the
// output's encoding shared.
func TestNodeEntrySameBytesAsMarshal(t *testing.T) {
	at := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	east := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -(3*3600+30*60)))
	full := &engine.NodeRecord{NodeID: "n<1> & \"q\"", Status: engine.PhaseDone, Input: map[string]any{"b": []any{1.0, "<x>"}, "a": nil},
		Output: map[string]any{"z": 1.5, "a": "x & <y>", "l": []any{nil, true, "é\u2028"}, "m": map[string]any{}}, Error: "boom\n<b>", ErrorCode: "tool_error",
		Reason: "why", Matched: "h", Attempts: 4, Iteration: 2, Started: at, Ended: east, State: map[string]any{"k": "v", "a": 1.0},
		Fired: []string{"e1", "e2"}, Pruned: []string{"e3"}, Held: true, Handled: "handler", Fatal: true, Partial: true, Sequential: true,
		Deferred: "e4", Failed: map[string]string{"e9": "guard <failed>", "e1": "x"}, Reused: true, Pinned: true,
		Decisions: []engine.Decision{{Node: "n", Edge: "e1", Kind: "edge_condition", Expr: "a && b", Result: "true", Rule: "all", Outcome: "fired"}}}
	records := []*engine.NodeRecord{
		full,
		{},
		{NodeID: "n", Status: engine.PhaseSkip, Reason: engine.ReasonOnErrorSkip, Ended: at, Pruned: []string{}, Fired: []string{}, State: map[string]any{}, Failed: map[string]string{}, Decisions: []engine.Decision{}},
		{NodeID: "ünï\x7f", Status: engine.PhaseDone, Output: "", Input: 0.0, Started: at.Local()},
		{NodeID: "n", Status: engine.PhaseDone, Output: map[string]any(nil), Attempts: -1, Iteration: -2},
	}
	for i, rec := range records {
		for _, cp := range []engine.Checkpoint{
			{RunID: "run<1>", Kind: engine.CheckpointNode, EventSeq: 1 << 40, Time: at, Node: rec},
			{Node: rec},
		} {
			want, err := Marshal(&cp)
			if err != nil {
				t.Fatal(err)
			}
			for _, shared := range []bool{false, true} {
				c := cp
				if shared {
					r := *rec
					r.OutputJSON = &engine.OutputJSON{}
					c.Node = &r
				}
				enc, err := Encode([]engine.Checkpoint{c})
				if err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if enc.Bodies[0] != string(want) {
					t.Errorf("record %d (shared %v):\n got %s\nwant %s", i, shared, enc.Bodies[0], want)
				}
			}
		}
	}
}

// The hand-written node entry knows every field of engine.Checkpoint and
// engine.NodeRecord: a new field must be written there too, or this fails.
func TestNodeEntryKnowsEveryField(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			if tag := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]; tag != "-" {
				out = append(out, tag)
			}
		}
		return out
	}
	if got := names(reflect.TypeFor[engine.Checkpoint]()); !reflect.DeepEqual(got, checkpointFields) {
		t.Errorf("engine.Checkpoint's JSON fields %v, the node entry writer knows %v: update appendNodeEntry", got, checkpointFields)
	}
	if got := names(reflect.TypeFor[engine.NodeRecord]()); !reflect.DeepEqual(got, nodeFields) {
		t.Errorf("engine.NodeRecord's JSON fields %v, the node entry writer knows %v: update appendNodeEntry", got, nodeFields)
	}
	// omitempty/omitzero as appendNodeEntry assumes them.
	for _, f := range []struct {
		typ  reflect.Type
		name string
		tag  string
	}{
		{reflect.TypeFor[engine.NodeRecord](), "Started", "started,omitzero"},
		{reflect.TypeFor[engine.NodeRecord](), "Ended", "ended,omitzero"},
		{reflect.TypeFor[engine.NodeRecord](), "Attempts", "attempts,omitempty"},
		{reflect.TypeFor[engine.Checkpoint](), "Time", "time"},
		{reflect.TypeFor[engine.Checkpoint](), "EventSeq", "event_seq"},
	} {
		sf, _ := f.typ.FieldByName(f.name)
		if got := sf.Tag.Get("json"); got != f.tag {
			t.Errorf("%s.%s is tagged %q, the writer assumes %q", f.typ.Name(), f.name, got, f.tag)
		}
	}
}

// Entries of other kinds, and node entries with another record beside,
// still go through Marshal whole.
func TestOtherEntriesUnchanged(t *testing.T) {
	at := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	for i, cp := range []engine.Checkpoint{
		{RunID: "r", Kind: engine.CheckpointEnd, Time: at, End: &engine.EndRecord{Status: chain.StatusCompleted}},
		{RunID: "r", Kind: engine.CheckpointPause, Time: at, Pause: &engine.PauseRecord{NodeID: "n"}},
		{RunID: "r", Kind: engine.CheckpointNode, Time: at, Node: &engine.NodeRecord{NodeID: "n"}, Edges: &engine.EdgesRecord{Source: "n"}},
	} {
		want, _ := Marshal(&cp)
		enc, err := Encode([]engine.Checkpoint{cp})
		if err != nil || enc.Bodies[0] != string(want) {
			t.Errorf("entry %d: %v\n got %s\nwant %s", i, err, enc.Bodies[0], want)
		}
	}
}
