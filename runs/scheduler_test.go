package runs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// trigStore is the scheduler's store in memory, with the database's rule:
// a (schedule, tick) firing is recorded once, and the run of a firing is
// recorded with it or not at all. Starting a run records it running.
type trigStore struct {
	mu        sync.Mutex
	schedules []store.Schedule
	firings   map[string]store.Firing // schedule id + tick
	runs      map[string]store.Run
	n         int
}

func newTrigStore(s ...store.Schedule) *trigStore {
	return &trigStore{schedules: s, firings: map[string]store.Firing{}, runs: map[string]store.Run{}}
}

func (m *trigStore) ListSchedules(_ context.Context, _ string) ([]store.Schedule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]store.Schedule(nil), m.schedules...)
	for i := range out {
		for _, f := range m.firings {
			if f.TriggerID == out[i].ID && f.Tick.After(out[i].LastTick) {
				out[i].LastTick = f.Tick
			}
		}
	}
	return out, nil
}

func (m *trigStore) GetPublishedChain(_ context.Context, id string) (*store.Chain, error) {
	return &store.Chain{ID: id, Name: id, Version: 1, Doc: &chain.Chain{Name: id}}, nil
}

func (m *trigStore) record(f store.Firing) error {
	k := f.TriggerID + f.Tick.String()
	if _, ok := m.firings[k]; ok {
		return store.ErrAlreadyFired
	}
	m.firings[k] = f
	return nil
}

func (m *trigStore) RecordFiring(_ context.Context, f store.Firing) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.record(f)
}

func (m *trigStore) ChainBusy(_ context.Context, chainID string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.ChainID == chainID && r.Status == chain.StatusRunning {
			return true, nil
		}
	}
	return false, nil
}

func (m *trigStore) StartTriggered(_ context.Context, ch *store.Chain, input map[string]any, t Trigger) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	id := fmt.Sprintf("run%d", m.n)
	if err := m.record(store.Firing{TriggerID: t.ID, Tick: t.Tick, RunID: id, Outcome: store.FiringStarted}); err != nil {
		return "", err
	}
	m.runs[id] = store.Run{ID: id, ChainID: ch.ID, Input: input, Status: chain.StatusRunning, TriggerKind: t.Kind, TriggerID: t.ID, TriggerTick: t.Tick}
	return id, nil
}

// finishAll ends every run (the chain is free again).
func (m *trigStore) finishAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, r := range m.runs {
		r.Status = chain.StatusCompleted
		m.runs[id] = r
	}
}

// firing returns what was recorded for a tick.
func (m *trigStore) firing(id string, tick time.Time) (store.Firing, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.firings[id+tick.String()]
	return f, ok
}

func (m *trigStore) runCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs)
}

// fakeClock is the scheduler's clock in tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

var t0 = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC) // a Monday

