package runs

import (
	"sync"

	"github.com/chainstudio/studio/engine"
)

// LiveEvent is one event as the hub hands it to every subscriber of its run:
// shared and read-only, with its wire encoding computed once for all of them.
type LiveEvent struct {
	engine.Event
	once sync.Once
	enc  []byte
	err  error
}

// Encoded returns enc(&e.Event), computed on first use and shared by every
// watcher after that. All callers must pass the same encoder (a transport
// has one wire format).
func (e *LiveEvent) Encoded(enc func(*engine.Event) ([]byte, error)) ([]byte, error) {
	e.once.Do(func() { e.enc, e.err = enc(&e.Event) })
	return e.enc, e.err
}

// Hub delivers each run's live events to every subscriber, in order. It is
// an engine.EventSink. A subscriber that falls behind is cut loose (its
// channel is closed with Dropped set) instead of slowing the run or the other
// watchers; it catches up from the store when it reconnects.
type Hub struct {
	mu     sync.Mutex
	topics map[string]map[*Subscription]struct{}
	buffer int
}

// Subscription is one watcher of one run.
type Subscription struct {
	RunID string
	C     <-chan *LiveEvent
	c     chan *LiveEvent
	// Set before C is closed: Dropped when the watcher fell behind, Ended
	// when the run finished (or paused).
	Dropped bool
	Ended   bool
}

// NewHub returns a hub whose subscribers may fall `buffer` events behind
// (1024 when buffer <= 0).
func NewHub(buffer int) *Hub {
	if buffer <= 0 {
		buffer = 1024
	}
	return &Hub{topics: map[string]map[*Subscription]struct{}{}, buffer: buffer}
}

// Subscribe starts receiving a run's events from now on.
func (h *Hub) Subscribe(runID string) *Subscription {
	c := make(chan *LiveEvent, h.buffer)
	s := &Subscription{RunID: runID, C: c, c: c}
	h.mu.Lock()
	t := h.topics[runID]
	if t == nil {
		t = map[*Subscription]struct{}{}
		h.topics[runID] = t
	}
	t[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Unsubscribe stops a subscription (safe to call more than once).
func (h *Hub) Unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[s.RunID]; t != nil {
		if _, ok := t[s]; ok {
			delete(t, s)
			close(s.c)
		}
		if len(t) == 0 {
			delete(h.topics, s.RunID)
		}
	}
}

// Emit implements engine.EventSink. It never blocks.
func (h *Hub) Emit(ev engine.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[ev.RunID]
	if len(t) == 0 {
		return
	}
	le := &LiveEvent{Event: ev}
	for s := range t {
		select {
		case s.c <- le:
		default:
			s.Dropped = true
			delete(t, s)
			close(s.c)
		}
	}
	if len(t) == 0 {
		delete(h.topics, ev.RunID)
	}
}

// End tells a run's subscribers that the run stopped (finished or paused):
// their channels close after the events already queued.
func (h *Hub) End(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.topics[runID] {
		s.Ended = true
		close(s.c)
	}
	delete(h.topics, runID)
}

// Watchers returns the number of live subscriptions.
func (h *Hub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, t := range h.topics {
		n += len(t)
	}
	return n
}
