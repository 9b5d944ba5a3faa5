package runs

import (
	"fmt"
	"sync"
	"time"

	"github.com/chainstudio/studio/store"
)

// Job is one recorded run waiting for a slot. Run executes it and returns
// when the run stops.
type Job struct {
	RunID string
	Kind  string
	Run   func()
}

// QueueStats is what a queue holds now.
type QueueStats struct {
	Running    int // jobs executing
	Waiting    int // jobs waiting for a slot
	Slots      int // at most this many execute at once
	MaxWaiting int // at most this many wait
}

// Queue decides when a recorded run executes: at most Slots at once, the
// others waiting in FIFO order. The in-process FIFO is the SQLite studio's;
// a database-backed queue (PostgreSQL workers) implements the same calls.
type Queue interface {
	// Enqueue adds a job behind the waiting ones; it starts as soon as a
	// slot is free. A full queue answers a *BusyError and keeps nothing.
	Enqueue(j Job) error
	// Remove takes a waiting job out of the line and returns it; false
	// when the job is not waiting (executing, finished or unknown).
	Remove(runID string) (Job, bool)
	// Position is a waiting job's place in line (1 is next); 0 when it is
	// not waiting.
	Position(runID string) int
	Stats() QueueStats
	// Close stops starting jobs and returns the ones still waiting, in
	// order; later Enqueue calls are refused.
	Close() []Job
}

// BusyError is a limit of the server that refused a request for now: the
// run queue is full, or an event stream has too many watchers. RetryAfter
// is when trying again makes sense.
type BusyError struct {
	Code       string // queue_full, too_many_watchers
	Message    string
	RetryAfter time.Duration
}

func (e *BusyError) Error() string { return e.Message }

// Unwrap makes a BusyError an `unavailable` store error for callers that
// only look at the domain code.
func (e *BusyError) Unwrap() error { return store.ErrUnavailable }

// FIFO is the in-process Queue: a slice of waiting jobs and a count of
// executing ones. Each started job runs in its own goroutine.
type FIFO struct {
	mu      sync.Mutex
	slots   int
	max     int
	running int
	waiting []Job
	closed  bool
}

// NewFIFO returns a queue that executes at most slots jobs at once and
// keeps at most maxWaiting waiting (both at least 1).
func NewFIFO(slots, maxWaiting int) *FIFO {
	return &FIFO{slots: max(1, slots), max: max(1, maxWaiting)}
}

// Enqueue implements Queue.
func (q *FIFO) Enqueue(j Job) error { return q.enqueue(j, true) }

// EnqueueOver is Enqueue without the waiting limit: for runs admitted
// before a restart, queued again at start-up (Service.Requeue), whose
// number the limit bounded when they were admitted.
func (q *FIFO) EnqueueOver(j Job) error { return q.enqueue(j, false) }

func (q *FIFO) enqueue(j Job, limit bool) error {
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return ErrShutdown
	case q.running < q.slots && len(q.waiting) == 0:
		q.running++
		q.mu.Unlock()
		go q.exec(j)
		return nil
	case limit && len(q.waiting) >= q.max:
		q.mu.Unlock()
		return q.full()
	}
	q.waiting = append(q.waiting, j)
	q.mu.Unlock()
	return nil
}

func (q *FIFO) full() *BusyError {
	return &BusyError{Code: "queue_full", RetryAfter: 5 * time.Second,
		Message: fmt.Sprintf("the run queue is full: %d runs executing and %d waiting (flags --max-running-runs, --max-queued-runs); try again later", q.slots, q.max)}
}

// exec runs a job, then hands its slot to the next waiting one.
func (q *FIFO) exec(j Job) {
	for {
		j.Run()
		q.mu.Lock()
		if q.closed || len(q.waiting) == 0 {
			q.running--
			q.mu.Unlock()
			return
		}
		j = q.waiting[0]
		q.waiting[0] = Job{}
		q.waiting = q.waiting[1:]
		q.mu.Unlock()
	}
}

// Remove implements Queue.
func (q *FIFO) Remove(runID string) (Job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, j := range q.waiting {
		if j.RunID == runID {
			q.waiting = append(q.waiting[:k:k], q.waiting[k+1:]...)
			return j, true
		}
	}
	return Job{}, false
}

// Position implements Queue.
func (q *FIFO) Position(runID string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, j := range q.waiting {
		if j.RunID == runID {
			return k + 1
		}
	}
	return 0
}

// Stats implements Queue.
func (q *FIFO) Stats() QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return QueueStats{Running: q.running, Waiting: len(q.waiting), Slots: q.slots, MaxWaiting: q.max}
}

// Close implements Queue.
func (q *FIFO) Close() []Job {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	w := q.waiting
	q.waiting = nil
	return w
}
