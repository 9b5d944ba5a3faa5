package runs

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
)

func sub(t *testing.T, h *Hub, runID string) *Subscription {
	t.Helper()
	s, err := h.Subscribe(runID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func recv(t *testing.T, s *Subscription) []int64 {
	t.Helper()
	var seqs []int64
	for ev, ok := s.Next(); ok; ev, ok = s.Next() {
		seqs = append(seqs, ev.Seq)
	}
	return seqs
}

// Every watcher of a run hears its events in order and then the end;
// watchers of other runs hear nothing of it.
func TestHubFanOutInOrderThenEnd(t *testing.T) {
	t.Parallel()
	h := NewHub(16)
	a, b, other := sub(t, h, "r1"), sub(t, h, "r1"), sub(t, h, "r2")
	if n := h.Watchers(); n != 3 {
		t.Fatalf("%d watchers, want 3", n)
	}
	for seq := int64(1); seq <= 5; seq++ {
		h.Emit(engine.Event{RunID: "r1", Seq: seq})
	}
	h.End("r1")
	for _, s := range []*Subscription{a, b} {
		if got := recv(t, s); len(got) != 5 || got[0] != 1 || got[4] != 5 {
			t.Fatalf("watcher heard %v, want 1..5", got)
		}
		if !s.Ended || s.Dropped {
			t.Fatalf("ended %v dropped %v, want ended", s.Ended, s.Dropped)
		}
	}
	if other.Len() != 0 {
		t.Fatalf("a watcher of another run heard %d events", other.Len())
	}
	if n := h.Watchers(); n != 1 {
		t.Fatalf("%d watchers after the end, want 1", n)
	}
	h.Unsubscribe(other)
	h.Unsubscribe(other) // twice is safe
	if n := h.Watchers(); n != 0 {
		t.Fatalf("%d watchers, want 0", n)
	}
}

// A watcher that falls behind is cut loose; the others keep everything.
func TestHubDropsSlowWatcherOnly(t *testing.T) {
	t.Parallel()
	h := NewHub(2)
	slow, fast := sub(t, h, "r"), sub(t, h, "r")
	var heard []int64
	for seq := int64(1); seq <= 3; seq++ {
		h.Emit(engine.Event{RunID: "r", Seq: seq})
		ev, _ := fast.Next() // the fast watcher keeps up
		heard = append(heard, ev.Seq)
	}
	h.End("r")
	if seqs := recv(t, slow); len(seqs) != 2 || !slow.Dropped || slow.Ended {
		t.Fatalf("slow watcher: %v dropped %v ended %v; want 2 events, then dropped", seqs, slow.Dropped, slow.Ended)
	}
	if rest := recv(t, fast); len(heard) != 3 || len(rest) != 0 || !fast.Ended || fast.Dropped {
		t.Fatalf("fast watcher: %v then %v, ended %v; want 1..3 and the end", heard, rest, fast.Ended)
	}
	h.Unsubscribe(slow) // after a drop: a no-op
	if n := h.Watchers(); n != 0 {
		t.Fatalf("%d watchers, want 0", n)
	}
}

// One encoding serves every watcher of an event.
func TestLiveEventEncodedOnce(t *testing.T) {
	t.Parallel()
	h := NewHub(4)
	a, b := sub(t, h, "r"), sub(t, h, "r")
	h.Emit(engine.Event{RunID: "r", Seq: 7})
	calls := 0
	enc := func(ev *engine.Event) ([]byte, error) { calls++; return []byte{byte(ev.Seq)}, nil }
	ea, _ := a.Next()
	eb, _ := b.Next()
	x, _ := ea.Encoded(enc)
	y, _ := eb.Encoded(enc)
	if calls != 1 || x[0] != 7 || y[0] != 7 {
		t.Fatalf("%d encodings (%v, %v), want one shared", calls, x, y)
	}
}

// Each named encoding is computed once too, apart from the others, also
// when watchers ask for it at once.
func TestLiveEventEncodedAsOncePerName(t *testing.T) {
	t.Parallel()
	h := NewHub(4)
	subs := make([]*Subscription, 8)
	for i := range subs {
		subs[i] = sub(t, h, "r")
	}
	h.Emit(engine.Event{RunID: "r", Seq: 7})
	var calls [3]atomic.Int32
	encoder := func(i int) func(*engine.Event) ([]byte, error) {
		return func(ev *engine.Event) ([]byte, error) {
			calls[i].Add(1)
			return []byte{byte(i), byte(ev.Seq)}, nil
		}
	}
	var wg sync.WaitGroup
	for _, s := range subs {
		ev, ok := s.Next()
		if !ok {
			t.Fatal("no event")
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			api, _ := ev.Encoded(encoder(0))
			page, _ := ev.EncodedAs("page", encoder(1))
			other, _ := ev.EncodedAs("other", encoder(2))
			if api[0] != 0 || page[0] != 1 || other[0] != 2 || page[1] != 7 {
				t.Errorf("encodings %v %v %v", api, page, other)
			}
		}()
	}
	wg.Wait()
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("encoding %d computed %d times, want once", i, n)
		}
	}
}
