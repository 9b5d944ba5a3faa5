package views

import (
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/store"
)

// Durations on the comparison page read as on the run page, with a sign
// for a change; under a millisecond keeps a decimal rather than rounding to
// nothing.
func TestRunDiffDurationTexts(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{{12.4, "+12 ms"}, {-1400, "−1.4 s"}, {0, "no change"}, {0.04, "< 1 ms"}, {-0.25, "< 1 ms"}, {125_000, "+2 min 5 s"}} {
		if got := deltaText(c.ms); got != c.want {
			t.Errorf("deltaText(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
	ms := 3.0
	if got := sideDuration(&inspect.NodeSide{DurationMS: &ms}); got != "3 ms" {
		t.Errorf("sideDuration = %q", got)
	}
	if got := sideDuration(&inspect.NodeSide{}); got != "—" {
		t.Errorf("no duration: %q", got)
	}
}

func TestCompareLabel(t *testing.T) {
	r := store.Run{ID: "0123456789abcdef", Status: chain.StatusTimedOut, ChainVersion: 3, Started: time.Now()}
	if got := compareLabel(CompareOption{Run: r, Default: true}); got != "01234567 · timed out · v3 · just now (previous run)" {
		t.Errorf("previous: %q", got)
	}
	if got := compareLabel(CompareOption{Run: r, Default: true, Newer: true}); got != "01234567 · timed out · v3 · just now (next run)" {
		t.Errorf("next: %q", got)
	}
	if got := whatText([]string{inspect.DiffRoute, inspect.DiffAdded}); got != "route taken, only in B's chain" {
		t.Errorf("whatText: %q", got)
	}
}
