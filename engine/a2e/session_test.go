package a2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// sessionRecorder collects what a Session sends.
type sessionRecorder struct {
	mu   sync.Mutex
	msgs []any
}

func (r *sessionRecorder) send(m any) {
	r.mu.Lock()
	r.msgs = append(r.msgs, m)
	r.mu.Unlock()
}

func (r *sessionRecorder) responses() map[string]*WireError {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]*WireError{}
	for _, m := range r.msgs {
		if resp, ok := m.(ResponseMessage); ok {
			out[resp.ReqID] = resp.Error
		}
	}
	return out
}

// A session's door never waits behind work: with every slot running and
// the queue full, Handle returns at once, refusing the next chain/req with
// host_busy (the HTTP transport), and answers a ping; every Done is called
// once its message is answered.
func TestSessionQueueRefusesPastItsBound(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rec := &sessionRecorder{}
	s := NewSession(context.Background(), SessionOptions{MaxParallel: 1, MaxQueued: 2, Send: rec.send,
		Run: func(ctx context.Context, req *chain.Request, c *chain.Chain, sink engine.EventSink) (*engine.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &engine.Result{Status: chain.StatusCompleted}, nil
		}})
	var mu sync.Mutex
	done := map[string]int{}
	handle := func(msg string) time.Duration {
		var env struct{ ID string }
		_ = json.Unmarshal([]byte(msg), &env)
		start := time.Now()
		s.HandleReply(context.Background(), []byte(msg), Reply{Done: func() { mu.Lock(); done[env.ID]++; mu.Unlock() }})
		return time.Since(start)
	}
	req := func(id string) string {
		return fmt.Sprintf(`{"type":"chain/req","id":%q,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, id)
	}
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		if d := handle(req(id)); d > time.Second {
			t.Fatalf("Handle of %s took %v", id, d)
		}
	}
	if n, _ := s.Queued(); n != 2 {
		t.Fatalf("%d waiting, want 2", n)
	}
	if e := rec.responses()["r4"]; e == nil || e.Code != "host_busy" {
		t.Fatalf("r4 past the queue: %+v, want host_busy", e)
	}
	if d := handle(`{"type":"ping","id":"p"}`); d > time.Second {
		t.Fatalf("ping took %v", d)
	}
	close(release)
	s.Drain(10 * time.Second)
	got := rec.responses()
	for _, id := range []string{"r1", "r2", "r3"} {
		if e, ok := got[id]; !ok || e != nil {
			t.Fatalf("%s: answered %v, error %+v", id, ok, e)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"r1", "r2", "r3", "r4", "p"} {
		if done[id] != 1 {
			t.Fatalf("Done of %s called %d times", id, done[id])
		}
	}
}

// With WaitForRoom (stdio), a chain/req past the queue's bound waits for
// room instead of being refused, up to Handle's ctx.
func TestSessionWaitForRoom(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rec := &sessionRecorder{}
	s := NewSession(context.Background(), SessionOptions{MaxParallel: 1, MaxQueued: 1, WaitForRoom: true, Send: rec.send,
		Run: func(ctx context.Context, req *chain.Request, c *chain.Chain, sink engine.EventSink) (*engine.Result, error) {
			<-release
			return &engine.Result{Status: chain.StatusCompleted}, nil
		}})
	req := func(id string) []byte {
		return []byte(fmt.Sprintf(`{"type":"chain/req","id":%q,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, id))
	}
	s.Handle(context.Background(), req("r1"))
	s.Handle(context.Background(), req("r2"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	s.Handle(ctx, req("r3"))
	cancel()
	if e := rec.responses()["r3"]; e == nil || e.Code != "host_busy" {
		t.Fatalf("r3 after its ctx ended: %+v, want host_busy", e)
	}
	// r4 is taken only once r2 leaves the queue, after the release.
	var released atomic.Bool
	early := make(chan bool, 1)
	go func() { s.Handle(context.Background(), req("r4")); early <- !released.Load() }()
	released.Store(true)
	close(release)
	if <-early {
		t.Fatal("r4 was taken with the queue full")
	}
	s.Drain(10 * time.Second)
	got := rec.responses()
	for _, id := range []string{"r1", "r2", "r4"} {
		if e, ok := got[id]; !ok || e != nil {
			t.Fatalf("%s: answered %v, error %+v", id, ok, e)
		}
	}
}
