package runs

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// leasedStore is memStore with versions, remote reads and a lease whose
// renewals answer what the test says.
type leasedStore struct {
	*memStore
	doc *chain.Chain

	mu       sync.Mutex
	taken    int
	released []int64
	renew    func(n int) (bool, error) // n: the renewal's number, from 1
	renewals int
	none     bool // TakeRun finds nothing to execute
}

func (l *leasedStore) GetVersion(_ context.Context, id string, v int) (*store.ChainVersion, error) {
	return &store.ChainVersion{ChainID: id, Version: v, Doc: l.doc}, nil
}

func (l *leasedStore) EventsAfter(_ context.Context, runID string, after int64, _ int) ([]engine.Event, error) {
	return nil, nil
}

func (l *leasedStore) TakeRun(_ context.Context, runID, owner string, ttl time.Duration, lost func()) (*store.RunLease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.none {
		return nil, nil
	}
	l.taken++
	return &store.RunLease{Epoch: int64(l.taken)}, nil
}

func (l *leasedStore) RenewRun(_ context.Context, runID string, epoch int64, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	l.renewals++
	n := l.renewals
	l.mu.Unlock()
	return l.renew(n)
}

func (l *leasedStore) ReleaseRun(_ context.Context, runID string, epoch int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = append(l.released, epoch)
	return nil
}

// nopDispatcher: Execute is called directly.
type nopDispatcher struct{}

func (nopDispatcher) Create(context.Context, store.Run, Task) error { return nil }
func (nopDispatcher) Claim(context.Context, string, engine.ResumeRecord) (string, error) {
	return "", nil
}
func (nopDispatcher) Cancel(context.Context, string) (bool, error) { return false, nil }

// leasedFixture is a service on the distributed executor over a
// leasedStore; the test calls the executor's Execute as a worker would.
func leasedFixture(t *testing.T, renew func(n int) (bool, error)) (*fixture, *leasedStore, *Distributed) {
	t.Helper()
	var ls *leasedStore
	var d *Distributed
	f := newFixtureWith(t, func(o *Options) {
		ls = &leasedStore{memStore: o.Store.(*memStore), doc: chainOf(t, gatedDoc), renew: renew}
		o.Store = ls
		d = NewDistributed(DistributedOptions{Dispatcher: nopDispatcher{}, Store: ls,
			LeaseTTL: 300 * time.Millisecond}) // a heartbeat every 100 ms
		o.Executor = d
	})
	return f, ls, d
}

func executeAsync(d *Distributed, id string) chan error {
	done := make(chan error, 1)
	go func() {
		done <- d.Execute(context.Background(), Task{RunID: id, Kind: store.KindRun, ChainID: "c", ChainVersion: 1})
	}()
	return done
}

func waitErr(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return")
		return nil
	}
}

