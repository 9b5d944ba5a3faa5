package cplog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
)

// MarshalEvent writes exactly what Marshal (the reflecting encoder, which
// writes encoding/json's bytes) writes for an event: every field set and
// unset, strings that need escaping, times in other zones and without
// nanoseconds, free-form values. (Invalid UTF-8 is the one place Marshal
// itself differs from encoding/json: it writes U+FFFD as is, encoding/json
// as \ufffd; both read back the same.)
func TestMarshalEventSameBytesAsEncodingJSON(t *testing.T) {
	zero, seven, minus := 0, 7, -3
	at := time.Date(2026, 11, 30, 18, 0, 0, 123456789, time.UTC)
	east := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+30*60))
	full := engine.Event{RunID: "r<1>", Seq: 1 << 40, NodeID: "n \"quoted\" & \\ back", Phase: engine.PhaseDone,
		Output: map[string]any{"z": 1.5, "a": "x & <y>", "l": []any{nil, true, "é\u2028"}}, Error: "failed: <b>é</b>\n\ttab\x01",
		Reason: "reason", Matched: "case-1", Attempt: 3, Iteration: 2, Item: &seven, Progress: map[string]any{"done": 3.0, "of": 10.0},
		Prompt: map[string]any{"question": "ok?"}, Edges: []string{"e1", "e<2>"}, Reused: true, Pinned: true, Time: at,
		Decisions: []engine.Decision{{Node: "n", Edge: "e1", Kind: "edge_condition", Expr: "output.i >= `0`", Reads: []engine.Read{{}}, Result: "true", Rule: "all", Outcome: "fired"}}}
	events := []engine.Event{
		full,
		{RunID: "r", Seq: 1, NodeID: "n", Phase: engine.PhaseStart, Time: at},
		{RunID: "", Seq: 0, NodeID: "", Phase: "", Time: time.Time{}},
		{RunID: "r", Seq: -1, NodeID: "n", Phase: engine.PhaseSkip, Item: &zero, Edges: []string{}, Decisions: []engine.Decision{}, Time: east},
		{RunID: "r", Seq: 2, NodeID: "n", Phase: engine.PhaseError, Attempt: minus, Iteration: minus, Item: &minus, Time: at.Local()},
		{RunID: "r", Seq: 3, NodeID: "ünï", Phase: engine.PhaseDone, Output: "", Progress: 0.0, Prompt: false, Time: at},
		{RunID: "r", Seq: 4, NodeID: "n", Phase: engine.PhaseDone, Output: map[string]any(nil), Time: at},
		{RunID: "r", Seq: 5, NodeID: "\x7f\xff", Phase: engine.PhaseDone, Output: []any{}, Error: "\u2029", Time: at},
	}
	for i := range events {
		want, err := Marshal(&events[i])
		if err != nil {
			t.Fatal(err)
		}
		got, err := MarshalEvent(&events[i])
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got != string(want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
		// And with the output's encoding shared.
		e := events[i]
		e.OutputJSON = &engine.OutputJSON{}
		if got, _ := MarshalEvent(&e); got != string(want) {
			t.Errorf("event %d, shared output:\n got %s\nwant %s", i, got, want)
		}
	}
}

// MarshalEvent writes engine.Event's fields by hand: a field added to the
// struct must be added there too (and to eventFields), or this fails.
func TestMarshalEventKnowsEveryField(t *testing.T) {
	var names []string
	typ := reflect.TypeFor[engine.Event]()
	for i := range typ.NumField() {
		tag := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		if tag != "-" {
			names = append(names, tag)
		}
	}
	if !reflect.DeepEqual(names, eventFields) {
		t.Fatalf("engine.Event's JSON fields %v, MarshalEvent writes %v: update appendEvent", names, eventFields)
	}
}

// An event whose value cannot be encoded is an error, as with Marshal, and
// a time encoding/json refuses is refused too.
func TestMarshalEventErrors(t *testing.T) {
	for _, e := range []engine.Event{
		{RunID: "r", Output: map[string]any{"f": func() {}}},
		{RunID: "r", Progress: make(chan int)},
		{RunID: "r", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, jerr := json.Marshal(&e); jerr == nil {
			t.Fatalf("encoding/json encodes %+v", e)
		}
		if s, err := MarshalEvent(&e); err == nil {
			t.Errorf("encoded %s", s)
		}
	}
}

// BenchmarkMarshalEvent: a node's start and done events, by MarshalEvent
// and by the reflecting encoder (MarshalString).
func BenchmarkMarshalEvent(b *testing.B) {
	at := time.Now()
	evs := []engine.Event{
		{RunID: "run-1", Seq: 1, NodeID: "n12", Phase: engine.PhaseStart, Time: at},
		{RunID: "run-1", Seq: 2, NodeID: "n12", Phase: engine.PhaseDone, Output: map[string]any{"i": 12.0, "text": "hello"}, Attempt: 1, Edges: []string{"e12"}, Time: at},
	}
	for _, name := range []string{"hand", "reflect"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for i := range evs {
					var err error
					if name == "hand" {
						_, err = MarshalEvent(&evs[i])
					} else {
						_, err = MarshalString(&evs[i])
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
