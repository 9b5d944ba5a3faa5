package runs

import (
	"fmt"
	"runtime/metrics"
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

// Queue decides when a recorded run executes in this process: at most Slots
// at once, the others waiting in FIFO order. FIFO is the in-process one. It
// holds the runs the Executor launches here and every ad-hoc run.
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
	mem     *MemoryBudget // nil: no memory budget
}

// MemoryBudget holds new runs back while the process's live heap is near
// a limit: a run's memory is its outputs and their encodings, which a slot
// count does not bound (a map of 1 MB outputs holds hundreds of MB).
type MemoryBudget struct {
	// Limit is the budget in bytes (the --max-memory flag); new runs wait
	// while the live heap is over 3/4 of it and another run executes.
	Limit int64
	// Heap reads the live heap in bytes; default the Go heap marked live by
	// the last collection (runtime/metrics /gc/heap/live:bytes).
	Heap func() int64
}

// near says whether the live heap is near the limit, and how large it is.
func (m *MemoryBudget) near() (bool, int64) {
	if m == nil || m.Limit <= 0 {
		return false, 0
	}
	h := m.Heap
	if h == nil {
		h = liveHeap
	}
	n := h()
	return n > m.Limit/4*3, n
}

var liveHeapSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
var liveHeapMu sync.Mutex

func liveHeap() int64 {
	liveHeapMu.Lock()
	defer liveHeapMu.Unlock()
	metrics.Read(liveHeapSample)
	if liveHeapSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(liveHeapSample[0].Value.Uint64())
}

// SetMemoryBudget holds new runs back near a memory budget (nil: none).
// Set it before the first Enqueue.
func (q *FIFO) SetMemoryBudget(m *MemoryBudget) { q.mem = m }

// MemoryWait is why the waiting runs wait when it is the memory budget
// rather than the slots: "" when it is not.
func (q *FIFO) MemoryWait() string {
	q.mu.Lock()
	running := q.running
	q.mu.Unlock()
	if running == 0 {
		return ""
	}
	near, heap := q.mem.near()
	if !near {
		return ""
	}
	return fmt.Sprintf("waiting for memory: the studio's live heap is %d MiB, over 3/4 of its budget of %d MiB (flag --max-memory); it starts when running runs end",
		heap>>20, q.mem.Limit>>20)
}

// roomFor says whether one more job may start now (q.mu held): a slot is
// free, and the heap is not near the memory budget unless nothing runs (a
// run alone always starts; its own budgets bound it).
func (q *FIFO) roomFor() bool {
	if q.running >= q.slots {
		return false
	}
	if q.running == 0 {
		return true
	}
	near, _ := q.mem.near()
	return !near
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
	case len(q.waiting) == 0 && q.roomFor():
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

// exec runs a job, then hands its slot to the next waiting one, and starts
// as many more as now fit (runs held back by the memory budget start
// together once it has room).
func (q *FIFO) exec(j Job) {
	for {
		j.Run()
		q.mu.Lock()
		q.running--
		var next []Job
		for !q.closed && len(q.waiting) > 0 && q.roomFor() {
			next = append(next, q.waiting[0])
			q.waiting[0] = Job{}
			q.waiting = q.waiting[1:]
			q.running++
		}
		q.mu.Unlock()
		if len(next) == 0 {
			return
		}
		for _, n := range next[1:] {
			go q.exec(n)
		}
		j = next[0]
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