func schedAt(t *testing.T, st *trigStore, clock *fakeClock) *Scheduler {
	t.Helper()
	sc, err := NewScheduler(SchedulerOptions{Store: st, Starter: st, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func fireAt(t *testing.T, sc *Scheduler, clock *fakeClock, at time.Time) {
	t.Helper()
	clock.Set(at)
	if _, err := sc.FireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func minutely(id, overlap, catchUp string) store.Schedule {
	return store.Schedule{ID: id, ChainID: "c-" + id, Cron: "* * * * *", Input: map[string]any{"from": id}, Overlap: overlap, CatchUp: catchUp,
		Enabled: true, Created: t0.Add(-30 * time.Second), Updated: t0.Add(-30 * time.Second)}
}

// A schedule fires each tick once, on time, with its input and the tick
// recorded; the next tick is when the loop wakes.
func TestSchedulerFiresOnAFakeClock(t *testing.T) {
	t.Parallel()
	st := newTrigStore(minutely("s", store.OverlapAllow, store.CatchUpSkip))
	clock := &fakeClock{}
	sc := schedAt(t, st, clock)
	fireAt(t, sc, clock, t0.Add(-time.Second))
	if st.runCount() != 0 {
		t.Fatal("fired before the tick")
	}
	clock.Set(t0.Add(2 * time.Second))
	next, err := sc.FireDue(context.Background())
	if err != nil || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next tick %v %v", next, err)
	}
	f, ok := st.firing("s", t0)
	if !ok || f.Outcome != store.FiringStarted || st.runs[f.RunID].Input["from"] != "s" || st.runs[f.RunID].TriggerKind != store.TriggerSchedule {
		t.Fatalf("tick %v: %+v %v", t0, f, st.runs)
	}
	fireAt(t, sc, clock, t0.Add(30*time.Second)) // same tick again: nothing
	fireAt(t, sc, clock, t0.Add(time.Minute+time.Second))
	if st.runCount() != 2 {
		t.Fatalf("%d runs after two ticks", st.runCount())
	}
}

// Overlap: skip records the tick as skipped, allow starts a second run,
// queue waits for the chain's run to end and then starts (one tick at most
// waits; an older waiting tick is recorded as skipped).
func TestSchedulerOverlapPolicies(t *testing.T) {
	t.Parallel()
	st := newTrigStore(minutely("skip", store.OverlapSkip, store.CatchUpSkip), minutely("allow", store.OverlapAllow, store.CatchUpSkip),
		minutely("queue", store.OverlapQueue, store.CatchUpSkip))
	clock := &fakeClock{}
	sc := schedAt(t, st, clock)
	fireAt(t, sc, clock, t0.Add(time.Second)) // three runs start, and keep running
	if st.runCount() != 3 {
		t.Fatalf("%d runs at the first tick", st.runCount())
	}
	t1 := t0.Add(time.Minute)
	fireAt(t, sc, clock, t1.Add(time.Second))
	if f, _ := st.firing("skip", t1); f.Outcome != store.FiringSkipped || f.RunID != "" {
		t.Errorf("skip policy, busy chain: %+v", f)
	}
	if f, _ := st.firing("allow", t1); f.Outcome != store.FiringStarted {
		t.Errorf("allow policy, busy chain: %+v", f)
	}
	if _, ok := st.firing("queue", t1); ok {
		t.Errorf("queue policy fired while the chain is busy")
	}
	if !sc.waiting() {
		t.Fatal("no tick waiting")
	}
	t2 := t1.Add(time.Minute)
	fireAt(t, sc, clock, t2.Add(time.Second)) // still busy: t2 takes t1's place
	if f, _ := st.firing("queue", t1); f.Outcome != store.FiringSkipped {
		t.Errorf("the replaced waiting tick: %+v", f)
	}
	st.finishAll()
	fireAt(t, sc, clock, t2.Add(5*time.Second)) // free: the waiting tick starts
	if f, _ := st.firing("queue", t2); f.Outcome != store.FiringStarted || st.runs[f.RunID].ChainID != "c-queue" {
		t.Errorf("the waiting tick once the chain is free: %+v", f)
	}
	if sc.waiting() {
		t.Error("a tick still waits")
	}
}

// Catch-up after downtime: skip records the missed ticks (one row, the
// latest) and starts nothing; once starts one run for them; a tick due now
// fires either way.
func TestSchedulerCatchUp(t *testing.T) {
	t.Parallel()
	hourly := func(id, catchUp string) store.Schedule {
		s := minutely(id, store.OverlapAllow, catchUp)
		s.Cron = "0 * * * *"
		return s
	}
	st := newTrigStore(hourly("skip", store.CatchUpSkip), hourly("once", store.CatchUpOnce))
	clock := &fakeClock{}
	sc := schedAt(t, st, clock)
	fireAt(t, sc, clock, t0.Add(time.Second)) // 10:00 fires for both
	// Down from 10:00 to 13:30: 11, 12 and 13 o'clock were missed.
	fireAt(t, sc, clock, t0.Add(3*time.Hour+30*time.Minute))
	t13 := t0.Add(3 * time.Hour)
	if f, _ := st.firing("skip", t13); f.Outcome != store.FiringMissed || f.RunID != "" || f.Message == "" {
		t.Errorf("catch-up skip: %+v", f)
	}
	if f, _ := st.firing("once", t13); f.Outcome != store.FiringStarted || f.RunID == "" {
		t.Errorf("catch-up once: %+v", f)
	}
	for _, h := range []int{1, 2} {
		if _, ok := st.firing("once", t0.Add(time.Duration(h)*time.Hour)); ok {
			t.Errorf("catch-up once ran the %d o'clock tick too", 10+h)
		}
	}
	if st.runCount() != 3 { // 10:00 twice, one catch-up
		t.Fatalf("%d runs", st.runCount())
	}
	// Down again until 17:00:10: 14–16 missed, 17 on time.
	t17 := t0.Add(7 * time.Hour)
	fireAt(t, sc, clock, t17.Add(10*time.Second))
	if f, _ := st.firing("skip", t17); f.Outcome != store.FiringStarted {
		t.Errorf("on-time tick after downtime, catch-up skip: %+v", f)
	}
	if f, _ := st.firing("skip", t17.Add(-time.Hour)); f.Outcome != store.FiringMissed {
		t.Errorf("16:00 under catch-up skip: %+v", f)
	}
	if f, _ := st.firing("once", t17.Add(-time.Hour)); f.Outcome != store.FiringStarted {
		t.Errorf("16:00 under catch-up once: %+v", f)
	}
	if st.runCount() != 6 {
		t.Fatalf("%d runs, want 6", st.runCount())
	}
}

// Three schedulers on one store (three studio processes on one database)
// fire each tick once.
func TestSchedulersShareTicks(t *testing.T) {
	t.Parallel()
	st := newTrigStore(minutely("s", store.OverlapAllow, store.CatchUpSkip))
	clock := &fakeClock{}
	var scs []*Scheduler
	for range 3 {
		scs = append(scs, schedAt(t, st, clock))
	}
	for m := range 5 {
		clock.Set(t0.Add(time.Duration(m)*time.Minute + time.Second))
		var wg sync.WaitGroup
		for _, sc := range scs {
			wg.Add(1)
			go func() { defer wg.Done(); sc.FireDue(context.Background()) }()
		}
		wg.Wait()
	}
	if st.runCount() != 5 {
		t.Fatalf("%d runs for 5 ticks and 3 schedulers", st.runCount())
	}
}

// A tick waiting under overlap "queue" whose schedule changes to another
// policy is recorded as skipped, not lost silently.
func TestSchedulerQueuedTickPolicyChanged(t *testing.T) {
	t.Parallel()
	st := newTrigStore(minutely("q", store.OverlapQueue, store.CatchUpSkip))
	clock := &fakeClock{}
	sc := schedAt(t, st, clock)
	fireAt(t, sc, clock, t0.Add(time.Second))
	t1 := t0.Add(time.Minute)
	fireAt(t, sc, clock, t1.Add(time.Second)) // busy: t1 waits
	st.mu.Lock()
	st.schedules[0].Overlap = store.OverlapSkip
	st.mu.Unlock()
	fireAt(t, sc, clock, t1.Add(2*time.Second))
	if f, ok := st.firing("q", t1); !ok || f.Outcome != store.FiringSkipped || f.Message == "" {
		t.Fatalf("the waiting tick after the policy changed: %+v %v", f, ok)
	}
	if sc.waiting() {
		t.Fatal("a tick still waits")
	}
}

// invalidChainStore is a trigStore whose chain has validation errors (an
// unknown tool), started by a real Service.
type invalidChainStore struct{ *trigStore }

func (m invalidChainStore) GetPublishedChain(_ context.Context, id string) (*store.Chain, error) {
	doc := `{"name":"broken","nodes":[{"node_id":"a","kind":"tool","name":"no_such_tool"}]}`
	c, err := chain.Decode([]byte(doc), chain.Limits{})
	return &store.Chain{ID: id, Name: "broken", Version: 1, Doc: c}, err
}

// A schedule on a chain with validation errors makes no run: the run
// service refuses it before anything is recorded, and the tick is recorded
// failed with the chain's errors.
func TestScheduleOnInvalidChainMakesNoRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	st := invalidChainStore{newTrigStore(minutely("s", store.OverlapAllow, store.CatchUpSkip))}
	clock := &fakeClock{}
	sc, err := NewScheduler(SchedulerOptions{Store: st, Starter: f.svc, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	fireAt(t, sc, clock, t0.Add(time.Second))
	f.store.mu.Lock()
	n := len(f.store.runs)
	f.store.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d runs recorded for an invalid chain", n)
	}
	fi, ok := st.firing("s", t0)
	if !ok || fi.Outcome != store.FiringFailed || fi.RunID != "" || !strings.Contains(fi.Message, "no_such_tool") {
		t.Fatalf("tick %v: %+v (recorded %v)", t0, fi, ok)
	}
}
