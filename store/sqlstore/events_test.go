package sqlstore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Events become one row per run per write, in the order of each row's
// first event; a run's large events spill into more rows; a run whose
// events go backwards is refused.
func TestEventBatches(t *testing.T) {
	now := func() time.Time { return time.UnixMicro(42) }
	ev := func(run string, seq int64) engine.Event { return engine.Event{RunID: run, Seq: seq} }
	events := []engine.Event{ev("a", 1), ev("b", 1), ev("a", 2), ev("a", 3)}
	big := `"` + strings.Repeat("x", MaxBatchBody) + `"`
	bodies := []string{"1", "2", "3", big}
	got, err := EventBatches(events, bodies, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []EventBatch{
		{RunID: "a", First: 1, Last: 2, Created: 42, Body: "[1,3]"},
		{RunID: "b", First: 1, Last: 1, Created: 42, Body: "[2]"},
		{RunID: "a", First: 3, Last: 3, Created: 42, Body: "[" + big + "]"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: run %s %d..%d at %d, %d bytes; want run %s %d..%d at %d, %d bytes", i,
				got[i].RunID, got[i].First, got[i].Last, got[i].Created, len(got[i].Body), want[i].RunID, want[i].First, want[i].Last, want[i].Created, len(want[i].Body))
		}
	}
	_, err = EventBatches([]engine.Event{ev("a", 2), ev("a", 2)}, []string{"1", "2"}, now)
	var se *store.EventSeqError
	if !errors.As(err, &se) || se.Seq != 2 || se.After != 2 {
		t.Fatalf("seq going backwards: %v", err)
	}
}
