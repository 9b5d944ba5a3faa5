package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chainstudio/studio/store"
)

// ScheduleStore is what the scheduler reads and writes (store.Backend has it).
type ScheduleStore interface {
	ListSchedules(ctx context.Context, chainID string) ([]store.Schedule, error)
	// GetPublishedChain: a schedule runs the chain's published version,
	// never the draft being edited.
	GetPublishedChain(ctx context.Context, id string) (*store.Chain, error)
	RecordFiring(ctx context.Context, f store.Firing) error
	ChainBusy(ctx context.Context, chainID string) (bool, error)
}

// TriggerStarter starts a run a trigger fired (the Service does).
type TriggerStarter interface {
	StartTriggered(ctx context.Context, ch *store.Chain, input map[string]any, t Trigger) (string, error)
}

// SchedulerOptions configure a Scheduler. Store and Starter are required.
type SchedulerOptions struct {
	Store   ScheduleStore
	Starter TriggerStarter
	// Now is the scheduler's clock (tests fake it); default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Grace is how late a tick may be seen and still count as on time
	// rather than missed while the studio was down; default one minute.
	Grace time.Duration
	// MaxSleep bounds how long the loop sleeps without looking at the
	// schedules again (a schedule saved elsewhere, on PostgreSQL in another
	// process); default 30s. Wake cuts a sleep short.
	MaxSleep time.Duration
}

// Scheduler fires the schedules' ticks. Every studio process runs one: on
// PostgreSQL each tick is still fired once, because a tick's firing row is
// unique and is written in the transaction that records its run (and
// inserts its job), so the processes that lose the race write nothing.
type Scheduler struct {
	opts SchedulerOptions
	wake chan struct{}

	mu sync.Mutex
	// pending holds, per schedule with overlap "queue", the tick waiting
	// for the chain's running run to end (one at most; memory only: after
	// a restart it counts as missed, under the catch-up policy).
	pending map[string]time.Time
}

// NewScheduler returns a scheduler; call Run to start its loop, or FireDue
// to fire what is due now (tests, with a fake clock).
func NewScheduler(opts SchedulerOptions) (*Scheduler, error) {
	if opts.Store == nil || opts.Starter == nil {
		return nil, errors.New("runs: SchedulerOptions.Store and Starter are required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Grace <= 0 {
		opts.Grace = time.Minute
	}
	if opts.MaxSleep <= 0 {
		opts.MaxSleep = 30 * time.Second
	}
	return &Scheduler{opts: opts, wake: make(chan struct{}, 1), pending: map[string]time.Time{}}, nil
}

// Wake makes the loop look at the schedules now (one was saved).
func (sc *Scheduler) Wake() {
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

// pendingPoll is how often a queued tick checks whether the chain is free.
const pendingPoll = time.Second

// Run fires ticks until ctx ends, sleeping until the next tick (at most
// MaxSleep, or a second while a queued tick waits).
func (sc *Scheduler) Run(ctx context.Context) {
	for {
		next, err := sc.FireDue(ctx)
		if err != nil && ctx.Err() == nil {
			sc.opts.Logger.Warn("scheduler: reading the schedules failed", "err", err)
		}
		wait := sc.opts.MaxSleep
		if sc.waiting() {
			wait = min(wait, pendingPoll)
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(sc.opts.Now()), 0)+5*time.Millisecond)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-sc.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (sc *Scheduler) waiting() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.pending) > 0
}

// maxScan bounds the ticks walked to find the latest one due after a long
// downtime (an every-minute schedule down for ~70 days).
const maxScan = 100_000

// FireDue fires every schedule's due ticks as of Now and returns the
// earliest tick still to come (zero when none).
func (sc *Scheduler) FireDue(ctx context.Context) (time.Time, error) {
	list, err := sc.opts.Store.ListSchedules(ctx, "")
	if err != nil {
		return time.Time{}, err
	}
	now := sc.opts.Now()
	var next time.Time
	seen := make(map[string]bool, len(list))
	for i := range list {
		s := &list[i]
		seen[s.ID] = true
		n := sc.fireSchedule(ctx, s, now)
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	sc.mu.Lock()
	for id := range sc.pending {
		if !seen[id] { // deleted, disabled, or its chain deleted
			delete(sc.pending, id)
		}
	}
	sc.mu.Unlock()
	return next, nil
}

// fireSchedule fires one schedule's due ticks and returns its next tick.
func (sc *Scheduler) fireSchedule(ctx context.Context, s *store.Schedule, now time.Time) time.Time {
	log := sc.opts.Logger.With("schedule_id", s.ID, "chain_id", s.ChainID)
	spec, err := ParseCron(s.Cron, s.TimeZone)
	if err != nil { // checked when saved; a zone database without the zone
		log.Warn("scheduler: the schedule cannot be used", "err", err)
		return time.Time{}
	}
	from := s.LastTick
	if s.Updated.After(from) {
		from = s.Updated // ticks before a schedule was saved are not its own
	}
	sc.mu.Lock()
	queued, isQueued := sc.pending[s.ID]
	sc.mu.Unlock()
	if isQueued {
		if queued.After(from) {
			from = queued
		}
		if s.Overlap != store.OverlapQueue {
			sc.dropPending(s.ID)
			sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: queued, Outcome: store.FiringSkipped,
				Message: "the schedule's overlap policy changed while the tick waited"})
		} else if busy, err := sc.opts.Store.ChainBusy(ctx, s.ChainID); err == nil && !busy {
			sc.dropPending(s.ID)
			sc.start(ctx, log, s, queued, "")
		}
	}

	// The ticks due in (from, now]: how many, the latest, the one before.
	scanFrom := from
	if now.Sub(from) > 62*24*time.Hour {
		scanFrom = now.Add(-62 * 24 * time.Hour)
	}
	var latest, prev time.Time
	count := 0
	for t := spec.Next(scanFrom); !t.IsZero() && !t.After(now) && count < maxScan; t = spec.Next(t) {
		prev, latest = latest, t
		count++
	}
	if count == 0 {
		return spec.Next(now)
	}
	onTime := now.Sub(latest) <= sc.opts.Grace
	missed, missedN := latest, count
	if onTime {
		missed, missedN = prev, count-1
	}
	if missedN > 0 {
		note := fmt.Sprintf("%d tick(s) missed while the studio was down, since %s", missedN, from.Format(time.RFC3339))
		if from.Before(scanFrom) {
			note = fmt.Sprintf("ticks missed while the studio was down, since %s", from.Format(time.RFC3339))
		}
		if s.CatchUp == store.CatchUpOnce {
			sc.fire(ctx, log, s, missed, "caught up: one run for "+note)
		} else {
			sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: missed, Outcome: store.FiringMissed, Message: note})
		}
	}
	if onTime {
		sc.fire(ctx, log, s, latest, "")
	}
	return spec.Next(now)
}

