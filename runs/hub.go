package runs

import (
	"fmt"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
)

// LiveEvent is one event as the hub hands it to every subscriber of its run:
// shared and read-only, with each of its wire encodings computed once for
// all of them.
type LiveEvent struct {
	engine.Event
	once sync.Once
	enc  []byte
	err  error
	// more are the other encodings (EncodedAs), by name: few, so a list.
	mu   sync.Mutex
	more []*namedEncoding
}

type namedEncoding struct {
	name string
	once sync.Once
	enc  []byte
	err  error
}

// Encoded returns enc(&e.Event), computed on first use and shared by every
// watcher after that. All callers must pass the same encoder: the API's
// wire format (other formats use EncodedAs).
func (e *LiveEvent) Encoded(enc func(*engine.Event) ([]byte, error)) ([]byte, error) {
	e.once.Do(func() { e.enc, e.err = enc(&e.Event) })
	return e.enc, e.err
}

// EncodedAs is Encoded for the encoding named name: each name's encoding is
// computed once and shared by the watchers that ask for it. Callers that
// pass the same name must pass encoders that give the same bytes for the
// run.
func (e *LiveEvent) EncodedAs(name string, enc func(*engine.Event) ([]byte, error)) ([]byte, error) {
	e.mu.Lock()
	var ne *namedEncoding
	for _, x := range e.more {
		if x.name == name {
			ne = x
			break
		}
	}
	if ne == nil {
		ne = &namedEncoding{name: name}
		e.more = append(e.more, ne)
	}
	e.mu.Unlock()
	ne.once.Do(func() { ne.enc, ne.err = enc(&e.Event) })
	return ne.enc, ne.err
}

// Hub delivers each run's live events to every subscriber, in order. It is
// an engine.EventSink. A subscriber that falls behind is cut loose (C is
// closed with Dropped set) instead of slowing the run or the other
// watchers; it catches up from the store when it reconnects. A watcher's
// buffer grows only as events wait in it: an idle watcher costs a few
// hundred bytes, not a channel of `buffer` slots.
type Hub struct {
	mu        sync.Mutex
	topics    map[string]map[*Subscription]struct{}
	n         int // subscriptions
	buffer    int
	maxTotal  int
	maxPerRun int
}

// Subscription is one watcher of one run. C receives a signal when events
// are waiting (take them with Take) and is closed when the subscription
// ends; the events queued before that are still there to Take.
type Subscription struct {
	RunID string
	C     <-chan struct{}
	c     chan struct{}
	mu    sync.Mutex
	queue []*LiveEvent
	// Set before C is closed: Dropped when the watcher fell behind, Ended
	// when the run finished (or paused).
	Dropped bool
	Ended   bool
}

// Take appends the waiting events to dst, oldest first, and empties the
// subscription's queue.
func (s *Subscription) Take(dst []*LiveEvent) []*LiveEvent {
	s.mu.Lock()
	dst = append(dst, s.queue...)
	if cap(s.queue) > 64 {
		s.queue = nil // a burst is over: give its memory back
	} else {
		clear(s.queue)
		s.queue = s.queue[:0]
	}
	s.mu.Unlock()
	return dst
}

// Next waits for the next event, one at a time; false once the
// subscription closed and every event was taken.
func (s *Subscription) Next() (*LiveEvent, bool) {
	for {
		if ev := s.pop(); ev != nil {
			return ev, true
		}
		if _, ok := <-s.C; !ok {
			ev := s.pop()
			return ev, ev != nil
		}
	}
}

func (s *Subscription) pop() *LiveEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil
	}
	ev := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	return ev
}

// Len is how many events wait to be taken.
func (s *Subscription) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// NewHub returns a hub whose subscribers may fall `buffer` events behind
// (1024 when buffer <= 0).
func NewHub(buffer int) *Hub {
	if buffer <= 0 {
		buffer = 1024
	}
	return &Hub{topics: map[string]map[*Subscription]struct{}{}, buffer: buffer, maxTotal: 2000, maxPerRun: 200}
}

// SetLimits caps the subscriptions in all and per run (<= 0: keep the
// default, 2000 and 200).
func (h *Hub) SetLimits(total, perRun int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if total > 0 {
		h.maxTotal = total
	}
	if perRun > 0 {
		h.maxPerRun = perRun
	}
}

// Subscribe starts receiving a run's events from now on. Over a limit it
// answers a *BusyError naming it.
func (h *Hub) Subscribe(runID string) (*Subscription, error) {
	c := make(chan struct{}, 1)
	s := &Subscription{RunID: runID, C: c, c: c}
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[runID]
	switch {
	case h.n >= h.maxTotal:
		return nil, &BusyError{Code: "too_many_watchers", RetryAfter: 10 * time.Second,
			Message: fmt.Sprintf("the studio already streams events to %d watchers, its limit (flag --max-watchers); try again later", h.maxTotal)}
	case len(t) >= h.maxPerRun:
		return nil, &BusyError{Code: "too_many_watchers", RetryAfter: 10 * time.Second,
			Message: fmt.Sprintf("run %s already has %d event-stream watchers, its limit (flag --max-watchers-per-run); try again later", runID, h.maxPerRun)}
	}
	if t == nil {
		t = map[*Subscription]struct{}{}
		h.topics[runID] = t
	}
	t[s] = struct{}{}
	h.n++
	return s, nil
}

// Unsubscribe stops a subscription (safe to call more than once).
func (h *Hub) Unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.topics[s.RunID]; t != nil {
		if _, ok := t[s]; ok {
			delete(t, s)
			h.n--
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
		s.mu.Lock()
		full := len(s.queue) >= h.buffer
		if !full {
			s.queue = append(s.queue, le)
		}
		s.mu.Unlock()
		if full {
			s.Dropped = true
			delete(t, s)
			h.n--
			close(s.c)
			continue
		}
		select {
		case s.c <- struct{}{}:
		default: // already signalled
		}
	}
	if len(t) == 0 {
		delete(h.topics, ev.RunID)
	}
}

// End tells a run's subscribers that the run stopped (finished or paused):
// C closes, after the events already queued.
func (h *Hub) End(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.topics[runID] {
		s.Ended = true
		h.n--
		close(s.c)
	}
	delete(h.topics, runID)
}

// Watchers returns the number of live subscriptions.
func (h *Hub) Watchers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// WatchersOf returns the number of live subscriptions to one run.
func (h *Hub) WatchersOf(runID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.topics[runID])
}
