package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func testEvents(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	evs := Events("r1", 1, 200)
	if err := db.AppendEvents(ctx, evs[:130]); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, evs[130:]); err != nil {
		t.Fatal(err)
	}
	// A duplicate seq is refused, and nothing of that batch is written.
	dup := append(Events("r1", 201, 3), evs[0])
	if err := db.AppendEvents(ctx, dup); err == nil {
		t.Fatal("duplicate seq accepted")
	}
	if n, _ := db.MaxSeq(ctx, "r1"); n != 200 {
		t.Fatalf("max seq %d", n)
	}
	if n, _ := db.MaxSeq(ctx, "other"); n != 0 {
		t.Fatalf("max seq of unknown run %d", n)
	}
	got, err := db.EventsAfter(ctx, "r1", 150, 20)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, got, evs[150:170])
	got, _ = db.EventsAfter(ctx, "r1", 195, 0)
	if len(got) != 5 || got[0].Seq != 196 {
		t.Fatalf("tail %+v", got)
	}
	if !got[0].Time.Equal(evs[195].Time) {
		t.Fatal("time not round-tripped")
	}
	// The run row was created for the events.
	if r, err := db.GetRun(ctx, "r1"); err != nil || r.Status != chain.StatusRunning {
		t.Fatalf("run row %v %v", r, err)
	}
}

