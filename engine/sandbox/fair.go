//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ErrRunCPU is a call refused because its run's code calls have used the
// run's CPU time budget (Limits.RunCPUSeconds).
var ErrRunCPU = errors.New("the run's code nodes used up their CPU time budget")

// slowCall is the CPU time past which a call counts as long: a run whose
// last call took longer has at most one call per worker in the sandbox, so
// that another run's call never queues in a child behind many of them. It
// is a few of the child's CPU watch ticks: a short call is charged its
// wall time, which a busy machine stretches.
const slowCall = 50 * time.Millisecond

// longRunning is the wall time after which a child's running call makes
// the pool write new calls to another child when it can.
const longRunning = 100 * time.Millisecond

// maxRunStates bounds the runs the scheduler remembers (their CPU time
// used); past it the runs idle the longest are forgotten.
const maxRunStates = 4096

// sched shares the pool's call slots (Workers × pipelineDepth: the calls
// running or written to a child) between runs (Request.Session; calls
// without one are one more run). Runs with calls waiting take turns, one
// call each; a run has at most RunConcurrency slots, and at most one per
// worker while its calls are long (a child runs its calls in order, so a
// call written behind long ones waits for all of them); each run has a
// queue of at most MaxQueue calls and a CPU time budget (RunCPUSeconds).
// A flood of one run therefore neither delays another run's call by more
// than about one call per child nor fills the queue another run needs.
type sched struct {
	lim      Limits
	capacity int

	mu   sync.Mutex
	used int
	runs map[string]*runQueue
	ring []*runQueue // runs with calls waiting, in turn order
}

// runQueue is one run's share.
type runQueue struct {
	key      string
	waiting  []*waiter
	inFlight int
	slow     bool          // its last answered call was long (and before its first answer)
	cpu      time.Duration // CPU time its calls used
	last     time.Time     // last call's end, for forgetting idle runs
	inRing   bool
}

type waiter struct {
	ready chan struct{} // closed under sched.mu once g is set
	g     grant
}

// grant is a slot given to a call, or the reason it gets none.
type grant struct {
	rq     *runQueue
	allow  time.Duration // the call's CPU allowance
	budget bool          // the allowance is what is left of the run's budget
	err    error
}

func newSched(lim Limits) *sched {
	return &sched{lim: lim, capacity: lim.Workers * pipelineDepth, runs: map[string]*runQueue{}}
}

// acquire waits for a slot for a call of run key.
func (s *sched) acquire(ctx context.Context, key string) (grant, error) {
	s.mu.Lock()
	rq := s.runs[key]
	if rq == nil {
		rq = &runQueue{key: key, slow: true}
		s.runs[key] = rq
		s.forgetLocked()
	}
	if len(rq.waiting) == 0 && s.used < s.capacity && rq.inFlight < s.capOf(rq) {
		g := s.grantLocked(rq)
		s.mu.Unlock()
		return g, g.err
	}
	if n := len(rq.waiting); n >= s.lim.MaxQueue {
		s.mu.Unlock()
		return grant{}, fmt.Errorf("%w: %d calls of this run are waiting for %d workers (--code-workers)", ErrBusy, n, s.lim.Workers)
	}
	w := &waiter{ready: make(chan struct{})}
	rq.waiting = append(rq.waiting, w)
	if !rq.inRing {
		rq.inRing = true
		s.ring = append(s.ring, rq)
	}
	s.mu.Unlock()
	select {
	case <-w.ready:
		return w.g, w.g.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	select {
	case <-w.ready: // granted as ctx ended: give the slot back
		s.mu.Unlock()
		if w.g.err == nil {
			s.release(w.g, 0, false)
		}
		return grant{}, context.Cause(ctx)
	default:
	}
	if i := slices.Index(rq.waiting, w); i >= 0 {
		rq.waiting = slices.Delete(rq.waiting, i, i+1)
	}
	s.mu.Unlock()
	return grant{}, context.Cause(ctx)
}

// capOf is how many slots run rq may hold.
func (s *sched) capOf(rq *runQueue) int {
	if rq.slow {
		return min(s.lim.RunConcurrency, s.lim.Workers)
	}
	return s.lim.RunConcurrency
}

// grantLocked gives rq a slot and its call's CPU allowance, or refuses the
// call when the run has used its budget.
func (s *sched) grantLocked(rq *runQueue) grant {
	perCall := time.Duration(s.lim.CPUSeconds) * time.Second
	g := grant{rq: rq, allow: perCall}
	if s.lim.RunCPUSeconds > 0 && rq.key != "" {
		budget := time.Duration(s.lim.RunCPUSeconds) * time.Second
		if rq.cpu >= budget {
			return grant{err: fmt.Errorf("%w: they used %s of CPU time, over the budget of %d s a run (--code-run-cpu-seconds)", ErrRunCPU, rq.cpu.Round(time.Millisecond), s.lim.RunCPUSeconds)}
		}
		if left := budget - rq.cpu; left < perCall {
			g.allow, g.budget = left, true
		}
	}
	s.used++
	rq.inFlight++
	return g
}

// release gives a slot back, charging its run the CPU time the call used;
// answered says whether the call ran to an answer (its time tells whether
// the run's calls are long).
func (s *sched) release(g grant, cpu time.Duration, answered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rq := g.rq
	s.used--
	rq.inFlight--
	rq.cpu += cpu
	rq.last = time.Now()
	if answered {
		rq.slow = cpu >= slowCall
	}
	s.dispatchLocked()
}

// dispatchLocked hands free slots to waiting calls, one per run in turn.
func (s *sched) dispatchLocked() {
	for s.used < s.capacity && len(s.ring) > 0 {
		granted := false
		for n := len(s.ring); n > 0 && s.used < s.capacity; n-- {
			rq := s.ring[0]
			s.ring = s.ring[1:]
			if len(rq.waiting) == 0 {
				rq.inRing = false
				continue
			}
			if rq.inFlight >= s.capOf(rq) {
				s.ring = append(s.ring, rq) // its turn comes when one of its calls ends
				continue
			}
			w := rq.waiting[0]
			rq.waiting = rq.waiting[1:]
			w.g = s.grantLocked(rq)
			close(w.ready)
			granted = true
			if len(rq.waiting) > 0 {
				s.ring = append(s.ring, rq)
			} else {
				rq.inRing = false
			}
		}
		if !granted {
			return
		}
	}
}

// forgetLocked drops the runs idle the longest once there are too many:
// a run forgotten starts its budget again, which only a run idle through
// thousands of others' can get.
func (s *sched) forgetLocked() {
	if len(s.runs) <= maxRunStates {
		return
	}
	idle := make([]*runQueue, 0, len(s.runs))
	for _, rq := range s.runs {
		if rq.inFlight == 0 && len(rq.waiting) == 0 && !rq.last.IsZero() {
			idle = append(idle, rq)
		}
	}
	slices.SortFunc(idle, func(a, b *runQueue) int { return a.last.Compare(b.last) })
	for _, rq := range idle[:min(len(idle), len(s.runs)-maxRunStates*3/4)] {
		delete(s.runs, rq.key)
	}
}

// waitingOf is how many calls of run key wait for a slot.
func (s *sched) waitingOf(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rq := s.runs[key]; rq != nil {
		return len(rq.waiting)
	}
	return 0
}
