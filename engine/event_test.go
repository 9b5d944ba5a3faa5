package engine

import (
	"encoding/json"
	"testing"
)

// Events say "attempts", as node results do; an event stored before the
// rename ("attempt") reads the same.
func TestEventAttemptsKey(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Event{RunID: "r", Seq: 2, NodeID: "n", Phase: PhaseStart, Attempt: 2})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["attempts"] != 2.0 || m["attempt"] != nil {
		t.Fatalf("event JSON %s", b)
	}
	for _, in := range []string{`{"run_id":"r","seq":2,"node_id":"n","phase":"start","attempt":3}`,
		`{"run_id":"r","seq":2,"node_id":"n","phase":"start","attempts":3}`} {
		var ev Event
		if err := json.Unmarshal([]byte(in), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Attempt != 3 || ev.NodeID != "n" || ev.Seq != 2 || ev.Phase != PhaseStart {
			t.Fatalf("%s read as %+v", in, ev)
		}
	}
}
