package runs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/eventbuf"
)

// faultStore is a memStore whose writes fail on demand, as a full disk
// makes them: checkpoint appends (failCP) and event batches (failEv). Its
// rows follow the log's start and end entries, as a backend's do, and its
// event writer is the shared buffered one.
type faultStore struct {
	*memStore
	failCP, failEv atomic.Bool
	refused        atomic.Int32 // checkpoint appends refused
}

var errDiskFull = errors.New("database or disk is full")

func (f *faultStore) NewEventWriter(o store.EventWriterOptions) store.EventWriter {
	o.MaxRetries, o.Interval = 2, time.Millisecond
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return eventbuf.New(faultEvents{f}, o)
}

type faultEvents struct{ f *faultStore }

func (e faultEvents) WriteEventBatch(_ context.Context, batch []engine.Event, _ []string) error {
	return e.AppendEvents(context.Background(), batch)
}

func (e faultEvents) AppendEvents(_ context.Context, evs []engine.Event) error {
	if e.f.failEv.Load() {
		return errDiskFull
	}
	for _, ev := range evs {
		e.f.events.Emit(ev)
	}
	return nil
}

func (f *faultStore) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	if f.failCP.Load() {
		f.refused.Add(1)
		return errDiskFull
	}
	if err := f.MemoryCheckpointer.Append(ctx, runID, cps); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[runID]
	for _, cp := range cps {
		switch {
		case cp.Kind == engine.CheckpointStart:
			r.Status = chain.StatusRunning
		case cp.Kind == engine.CheckpointEnd && cp.End != nil:
			r.Status, r.Error = cp.End.Status, cp.End.Error
		}
	}
	f.runs[runID] = r
	return nil
}

func newFaultFixture(t *testing.T) (*fixture, *faultStore) {
	t.Helper()
	var fs *faultStore
	f := newFixtureWith(t, func(o *Options) {
		fs = &faultStore{memStore: o.Store.(*memStore)}
		o.Store = fs
	})
	return f, fs
}

func (f *fixture) runInfo(t *testing.T, id string) *store.Run {
	t.Helper()
	r, err := f.store.GetRunInfo(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitEnded waits until run id's row says it stopped and the service no
// longer tracks it, and returns the row.
func (f *fixture) waitEnded(t *testing.T, id string) *store.Run {
	t.Helper()
	var r *store.Run
	testutil.Eventually(t, 10*time.Second, func() error {
		r = f.runInfo(t, id)
		if r.Status == chain.StatusRunning || r.Status == chain.StatusQueued || f.svc.Active(id) {
			return fmt.Errorf("run %s: status %s, active %v", id, r.Status, f.svc.Active(id))
		}
		return nil
	})
	return r
}

// The store refuses the run's writes (its node's entry and its end): the
// run does not stay running for ever. While writes fail it stays active
// (its row cannot change yet); once a write succeeds it ends failed with
// code storage_unavailable, offering a resume because its log has a start
// entry to resume from.
func TestRefusedWritesEndTheRunFailed(t *testing.T) {
	t.Parallel()
	f, fs := newFaultFixture(t)
	ch := &store.Chain{ID: "c1", Version: 1, Name: "gated", Doc: chainOf(t, gatedDoc)}
	id, err := f.svc.Start(context.Background(), ch, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	<-f.inGate
	testutil.Eventually(t, 5*time.Second, func() error { // its start entry is stored
		_, err := f.store.Load(context.Background(), id)
		return err
	})
	fs.failCP.Store(true)
	close(f.gate)
	if res := f.end(t); res.Status != "host_error" {
		t.Fatalf("the engine's answer: %+v, want a host error", res)
	}
	if r := f.runInfo(t, id); r.Status != chain.StatusRunning || !f.svc.Active(id) {
		t.Fatalf("while writes fail: status %s, active %v; want running and active", r.Status, f.svc.Active(id))
	}
	fs.failCP.Store(false)
	r := f.waitEnded(t, id)
	if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != store.CodeStorageUnavailable ||
		!strings.Contains(r.Error.Message, "could not be stored") || !strings.Contains(r.Error.Message, "resume it") {
		t.Fatalf("after writes recover: %s %+v", r.Status, r.Error)
	}
}

// A cancel while the run's end cannot be stored is heard: the run ends
// cancelled once the store takes writes again.
func TestCancelWhileTheEndCannotBeStored(t *testing.T) {
	t.Parallel()
	f, fs := newFaultFixture(t)
	ch := &store.Chain{ID: "c1", Version: 1, Name: "gated", Doc: chainOf(t, gatedDoc)}
	id, err := f.svc.Start(context.Background(), ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-f.inGate
	fs.failCP.Store(true)
	close(f.gate)
	f.end(t)
	// The engine's writes were refused (it reported the run's end above);
	// once the service's first try at the end is refused too, the run
	// waits for the store.
	engineRefused := fs.refused.Load()
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := fs.refused.Load(); n <= engineRefused {
			return fmt.Errorf("%d appends refused", n)
		}
		return nil
	})
	if !f.svc.Cancel(id) {
		t.Fatal("cancel of a run whose end is not stored yet answered false")
	}
	fs.failCP.Store(false)
	if r := f.waitEnded(t, id); r.Status != chain.StatusCancelled || r.Error == nil || r.Error.Code != store.CodeStorageUnavailable {
		t.Fatalf("cancelled while failing: %s %+v", r.Status, r.Error)
	}
}

// Events dropped after repeated write failures: the run is never
// reported completed with its history missing; it ends failed with
// storage_unavailable, saying how many events were lost. Another run whose
// events were stored completes.
func TestLostEventsFailTheRun(t *testing.T) {
	t.Parallel()
	f, fs := newFaultFixture(t)
	doc := chainOf(t, `{"name":"quick","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b"}]}`)
	ch := &store.Chain{ID: "c1", Version: 1, Name: "quick", Doc: doc}
	fs.failEv.Store(true)
	id, err := f.svc.Start(context.Background(), ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.end(t)
	r := f.waitEnded(t, id)
	if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != store.CodeStorageUnavailable || !strings.Contains(r.Error.Message, "events could not be stored") {
		t.Fatalf("a run whose events were dropped: %s %+v", r.Status, r.Error)
	}
	fs.failEv.Store(false)
	ok, err := f.svc.Start(context.Background(), ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("a run after the writes recovered: %+v", res)
	}
	if r := f.waitEnded(t, ok); r.Status != chain.StatusCompleted {
		t.Fatalf("its row: %s %+v", r.Status, r.Error)
	}
}

// A row that says running with nothing executing it (its executor gone
// without ending it) is ended by cancel, not refused as "not running".
func TestCancelEndsAnOrphanRow(t *testing.T) {
	t.Parallel()
	f, _ := newFaultFixture(t)
	ctx := context.Background()
	if _, err := f.store.CreateRun(ctx, store.Run{ID: "orphan", Kind: store.KindRun, Status: chain.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if !f.svc.Cancel("orphan") {
		t.Fatal("cancel of an orphan running row answered false")
	}
	if r := f.runInfo(t, "orphan"); r.Status != chain.StatusCancelled {
		t.Fatalf("orphan after cancel: %s %+v", r.Status, r.Error)
	}
	if f.svc.Cancel("orphan") {
		t.Fatal("a second cancel of an ended run answered true")
	}
}
