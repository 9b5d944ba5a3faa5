package runs

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
)

// memStore keeps runs and checkpoints in memory; its event writer is
// events, and MaxSeq reads it.
type memStore struct {
	*engine.MemoryCheckpointer
	mu     sync.Mutex
	runs   map[string]store.Run
	events *memEvents
}

func (m *memStore) NewEventWriter(store.EventWriterOptions) store.EventWriter { return m.events }

func (m *memStore) CreateRun(_ context.Context, r store.Run) (*store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[r.ID] = r
	return &r, nil
}

func (m *memStore) GetRunInfo(_ context.Context, id string) (*store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return nil, store.Errorf(store.ENOTFOUND, "run %q not found", id)
	}
	return &r, nil
}

func (m *memStore) MaxSeq(_ context.Context, runID string) (int64, error) {
	var n int64
	for _, ev := range m.events.all(runID) {
		n = max(n, ev.Seq)
	}
	return n, nil
}

func (m *memStore) EventsAfterBytes(_ context.Context, runID string, after int64, limit int, _ int64) ([]engine.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	var out []engine.Event
	for _, ev := range m.events.all(runID) {
		if ev.Seq > after && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memStore) ResolveChain(_ context.Context, name string) (*chain.Chain, error) {
	return nil, store.Errorf(store.ENOTFOUND, "chain %q not found", name)
}

// memEvents is an event log in memory.
type memEvents struct {
	mu     sync.Mutex
	evs    []engine.Event
	closed bool
}

func (m *memEvents) Emit(ev engine.Event)        { m.mu.Lock(); m.evs = append(m.evs, ev); m.mu.Unlock() }
func (m *memEvents) Flush(context.Context) error { return nil }
func (m *memEvents) Close() error                { m.mu.Lock(); m.closed = true; m.mu.Unlock(); return nil }
func (m *memEvents) Dropped() uint64             { return 0 }

func (m *memEvents) all(runID string) []engine.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []engine.Event
	for _, ev := range m.evs {
		if ev.RunID == runID {
			out = append(out, ev)
		}
	}
	return out
}

// observer records what the service reports; ended delivers each finished run.
type observer struct {
	mu      sync.Mutex
	started []string
	ops     map[string]int
	nodes   int
	ended   chan *engine.Result
}

func (o *observer) Emit(ev engine.Event) {
	if ev.Phase == engine.PhaseDone {
		o.mu.Lock()
		o.nodes++
		o.mu.Unlock()
	}
}
func (o *observer) RunStarted(kind string) {
	o.mu.Lock()
	o.started = append(o.started, kind)
	o.mu.Unlock()
}
func (o *observer) RunFinished(_ string, res *engine.Result, err error) {
	if err != nil {
		res = &engine.Result{Status: "host_error"}
	}
	o.ended <- res
}
func (o *observer) StoreCall(op string, _ time.Duration) { o.mu.Lock(); o.ops[op]++; o.mu.Unlock() }

type fixture struct {
	svc    *Service
	store  *memStore
	events *memEvents
	obs    *observer
	gate   chan struct{} // the gate tool returns once this is closed
	inGate chan struct{} // the gate tool signals here when a run reaches it
}

func newFixture(t *testing.T) *fixture { t.Helper(); return newFixtureWith(t, nil) }