func (sc *Scheduler) dropPending(id string) {
	sc.mu.Lock()
	delete(sc.pending, id)
	sc.mu.Unlock()
}

// fire applies the overlap policy to one tick.
func (sc *Scheduler) fire(ctx context.Context, log *slog.Logger, s *store.Schedule, tick time.Time, note string) {
	if s.Overlap != store.OverlapAllow {
		busy, err := sc.opts.Store.ChainBusy(ctx, s.ChainID)
		if err != nil {
			sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: tick, Outcome: store.FiringFailed,
				Message: "could not tell whether a run of the chain is going: " + store.ErrorMessage(err)})
			return
		}
		if busy && s.Overlap == store.OverlapQueue {
			sc.mu.Lock()
			old, had := sc.pending[s.ID]
			sc.pending[s.ID] = tick
			sc.mu.Unlock()
			if had {
				sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: old, Outcome: store.FiringSkipped,
					Message: "a later tick took its place in the queue (one tick waits at most)"})
			}
			return
		}
		if busy {
			sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: tick, Outcome: store.FiringSkipped,
				Message: "a run of the chain was still going (overlap: skip)"})
			return
		}
	}
	sc.start(ctx, log, s, tick, note)
}

// start records and launches the tick's run; a tick another process fired
// first is left alone.
func (sc *Scheduler) start(ctx context.Context, log *slog.Logger, s *store.Schedule, tick time.Time, note string) {
	ch, err := sc.opts.Store.GetPublishedChain(ctx, s.ChainID)
	if err == nil {
		var id string
		id, err = sc.opts.Starter.StartTriggered(ctx, ch, s.Input, Trigger{Kind: store.TriggerSchedule, ID: s.ID, Tick: tick})
		if err == nil {
			log.Info("scheduler: tick fired", "tick", tick, "run_id", id, "note", note)
			return
		}
	}
	if errors.Is(err, store.ErrAlreadyFired) || errors.Is(err, ErrShutdown) || ctx.Err() != nil {
		return // fired elsewhere; or stopping: after the restart it is a missed tick
	}
	var invalid *InvalidChainError
	if errors.As(err, &invalid) { // refused before anything was recorded: no run
		log.Warn("scheduler: the chain has errors; the tick runs nothing", "tick", tick, "err", err)
	}
	sc.record(ctx, log, store.Firing{TriggerID: s.ID, Tick: tick, Outcome: store.FiringFailed, Message: "the run could not start: " + errorText(err)})
}

func (sc *Scheduler) record(ctx context.Context, log *slog.Logger, f store.Firing) {
	err := sc.opts.Store.RecordFiring(ctx, f)
	switch {
	case err == nil:
		log.Info("scheduler: tick recorded", "tick", f.Tick, "outcome", f.Outcome, "message", f.Message)
	case !errors.Is(err, store.ErrAlreadyFired):
		log.Warn("scheduler: recording a tick failed", "tick", f.Tick, "outcome", f.Outcome, "err", err)
	}
}

// errorText is an error's message for a firing row a person reads: a store
// error's own text, a run service error's (queue full, shutting down, the
// chain's validation errors).
func errorText(err error) string {
	var busy *BusyError
	var invalid *InvalidChainError
	if errors.As(err, &busy) || errors.As(err, &invalid) || errors.Is(err, ErrShutdown) {
		return err.Error()
	}
	return store.ErrorMessage(err)
}
