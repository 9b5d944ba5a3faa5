package runs

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/eventbuf"
)

// heldStore is a memStore whose event writer is the shared buffered one,
// on a backend that stores nothing until release is closed: events stay
// in the writer as they do while the database is slow.
type heldStore struct {
	*memStore
	release chan struct{}
}

func (h *heldStore) NewEventWriter(o store.EventWriterOptions) store.EventWriter {
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	o.BatchSize = 4
	return eventbuf.New(heldEvents{h}, o)
}

type heldEvents struct{ h *heldStore }

func (e heldEvents) WriteEventBatch(ctx context.Context, batch []engine.Event, _ []string) error {
	<-e.h.release
	return e.AppendEvents(ctx, batch)
}

func (e heldEvents) AppendEvents(_ context.Context, evs []engine.Event) error {
	for _, ev := range evs {
		e.h.events.Emit(ev)
	}
	return nil
}

// Events reads what the event writer has not stored yet with what it has,
// each event once, in seq order, without waiting for the writer.
func TestEventsSeesWhatIsNotStoredYet(t *testing.T) {
	t.Parallel()
	var hs *heldStore
	f := newFixtureWith(t, func(o *Options) {
		hs = &heldStore{memStore: o.Store.(*memStore), release: make(chan struct{})}
		o.Store = hs
	})
	released := false
	t.Cleanup(func() { // before the service closes: its writer stores what it holds
		if !released {
			close(hs.release)
		}
	})
	ctx := context.Background()
	// Stored already: 1..3; held by the writer: 4..20 (a batch being
	// written, the rest buffered behind it).
	for seq := int64(1); seq <= 3; seq++ {
		hs.events.Emit(engine.Event{RunID: "r", Seq: seq, Phase: engine.PhaseStart})
	}
	for seq := int64(4); seq <= 20; seq++ {
		f.svc.events.Emit(engine.Event{RunID: "r", Seq: seq, Phase: engine.PhaseDone})
		f.svc.events.Emit(engine.Event{RunID: "other", Seq: seq, Phase: engine.PhaseDone})
	}
	read := func(after int64, limit int) []int64 {
		t.Helper()
		evs, err := f.svc.Events(ctx, "r", after, limit, 0)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range evs {
			if ev.RunID != "r" {
				t.Fatalf("an event of run %s", ev.RunID)
			}
			seqs = append(seqs, ev.Seq)
		}
		return seqs
	}
	want := func(got []int64, from, to int64) {
		t.Helper()
		if len(got) != int(to-from+1) {
			t.Fatalf("seqs %v, want %d..%d", got, from, to)
		}
		for i, s := range got {
			if s != from+int64(i) {
				t.Fatalf("seqs %v, want %d..%d", got, from, to)
			}
		}
	}
	want(read(0, 100), 1, 20)
	want(read(2, 5), 3, 7)
	want(read(10, 0), 11, 20)
	if got := f.svc.Buffered("r", 18); len(got) != 2 || got[0].Seq != 19 {
		t.Fatalf("buffered after 18: %v", got)
	}
	close(hs.release)
	released = true
	if err := f.svc.events.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want(read(0, 100), 1, 20)
	if got := f.svc.Buffered("r", 0); len(got) != 0 {
		t.Fatalf("%d events buffered after the flush", len(got))
	}
}