func newFixtureWith(t *testing.T, set func(*Options)) *fixture {
	t.Helper()
	f := &fixture{events: &memEvents{}, gate: make(chan struct{}), inGate: make(chan struct{}, 8),
		obs: &observer{ops: map[string]int{}, ended: make(chan *engine.Result, 8)}}
	f.store = &memStore{MemoryCheckpointer: engine.NewMemoryCheckpointer(), runs: map[string]store.Run{}, events: f.events}
	reg := engine.NewRegistry()
	reg.Register("echo", func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) { return in, nil })
	reg.Register("gate", func(ctx context.Context, _ map[string]any, _ tool.Emitter) (any, error) {
		f.inGate <- struct{}{}
		select {
		case <-f.gate:
			return "open", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	opts := Options{Store: f.store, Registry: reg, Observer: f.obs, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if set != nil {
		set(&opts)
	}
	svc, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	t.Cleanup(func() { svc.Shutdown(context.Background()); svc.Close() })
	return f
}

// end waits for the next run to finish.
func (f *fixture) end(t *testing.T) *engine.Result {
	t.Helper()
	select {
	case res := <-f.obs.ended:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("no run finished")
		return nil
	}
}

func chainOf(t *testing.T, doc string) *chain.Chain {
	t.Helper()
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const gatedDoc = `{"name":"gated","nodes":[
	{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"wait","kind":"tool","name":"gate"},
	{"node_id":"b","kind":"tool","name":"echo"}],
	"edges":[{"source":"a","target":"wait"},{"source":"wait","target":"b"}]}`

// A started run is recorded, tracked while it executes, heard live by its
// watchers, and untracked before they hear its end.
func TestStartTracksAndEndsRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ch := &store.Chain{ID: "c1", Version: 3, Name: "gated", Doc: chainOf(t, gatedDoc)}
	id, err := f.svc.Start(context.Background(), ch, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := f.svc.subscribe(id)
	if err != nil {
		t.Fatal(err)
	}
	if !f.svc.Active(id) || f.svc.ActiveCount() != 1 || f.svc.Watchers() != 1 {
		t.Fatalf("active %v count %d watchers %d; want the run tracked and watched", f.svc.Active(id), f.svc.ActiveCount(), f.svc.Watchers())
	}
	close(f.gate)
	var live int
	for _, ok := sub.Next(); ok; _, ok = sub.Next() {
		live++
	}
	if !sub.Ended || live == 0 {
		t.Fatalf("watcher heard %d events, ended %v", live, sub.Ended)
	}
	if f.svc.Active(id) {
		t.Fatal("still active after the watchers heard the end")
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("status %s, want completed", res.Status)
	}
	r, err := f.store.GetRunInfo(context.Background(), id)
	if err != nil || r.Kind != store.KindRun || r.ChainID != "c1" || r.ChainVersion != 3 {
		t.Fatalf("recorded run %+v (%v)", r, err)
	}
	if n := len(f.events.all(id)); n < live {
		t.Fatalf("event log has %d events, the watcher heard %d", n, live)
	}
	f.obs.mu.Lock()
	defer f.obs.mu.Unlock()
	if len(f.obs.started) != 1 || f.obs.started[0] != store.KindRun || f.obs.nodes != 3 ||
		f.obs.ops["create_run"] != 1 || f.obs.ops["checkpoint_append"] == 0 {
		t.Fatalf("observer: started %v, %d nodes done, store ops %v", f.obs.started, f.obs.nodes, f.obs.ops)
	}
}

// Cancel stops a running run (it ends cancelled); unknown runs are not
// cancelled.
func TestCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id, err := f.svc.Start(context.Background(), &store.Chain{ID: "c", Name: "gated", Doc: chainOf(t, gatedDoc)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.svc.Cancel("nope") {
		t.Fatal("cancelled a run that does not exist")
	}
	if !f.svc.Cancel(id) {
		t.Fatal("Cancel of a running run returned false")
	}
	if res := f.end(t); res.Status != chain.StatusCancelled {
		t.Fatalf("status %s, want cancelled", res.Status)
	}
}

// Shutdown cancels what runs, waits for it, and refuses new work; Close
// closes the event log once.
func TestShutdownDrainsAndRefuses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ch := &store.Chain{ID: "c", Name: "gated", Doc: chainOf(t, gatedDoc)}
	if _, err := f.svc.Start(context.Background(), ch, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.svc.ActiveCount(); n != 0 {
		t.Fatalf("%d runs active after Shutdown", n)
	}
	if res := f.end(t); res.Status != chain.StatusCancelled {
		t.Fatalf("status %s, want cancelled (resumable)", res.Status)
	}
	before := len(f.store.runs)
	if _, err := f.svc.Start(context.Background(), ch, nil); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Start after Shutdown: %v, want ErrShutdown", err)
	}
	if _, err := f.svc.RunAdHoc(context.Background(), ch.Doc, nil, "a2e", nil); !errors.Is(err, ErrShutdown) {
		t.Fatalf("RunAdHoc after Shutdown: %v, want ErrShutdown", err)
	}
	if _, err := f.svc.Rerun(context.Background(), "x", "a", nil, nil); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Rerun after Shutdown: %v, want ErrShutdown", err)
	}
	if len(f.store.runs) != before { // refused before anything is recorded
		t.Fatalf("%d runs recorded after Shutdown", len(f.store.runs)-before)
	}
	if store.ErrorCode(ErrShutdown) != store.EUNAVAILABLE {
		t.Fatalf("ErrShutdown code %q", store.ErrorCode(ErrShutdown))
	}
	if err := f.svc.Close(); err != nil || !f.events.closed {
		t.Fatalf("Close: %v, event log closed %v", err, f.events.closed)
	}
}

const approvalDoc = `{"name":"approval","nodes":[
	{"node_id":"prep","kind":"tool","name":"echo","input_map":{"x":"input.x"}},
	{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"}},
	{"node_id":"after","kind":"tool","name":"echo","input_map":{"answer":"ask.output"}}],
	"edges":[{"source":"prep","target":"ask"},{"source":"ask","target":"after"}]}`

// A paused run resumes in the background and completes; a second resume of
// the same interrupt is refused with the engine's typed error. A re-run from
// a node starts a new run that names its parent.
func TestResumeAndRerun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	id, err := f.svc.Start(ctx, &store.Chain{ID: "c", Name: "approval", Doc: chainOf(t, approvalDoc)}, map[string]any{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusPaused {
		t.Fatalf("status %s, want paused", res.Status)
	}
	if err := f.svc.Resume(ctx, id, &engine.ResumeValue{Value: "yes"}, nil); err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("resumed: %s, want completed", res.Status)
	}
	var ae *engine.AlreadyResumedError
	if err := f.svc.Resume(ctx, id, &engine.ResumeValue{Value: "again"}, nil); !errors.As(err, &ae) {
		t.Fatalf("second resume: %v, want AlreadyResumedError", err)
	}
	doc, err := f.svc.RunChain(ctx, id)
	if err != nil || doc.Node("after") == nil {
		t.Fatalf("RunChain: %v, %v", doc, err)
	}
	var ce *engine.ChainCheckpointError
	if _, err := f.svc.RunChain(ctx, "nope"); !errors.As(err, &ce) {
		t.Fatalf("RunChain of an unknown run: %v", err)
	}
	newID, err := f.svc.Rerun(ctx, id, "after", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("re-run: %s, want completed", res.Status)
	}
	r, _ := f.store.GetRunInfo(ctx, newID)
	if r.ParentRunID != id || r.Kind != store.KindRerun {
		t.Fatalf("re-run recorded as %+v", r)
	}
	if _, err := f.svc.Rerun(ctx, "nope", "after", nil, nil); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("re-run of an unknown run: %v", err)
	}
	f.obs.mu.Lock()
	defer f.obs.mu.Unlock()
	if want := []string{store.KindRun, store.KindResume, store.KindRerun}; len(f.obs.started) != 3 ||
		f.obs.started[0] != want[0] || f.obs.started[1] != want[1] || f.obs.started[2] != want[2] {
		t.Fatalf("started kinds %v, want %v", f.obs.started, want)
	}
	if f.obs.ops["event_flush"] != 2 || f.obs.ops["checkpoint_claim"] == 0 {
		t.Fatalf("store ops %v", f.obs.ops)
	}
}

// RunAdHoc blocks until the run stops, feeds the caller's sink, and stops
// when the caller goes away.
func TestRunAdHoc(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc := chainOf(t, approvalDoc)
	var mine memEvents
	res, err := f.svc.RunAdHoc(context.Background(), doc, map[string]any{"x": 2}, "a2e", &mine)
	if err != nil || res.Status != chain.StatusPaused {
		t.Fatalf("ad hoc run: %v, %v", res, err)
	}
	if len(mine.all(res.RunID)) == 0 || f.svc.Active(res.RunID) {
		t.Fatalf("caller's sink heard %d events; active %v", len(mine.all(res.RunID)), f.svc.Active(res.RunID))
	}
	f.end(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *engine.Result)
	go func() {
		res, _ := f.svc.RunAdHoc(ctx, chainOf(t, gatedDoc), nil, "a2e", nil)
		done <- res
	}()
	<-f.inGate
	cancel()
	if res := <-done; res == nil || res.Status != chain.StatusCancelled {
		t.Fatalf("caller left: %v, want cancelled", res)
	}
}

func TestNewNeedsItsParts(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

// The run door refuses a chain with validation errors before anything is
// recorded, whichever call starts the run, with the validator's issues.
func TestRunDoorRefusesInvalidChains(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	doc := chainOf(t, `{"name":"broken","nodes":[{"node_id":"a","kind":"tool","name":"no_such_tool"}]}`)
	ch := &store.Chain{ID: "c1", Version: 1, Name: "broken", Doc: doc}
	check := func(what string, err error) {
		t.Helper()
		var invalid *InvalidChainError
		if !errors.As(err, &invalid) || !chain.HasErrors(invalid.Issues) || invalid.Code() != chain.CodeInvalid {
			t.Errorf("%s: %v, want an *InvalidChainError", what, err)
		}
	}
	_, err := f.svc.Start(ctx, ch, nil)
	check("Start", err)
	_, err = f.svc.StartTriggered(ctx, ch, nil, Trigger{Kind: store.TriggerWebhook, ID: "h"})
	check("StartTriggered", err)
	_, err = f.svc.RunNode(ctx, ch, "a", engine.NodeRunSource{})
	check("RunNode", err)
	_, err = f.svc.RunAdHoc(ctx, doc, nil, store.KindA2E, nil)
	check("RunAdHoc", err)
	check("CheckRun", f.svc.CheckRun(ctx, ch))
	f.store.mu.Lock()
	n := len(f.store.runs)
	f.store.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d runs recorded", n)
	}
	if err := f.svc.CheckRun(ctx, &store.Chain{ID: "c1", Doc: chainOf(t, gatedDoc)}); err != nil {
		t.Fatalf("a valid chain: %v", err)
	}
}