// A read bounded by bytes stops once about that many stored bytes were
// read: large events come a few at a time, small ones by count.
func testEventsAfterBytes(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	big := strings.Repeat("b", 300<<10)
	evs := Events("rb", 1, 10)
	for i := range evs {
		evs[i].Output = big
		if err := db.AppendEvents(ctx, evs[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AppendEvents(ctx, Events("rb", 11, 50)); err != nil {
		t.Fatal(err)
	}
	got, err := db.EventsAfterBytes(ctx, "rb", 2, 100, 500<<10)
	if err != nil {
		t.Fatal(err)
	}
	// Two batches of 300 KiB reach 500 KiB: events 3 and 4.
	if len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 4 || got[0].Output != big {
		t.Fatalf("a 500 KiB read of 300 KiB events: %d events from %v", len(got), seqsOf(got))
	}
	if got, _ := db.EventsAfterBytes(ctx, "rb", 2, 100, 1); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("a read always reads one batch: %v", seqsOf(got))
	}
	got, _ = db.EventsAfterBytes(ctx, "rb", 10, 20, 500<<10)
	if len(got) != 20 || got[0].Seq != 11 {
		t.Fatalf("small events come by count: %v", seqsOf(got))
	}
	if got, _ := db.EventsAfterBytes(ctx, "rb", 0, 0, 0); len(got) != 60 {
		t.Fatalf("unbounded: %d events", len(got))
	}
}

func seqsOf(evs []engine.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func testEventWriter(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	w := db.NewEventWriter(store.EventWriterOptions{})
	const runs, per = 4, 3000
	var wg sync.WaitGroup
	for r := 0; r < runs; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range Events(fmt.Sprintf("run%d", r), 1, per) {
				w.Emit(e)
			}
		}()
	}
	wg.Wait()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < runs; r++ {
		id := fmt.Sprintf("run%d", r)
		if n, _ := db.MaxSeq(ctx, id); n != per {
			t.Fatalf("%s: max seq %d after Flush", id, n)
		}
		got, _ := db.EventsAfter(ctx, id, 0, per+10)
		if len(got) != per {
			t.Fatalf("%s: %d events", id, len(got))
		}
		for i, e := range got {
			if e.Seq != int64(i+1) {
				t.Fatalf("%s: event %d has seq %d", id, i, e.Seq)
			}
		}
	}
	// A single event is written within the interval without a Flush.
	w.Emit(Events("solo", 1, 1)[0])
	deadline := time.Now().Add(2 * time.Second)
	for {
		if n, _ := db.MaxSeq(ctx, "solo"); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lone event not written by the timer")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Close writes what is buffered.
	for _, e := range Events("last", 1, 10) {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.MaxSeq(ctx, "last"); n != 10 {
		t.Fatalf("close lost events: %d", n)
	}
	// After Close, Emit stores directly.
	w.Emit(Events("last", 11, 1)[0])
	if n, _ := db.MaxSeq(ctx, "last"); n != 11 {
		t.Fatalf("late event: %d", n)
	}
}

// EventWriterLostRun: a batch the store refuses (here: seqs already
// stored) is given up on after MaxRetries, and FlushRun reports it to its
// run only, once, as an *store.EventsLostError; another run's FlushRun is
// clean.
func testEventWriterLostRun(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	w := db.NewEventWriter(store.EventWriterOptions{MaxRetries: 2, Interval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer w.Close()
	rf, ok := w.(store.RunFlusher)
	if !ok {
		t.Fatalf("the event writer %T cannot say which run lost events", w)
	}
	if err := db.AppendEvents(ctx, Events("dup", 1, 3)); err != nil {
		t.Fatal(err)
	}
	for _, e := range Events("dup", 2, 2) { // seqs 2 and 3 again
		w.Emit(e)
	}
	var lost *store.EventsLostError
	if err := rf.FlushRun(ctx, "dup"); !errors.As(err, &lost) || lost.RunID != "dup" || lost.Events != 2 || lost.Err == nil {
		t.Fatalf("FlushRun of the run whose batch was refused: %v", err)
	}
	if err := rf.FlushRun(ctx, "dup"); err != nil {
		t.Fatalf("a second FlushRun reports the loss again: %v", err)
	}
	for _, e := range Events("clean", 1, 5) {
		w.Emit(e)
	}
	if err := rf.FlushRun(ctx, "clean"); err != nil {
		t.Fatalf("FlushRun of a run whose events were stored: %v", err)
	}
	if n, _ := db.MaxSeq(ctx, "clean"); n != 5 {
		t.Fatalf("clean run: max seq %d after FlushRun", n)
	}
	if w.Dropped() != 2 {
		t.Fatalf("dropped %d, want 2", w.Dropped())
	}
}

// EventWriterBuffered: a read that takes the writer's buffered events
// before it reads the store (store.MergeBuffered) sees every event emitted
// before it, in seq order, without a gap or a duplicate, while batches are
// committed under it, and without a Flush; pages cut by count or bytes go
// on where they stopped.
func testEventWriterBuffered(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	w := db.NewEventWriter(store.EventWriterOptions{BatchSize: 16, Interval: time.Millisecond})
	defer w.Close()
	br, ok := w.(store.BufferReader)
	if !ok {
		t.Fatalf("the event writer %T cannot show what it has not stored yet", w)
	}
	const n = 3000
	evs, other := Events("buffered", 1, n), Events("neighbour", 1, n)
	var emitted sync.WaitGroup
	emitted.Add(1)
	go func() {
		defer emitted.Done()
		for i := range evs {
			w.Emit(evs[i])
			w.Emit(other[i])
		}
	}()
	after, reads := int64(0), 0
	read := func() {
		reads++
		buf := br.Buffered("buffered", after, nil)
		for i := range buf {
			if buf[i].RunID != "buffered" || buf[i].Seq <= after || (i > 0 && buf[i].Seq != buf[i-1].Seq+1) {
				t.Fatalf("buffered after %d: %s seq %d at %d", after, buf[i].RunID, buf[i].Seq, i)
			}
		}
		stored, err := db.EventsAfterBytes(ctx, "buffered", after, 100, 2<<10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range store.MergeBuffered(stored, buf, after, 100) {
			if e.Seq != after+1 {
				t.Fatalf("read %d: seq %d after %d: a gap or a duplicate", reads, e.Seq, after)
			}
			after = e.Seq
		}
	}
	for after < n/2 {
		read()
	}
	emitted.Wait()
	// Everything emitted is seen at once, stored or not.
	for i := 0; after < n; i++ {
		if i > n {
			t.Fatalf("stuck at seq %d of %d", after, n)
		}
		read()
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if buf := br.Buffered("buffered", 0, nil); len(buf) != 0 {
		t.Fatalf("%d events still buffered after Flush", len(buf))
	}
}
