package runs

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// With one slot, later runs wait as queued in FIFO order, a full line
// refuses before recording anything, and a queued run cancelled leaves the
// line at once and ends cancelled without running a node.
func TestQueueBoundsRunsAndCancelsWaiting(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(o *Options) { o.MaxRunning, o.MaxQueued = 1, 2 })
	ctx := context.Background()
	ch := &store.Chain{ID: "c", Name: "gated", Doc: chainOf(t, gatedDoc)}
	first, err := f.svc.Start(ctx, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-f.inGate // the first run holds the only slot
	second, _ := f.svc.Start(ctx, ch, nil)
	third, err := f.svc.Start(ctx, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.store.mu.Lock()
	st1, st2, st3 := f.store.runs[first].Status, f.store.runs[second].Status, f.store.runs[third].Status
	f.store.mu.Unlock()
	if st1 != chain.StatusRunning || st2 != chain.StatusQueued || st3 != chain.StatusQueued {
		t.Fatalf("statuses %s %s %s, want running queued queued", st1, st2, st3)
	}
	if p2, p3 := f.svc.QueuePosition(second), f.svc.QueuePosition(third); p2 != 1 || p3 != 2 {
		t.Fatalf("positions %d %d, want 1 2", p2, p3)
	}
	if st := f.svc.QueueStats(); st.Running != 1 || st.Waiting != 2 || f.svc.ActiveCount() != 1 || !f.svc.Active(third) {
		t.Fatalf("stats %+v active %d", st, f.svc.ActiveCount())
	}
	before := len(f.store.runs)
	_, err = f.svc.Start(ctx, ch, nil)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Code != "queue_full" || busy.RetryAfter <= 0 || !strings.Contains(busy.Message, "--max-queued-runs") {
		t.Fatalf("Start on a full queue: %v, want queue_full naming the flag", err)
	}
	if _, err := f.svc.RunAdHoc(ctx, ch.Doc, nil, "a2e", nil); !errors.As(err, &busy) {
		t.Fatalf("RunAdHoc on a full queue: %v", err)
	}
	if len(f.store.runs) != before {
		t.Fatal("a refused run was recorded")
	}

	if !f.svc.Cancel(second) {
		t.Fatal("Cancel of a queued run: not found")
	}
	if res := f.end(t); res.Status != chain.StatusCancelled || res.NodesRun != 0 || res.RunID != second {
		t.Fatalf("cancelled queued run: %s %s after %d nodes", res.RunID, res.Status, res.NodesRun)
	}
	if p := f.svc.QueuePosition(third); p != 1 {
		t.Fatalf("third run at position %d after the cancel, want 1", p)
	}
	close(f.gate) // the first run ends; the third takes its slot, in order
	for range 2 {
		if res := f.end(t); res.Status != chain.StatusCompleted {
			t.Fatalf("status %s, want completed", res.Status)
		}
	}
}

// Shutdown ends queued runs cancelled, recorded with a start checkpoint so
// that a resume after the restart runs them from the start.
func TestShutdownCancelsQueuedRunsResumably(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, func(o *Options) { o.MaxRunning = 1 })
	ctx := context.Background()
	ch := &store.Chain{ID: "c", Name: "gated", Doc: chainOf(t, gatedDoc)}
	f.svc.Start(ctx, ch, nil)
	<-f.inGate
	queued, _ := f.svc.Start(ctx, ch, nil)
	if err := f.svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if res := f.end(t); res.Status != chain.StatusCancelled {
			t.Fatalf("status %s, want cancelled", res.Status)
		}
	}
	log, err := f.store.Load(ctx, queued)
	if err != nil || len(log) == 0 || log[0].Kind != engine.CheckpointStart {
		t.Fatalf("queued run's log after shutdown: %v %v", log, err)
	}
	// A new service on the same store (the restart) resumes it.
	g := newFixtureWith(t, func(o *Options) { o.Store = f.store })
	if err := g.svc.Resume(ctx, queued, nil, nil); err != nil {
		t.Fatal(err)
	}
	<-g.inGate
	close(g.gate)
	if res := g.end(t); res.Status != chain.StatusCompleted || res.RunID != queued {
		t.Fatalf("resumed queued run: %s %s", res.RunID, res.Status)
	}
}

// The hub caps watchers per run and in all, and an idle watcher holds no
// event buffer.
func TestHubCapsWatchers(t *testing.T) {
	t.Parallel()
	h := NewHub(4096)
	h.SetLimits(3, 2)
	a, _ := h.Subscribe("r1")
	h.Subscribe("r1")
	var busy *BusyError
	if _, err := h.Subscribe("r1"); !errors.As(err, &busy) || !strings.Contains(busy.Message, "--max-watchers-per-run") {
		t.Fatalf("third watcher of r1: %v", err)
	}
	h.Subscribe("r2")
	if _, err := h.Subscribe("r3"); !errors.As(err, &busy) || !strings.Contains(busy.Message, "--max-watchers") || busy.RetryAfter <= 0 {
		t.Fatalf("fourth watcher: %v", err)
	}
	if cap(a.queue) != 0 {
		t.Fatalf("an idle watcher holds %d slots", cap(a.queue))
	}
	h.Unsubscribe(a)
	if _, err := h.Subscribe("r3"); err != nil {
		t.Fatalf("after one left: %v", err)
	}
}

// Near the memory budget a new job waits even with slots free, and says
// so naming the flag; a job alone always starts; once the heap is below the
// mark again, the jobs held back start together as a slot frees.
func TestFIFOHoldsJobsNearTheMemoryBudget(t *testing.T) {
	t.Parallel()
	var heap atomic.Int64
	q := NewFIFO(4, 10)
	q.SetMemoryBudget(&MemoryBudget{Limit: 100 << 20, Heap: heap.Load})
	started := make(chan string, 10)
	release, jobs := map[string]chan struct{}{}, map[string]Job{}
	for _, id := range []string{"a", "b", "c", "d"} {
		release[id] = make(chan struct{})
		jobs[id] = Job{RunID: id, Run: func() { started <- id; <-release[id] }}
	}
	heap.Store(90 << 20) // over 3/4 of 100 MiB, but nothing runs: a starts
	if err := q.Enqueue(jobs["a"]); err != nil {
		t.Fatal(err)
	}
	if id := <-started; id != "a" {
		t.Fatalf("started %s, want a", id)
	}
	for _, id := range []string{"b", "c"} {
		if err := q.Enqueue(jobs[id]); err != nil {
			t.Fatal(err)
		}
	}
	if st := q.Stats(); st.Running != 1 || st.Waiting != 2 || q.Position("b") != 1 {
		t.Fatalf("near the budget: %+v, b at %d; want 1 running, b and c waiting", st, q.Position("b"))
	}
	if w := q.MemoryWait(); !strings.Contains(w, "--max-memory") || !strings.Contains(w, "90 MiB") {
		t.Fatalf("MemoryWait() = %q, want the heap and the flag named", w)
	}
	heap.Store(10 << 20)
	if q.MemoryWait() != "" {
		t.Fatal("MemoryWait() names the budget below its mark")
	}
	close(release["a"]) // a's slot frees: b and c both fit now
	got := map[string]bool{<-started: true, <-started: true}
	if !got["b"] || !got["c"] {
		t.Fatalf("started %v, want b and c", got)
	}
	if err := q.Enqueue(jobs["d"]); err != nil {
		t.Fatal(err)
	}
	if id := <-started; id != "d" {
		t.Fatalf("started %s, want d at once below the mark", id)
	}
	for _, id := range []string{"b", "c", "d"} {
		close(release[id])
	}
}
