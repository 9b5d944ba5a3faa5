package runs

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/store"
)

// A watch sends every event of a run once, in seq order, the replay and
// the live events overlapping, and ends when the run does.
func TestWatchSendsEachEventOnceInOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ch := &store.Chain{ID: "c1", Version: 1, Name: "gated", Doc: chainOf(t, gatedDoc)}
	id, err := f.svc.Start(ctx, ch, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	<-f.inGate // some events are stored before the watch starts
	w, err := f.svc.Watch(id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var sent []int64
	replay := func(_ context.Context, after int64) (int64, error) {
		last := after
		for _, ev := range f.events.all(id) {
			if ev.Seq > last {
				sent = append(sent, ev.Seq)
				last = ev.Seq
			}
		}
		return last, nil
	}
	send := func(ev *LiveEvent) error { sent = append(sent, ev.Seq); return nil }
	if err := w.CatchUp(ctx, replay); err != nil || len(sent) == 0 || !w.Live() {
		t.Fatalf("catch-up: %v, %d events, live %v", err, len(sent), w.Live())
	}
	close(f.gate)
	for {
		_, open := <-w.C()
		state, err := w.Next(ctx, open, replay, send)
		if err != nil {
			t.Fatal(err)
		}
		if state == WatchEnded {
			break
		}
		if state == WatchDropped {
			t.Fatal("dropped")
		}
	}
	if err := w.CatchUp(ctx, replay); err != nil {
		t.Fatal(err)
	}
	all := f.events.all(id)
	if len(sent) != len(all) {
		t.Fatalf("sent %v, stored %d events", sent, len(all))
	}
	for i, seq := range sent {
		if seq != int64(i+1) {
			t.Fatalf("sent %v: not each seq once in order", sent)
		}
	}
	if w.Last() != int64(len(all)) {
		t.Fatalf("last %d of %d", w.Last(), len(all))
	}
}