// A heartbeat refused (another process took the run over) cancels the run
// here with ErrLeaseLost; Execute reports no failure (the new owner goes
// on), and the lease is released.
func TestLostLeaseCancelsRunHere(t *testing.T) {
	t.Parallel()
	f, ls, d := leasedFixture(t, func(n int) (bool, error) {
		if n >= 2 {
			return false, &store.LeaseLostError{RunID: "r1", Epoch: 1}
		}
		return false, nil
	})
	f.store.CreateRun(context.Background(), store.Run{ID: "r1", Status: chain.StatusQueued})
	done := executeAsync(d, "r1")
	<-f.inGate
	if !f.svc.Active("r1") {
		t.Fatal("the run is not active while it executes")
	}
	if err := waitErr(t, done); err != nil {
		t.Fatalf("Execute after a lost lease: %v, want nil (not a failure of the run)", err)
	}
	res := f.end(t)
	if res.Status != chain.StatusCancelled || res.Error == nil || !strings.Contains(res.Error.Message, ErrLeaseLost.Error()) {
		t.Fatalf("the run here ended %s (%v), want cancelled with the lost lease", res.Status, res.Error)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.renewals < 2 || len(ls.released) != 1 || ls.released[0] != 1 {
		t.Fatalf("renewals %d, released %v", ls.renewals, ls.released)
	}
}

// A cancel flag read by the heartbeat cancels the run (notifications
// lost); renewals that fail for a whole TTL stop it as a lost lease.
func TestHeartbeatCancelAndSilence(t *testing.T) {
	t.Parallel()
	f, _, d := leasedFixture(t, func(n int) (bool, error) { return n >= 2, nil })
	f.store.CreateRun(context.Background(), store.Run{ID: "r1", Status: chain.StatusQueued})
	start := time.Now()
	done := executeAsync(d, "r1")
	<-f.inGate
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCancelled || !strings.Contains(res.Error.Message, errCancelledByUser.Error()) {
		t.Fatalf("cancel flag: the run ended %s (%v)", res.Status, res.Error)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the cancel flag took %v to land", took)
	}

	g, _, gd := leasedFixture(t, func(int) (bool, error) { return false, errors.New("connection refused") })
	g.store.CreateRun(context.Background(), store.Run{ID: "r2", Status: chain.StatusQueued})
	done = executeAsync(gd, "r2")
	<-g.inGate
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	if res := g.end(t); res.Status != chain.StatusCancelled || !strings.Contains(res.Error.Message, ErrLeaseLost.Error()) {
		t.Fatalf("renewals failing for a TTL: the run ended %s (%v), want cancelled with the lost lease", res.Status, res.Error)
	}
}

// A run that is no longer queued or running (cancelled before a worker
// took it) is not executed.
func TestTakeFindsNothing(t *testing.T) {
	t.Parallel()
	f, ls, d := leasedFixture(t, func(int) (bool, error) { return false, nil })
	ls.none = true
	if err := waitErr(t, executeAsync(d, "gone")); err != nil {
		t.Fatal(err)
	}
	if f.svc.Active("gone") || len(f.obs.started) != 0 {
		t.Fatal("a run with nothing to take was executed")
	}
}

// A takeover job handed to the process where the run still executes (it
// lost the lease but has not stopped yet) is refused with ErrStillHere,
// before anything is taken, so the old execution never gets the new epoch.
func TestExecuteRefusesARunStillHere(t *testing.T) {
	t.Parallel()
	f, ls, d := leasedFixture(t, func(int) (bool, error) { return false, nil })
	f.store.CreateRun(context.Background(), store.Run{ID: "r1", Status: chain.StatusQueued})
	done := executeAsync(d, "r1")
	<-f.inGate
	err := d.Execute(context.Background(), Task{RunID: "r1", Kind: store.KindRun, ChainID: "c", ChainVersion: 1, Takeover: true})
	if !errors.Is(err, ErrStillHere) {
		t.Fatalf("a second execution here: %v, want ErrStillHere", err)
	}
	ls.mu.Lock()
	taken := ls.taken
	ls.mu.Unlock()
	if taken != 1 {
		t.Fatalf("the run was taken %d times, want once", taken)
	}
	close(f.gate)
	if err := waitErr(t, done); err != nil {
		t.Fatal(err)
	}
	if res := f.end(t); res.Status != chain.StatusCompleted {
		t.Fatalf("the first execution ended %s", res.Status)
	}
}

// A heartbeat slower than half the TTL would let the lease pass between
// two renewals: refused when the service is built.
func TestHeartbeatSlowerThanHalfTheTTLRefused(t *testing.T) {
	t.Parallel()
	st := &leasedStore{memStore: &memStore{MemoryCheckpointer: engine.NewMemoryCheckpointer(), runs: map[string]store.Run{}, events: &memEvents{}}}
	d := NewDistributed(DistributedOptions{Dispatcher: nopDispatcher{}, Store: st, LeaseTTL: 300 * time.Millisecond, LeaseHeartbeat: 200 * time.Millisecond})
	_, err := New(Options{Store: st, Registry: engine.NewRegistry(), Executor: d})
	if err == nil || !strings.Contains(err.Error(), "200ms") || !strings.Contains(err.Error(), "300ms") {
		t.Fatalf("a 200ms heartbeat for a 300ms lease: %v, want an error naming both", err)
	}
}

// An executor serves one service: a second service on it is refused, so
// two services never share one's tracking or its leases.
func TestExecutorServesOneService(t *testing.T) {
	t.Parallel()
	st := &leasedStore{memStore: &memStore{MemoryCheckpointer: engine.NewMemoryCheckpointer(), runs: map[string]store.Run{}, events: &memEvents{}}}
	for name, ex := range map[string]Executor{
		"embedded":    Embedded(),
		"distributed": NewDistributed(DistributedOptions{Dispatcher: nopDispatcher{}, Store: st}),
	} {
		first, err := New(Options{Store: st, Registry: engine.NewRegistry(), Executor: ex})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { first.Close() })
		if second, err := New(Options{Store: st, Registry: engine.NewRegistry(), Executor: ex}); err == nil {
			second.Close()
			t.Fatalf("%s: a second service on one executor was built", name)
		}
	}
}
