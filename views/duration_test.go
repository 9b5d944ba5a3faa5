package views

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
)

// A run or node that ended within the millisecond took "< 1 ms": not "—"
// (unknown) and not "1 ms" (more than it took), wherever a duration is written.
func TestDurationUnderAMillisecond(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{{-1, "—"}, {0, "< 1 ms"}, {0.3, "< 1 ms"}, {1, "1 ms"}, {12.4, "12 ms"}, {999.4, "999 ms"}, {999.6, "1.0 s"}, {1400, "1.4 s"}, {123_000, "2 min 3 s"}, {3_900_000, "1 h 5 min"}} {
		if got := duration(c.ms); got != c.want {
			t.Errorf("duration(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if got := durationBetween(t0, t0.Add(300*time.Microsecond)); got != "< 1 ms" {
		t.Errorf("a node of 0.3 ms: %q", got)
	}
	if got := durationBetween(t0, time.Time{}); got != "—" {
		t.Errorf("a node still running: %q", got)
	}
	ms := 0.3
	if got := sideDuration(&inspect.NodeSide{DurationMS: &ms}); got != "< 1 ms" {
		t.Errorf("run diff, a node of 0.3 ms: %q", got)
	}
	if got := runDuration(&store.Run{Status: chain.StatusRunning, Started: t0}); got != "—" {
		t.Errorf("a running run: %q", got)
	}

	// the chain's run history, where a quick run said "—"
	runs := []store.Run{{ID: "r1", ChainID: "c1", Status: chain.StatusCompleted, Started: t0, Ended: t0, DurationMS: 0}}
	var b bytes.Buffer
	if err := RunsPage(&store.Chain{ID: "c1", Name: "quick"}, runs, "").Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	row := b.String()[strings.Index(b.String(), `data-run-id="r1"`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, "&lt; 1 ms") {
		t.Errorf("the run history row of a run under a millisecond says no duration: %s", row)
	}
}
