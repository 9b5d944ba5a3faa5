package store

import (
	"slices"
	"testing"

	"github.com/chainstudio/studio/engine"
)

func seqs(from, to int64) []engine.Event {
	var out []engine.Event
	for s := from; s <= to; s++ {
		out = append(out, engine.Event{RunID: "r", Seq: s})
	}
	return out
}

// A merged read follows the stored page with the buffered events that
// continue it, and with nothing when more events are stored between.
func TestMergeBuffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		stored, buffered []engine.Event
		after            int64
		limit            int
		want             []int64
	}{
		{"nothing", nil, nil, 0, 10, nil},
		{"stored only", seqs(1, 3), nil, 0, 10, []int64{1, 2, 3}},
		{"buffered only", nil, seqs(1, 3), 0, 10, []int64{1, 2, 3}},
		{"buffered after the stored", seqs(4, 5), seqs(6, 8), 3, 10, []int64{4, 5, 6, 7, 8}},
		{"committed in between: once each", seqs(1, 6), seqs(4, 8), 0, 10, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"all committed in between", seqs(1, 6), seqs(4, 6), 0, 10, []int64{1, 2, 3, 4, 5, 6}},
		{"a page cut before the buffer", seqs(1, 3), seqs(6, 8), 0, 10, []int64{1, 2, 3}},
		{"a full page", seqs(1, 3), seqs(4, 8), 0, 3, []int64{1, 2, 3}},
		{"up to the limit", seqs(1, 3), seqs(4, 8), 0, 5, []int64{1, 2, 3, 4, 5}},
		{"buffered after a loss", nil, seqs(6, 7), 2, 10, []int64{6, 7}},
		{"buffered before after", nil, seqs(1, 7), 5, 10, []int64{6, 7}},
		{"default limit", nil, seqs(1, 1200), 0, 0, nil},
	} {
		got := MergeBuffered(tc.stored, tc.buffered, tc.after, tc.limit)
		var s []int64
		for _, e := range got {
			s = append(s, e.Seq)
		}
		if tc.name == "default limit" {
			if len(s) != 1000 || s[999] != 1000 {
				t.Errorf("%s: %d events, want 1000", tc.name, len(s))
			}
			continue
		}
		if !slices.Equal(s, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, s, tc.want)
		}
	}
}
