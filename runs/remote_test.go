package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// remoteStore is memStore read as another process's events: EventsAfter
// takes its snapshot at once, then waits for release on its first call,
// like a read whose snapshot predates a batch committed meanwhile.
type remoteStore struct {
	*memStore
	calls   int
	reading chan struct{}
	release chan struct{}
}

func (r *remoteStore) GetVersion(context.Context, string, int) (*store.ChainVersion, error) {
	return nil, store.Errorf(store.ENOTFOUND, "no versions here")
}

func (r *remoteStore) EventsAfter(_ context.Context, runID string, after int64, limit int) ([]engine.Event, error) {
	var out []engine.Event
	for _, ev := range r.events.all(runID) {
		if ev.Seq > after && len(out) < limit {
			out = append(out, ev)
		}
	}
	r.calls++
	if r.calls == 1 {
		r.reading <- struct{}{}
		<-r.release
	}
	return out, nil
}

// A watching process executes nothing: the lease calls are never made
// (the distributed executor's Store must still offer them).
func (*remoteStore) TakeRun(context.Context, string, string, time.Duration, func()) (*store.RunLease, error) {
	return nil, errors.New("not here")
}
func (*remoteStore) RenewRun(context.Context, string, int64, time.Duration) (bool, error) {
	return false, errors.New("not here")
}
func (*remoteStore) ReleaseRun(context.Context, string, int64) error { return errors.New("not here") }

// noDispatch is a Dispatcher for a process that only watches.
type noDispatch struct{}

func (noDispatch) Create(context.Context, store.Run, Task) error { return errors.New("not here") }
func (noDispatch) Claim(context.Context, string, engine.ResumeRecord) (string, error) {
	return "", errors.New("not here")
}
func (noDispatch) Cancel(context.Context, string) (bool, error) { return false, errors.New("not here") }

// A hint (another process stored events) that arrives while the reader of
// a remote run is reading wakes it again at once: the batch committed
// after that read's snapshot reaches the watcher without waiting for the
// poll (here an hour), which used to lose the wake-up.
func TestRemoteWatchHintDuringRead(t *testing.T) {
	hints := make(chan struct{})
	var rs *remoteStore
	var d *Distributed
	f := newFixtureWith(t, func(o *Options) {
		rs = &remoteStore{memStore: o.Store.(*memStore), reading: make(chan struct{}), release: make(chan struct{})}
		d = NewDistributed(DistributedOptions{Dispatcher: noDispatch{}, Store: rs, RemotePoll: time.Hour, EventHints: hints})
		o.Store, o.Executor = rs, d
	})
	f.store.runs["r1"] = store.Run{ID: "r1", Status: chain.StatusRunning}
	sub, err := f.svc.subscribe("r1")
	if err != nil {
		t.Fatal(err)
	}
	defer f.svc.unsubscribe(sub)
	// Wake the reader (its goroutine may not wait yet: hint until it
	// reads); it reads nothing yet.
	for reading := false; !reading; {
		select {
		case <-rs.reading:
			reading = true
		case hints <- struct{}{}:
			time.Sleep(time.Millisecond)
		}
	}
	// Meanwhile the other process commits an event and notifies.
	before := d.hint()
	f.events.Emit(engine.Event{RunID: "r1", Seq: 1, NodeID: "a", Phase: engine.PhaseStart, Time: time.Now()})
	hints <- struct{}{}
	for d.hint() == before {
		time.Sleep(time.Millisecond) // relayed
	}
	close(rs.release)
	got := make(chan *LiveEvent, 1)
	go func() {
		if ev, ok := sub.Next(); ok {
			got <- ev
		}
	}()
	select {
	case ev := <-got:
		if ev.Seq != 1 {
			t.Fatalf("got event %d, want 1", ev.Seq)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event committed during a read never reached the watcher: the hint was lost")
	}
}
