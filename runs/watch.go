package runs

import (
	"context"
	"time"

	"github.com/chainstudio/studio/engine"
)

// Watch follows one run's events for one watcher, in seq order, without
// gaps or duplicates, whatever the transport. Its order: subscribe to the
// live hub first (Service.Watch), then store every event emitted so far and
// replay the store after the last seq sent (CatchUp), then the live events
// (Next), skipping any seq already sent; events emitted between the
// subscription and the replay are in both and sent once. A gap, which that
// order rules out, is filled from the store. The transport writes the
// frames and owns the bounds of its writes and its replay reads.
type Watch struct {
	svc     *Service
	sub     *Subscription
	run     string
	last    int64
	pending []*LiveEvent
}

// Replayer sends a watcher the stored events after seq after, within the
// transport's bounds, and returns the seq of the last one it sent (after
// when none).
type Replayer func(ctx context.Context, after int64) (int64, error)

// WatchState is how a watch goes on after Next.
type WatchState int

const (
	// WatchOpen: more live events may come.
	WatchOpen WatchState = iota
	// WatchEnded: the run stopped (or paused) and every live event was
	// taken: catch up from the store, then send the run's result.
	WatchEnded
	// WatchDropped: the watcher fell behind the live hub: end the stream;
	// the client reconnects after the last seq it has and catches up from
	// the store.
	WatchDropped
)

// Watch starts following runID for one watcher that has every event up to
// seq after. It answers a *BusyError when the run or the studio has as
// many watchers as allowed. Close it when the watcher goes.
func (s *Service) Watch(runID string, after int64) (*Watch, error) {
	sub, err := s.subscribe(runID)
	if err != nil {
		return nil, err
	}
	return &Watch{svc: s, sub: sub, run: runID, last: after}, nil
}

// Close stops the watch.
func (w *Watch) Close() { w.svc.unsubscribe(w.sub) }

// C receives a signal when live events wait (take them with Next) and is
// closed when the subscription ends.
func (w *Watch) C() <-chan struct{} { return w.sub.C }

// Last is the seq of the last event sent.
func (w *Watch) Last() int64 { return w.last }

// Live reports whether the run executes (or waits for a slot), so that
// live events are to come; false: the store holds the whole run.
func (w *Watch) Live() bool { return w.svc.Active(w.run) }

// QueuePosition is the run's place in line while it waits for a slot (0:
// not waiting).
func (w *Watch) QueuePosition() int { return w.svc.QueuePosition(w.run) }

// CatchUp stores every event emitted so far and has replay send the stored
// events after the last one sent. A failed flush is logged: what is stored
// is replayed.
func (w *Watch) CatchUp(ctx context.Context, replay Replayer) error {
	if err := w.svc.Flush(ctx); err != nil && ctx.Err() == nil {
		w.svc.log.Warn("event stream: flushing the event writer failed; replaying what is stored", "run_id", w.run, "err", err)
	}
	last, err := replay(ctx, w.last)
	w.last = max(w.last, last)
	return err
}

// Next takes the live events waiting and has send write each one not sent
// yet (a gap filled by replay first), then says how the watch goes on. Call
// it each time C is received from, with what the receive said (open false:
// closed; the events queued before the close are still taken). An error
// of send or replay is returned as it is.
func (w *Watch) Next(ctx context.Context, open bool, replay Replayer, send func(*LiveEvent) error) (WatchState, error) {
	w.pending = w.sub.Take(w.pending[:0])
	defer clear(w.pending)
	for _, ev := range w.pending {
		if ev.Seq <= w.last {
			continue
		}
		if ev.Seq > w.last+1 {
			if err := w.CatchUp(ctx, replay); err != nil {
				return WatchOpen, err
			}
			if ev.Seq <= w.last {
				continue
			}
		}
		if err := send(ev); err != nil {
			return WatchOpen, err
		}
		w.last = ev.Seq
	}
	switch {
	case open:
		return WatchOpen, nil
	case w.sub.Ended:
		return WatchEnded, nil
	}
	return WatchDropped, nil
}

// ---- the live hub, fed here or from the store --------------------------------

// subscribe starts receiving a run's live events (see Hub).
// It answers a *BusyError when the run or the studio has as many watchers
// as allowed.
//
// With a Dispatcher, the run may execute in another process: its events
// then reach the hub from the store (watchRemote).
func (s *Service) subscribe(runID string) (*Subscription, error) {
	sub, err := s.hub.Subscribe(runID)
	if err == nil && s.disp != nil && !s.localActive(runID) {
		s.watchRemote(runID)
	}
	return sub, err
}

// unsubscribe stops a subscription.
func (s *Service) unsubscribe(sub *Subscription) { s.hub.Unsubscribe(sub) }

// remoteActive reports whether a run is queued or executing somewhere,
// as its row says.
func (s *Service) remoteActive(runID string) bool {
	ctx, cancel := context.WithTimeout(s.base, 5*time.Second)
	defer cancel()
	r, err := s.store.GetRunInfo(ctx, runID)
	return err == nil && (r.Status == engine.StatusQueued || r.Status == engine.StatusRunning)
}

// watchRemote feeds the hub, for the watchers of a run executing in another
// process, with the run's new events from the store every poll period, and
// ends the topic once the run has stopped and every event was read. One
// poller per run, whatever its number of watchers; it stops when the last
// watcher leaves or the run starts executing here.
func (s *Service) watchRemote(runID string) {
	s.mu.Lock()
	if _, on := s.pollers[runID]; on {
		s.mu.Unlock()
		return
	}
	s.pollers[runID] = struct{}{}
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.pollers, runID)
			s.mu.Unlock()
		}()
		ctx := s.base
		// Taken before the first read, as before every read below: a batch
		// stored after that read wakes the reader.
		hint := s.hint()
		last, err := s.store.MaxSeq(ctx, runID)
		if err != nil {
			last = 0 // the watchers skip what they already sent
		}
		finalSeq, waited := int64(-1), 0
		tick := time.NewTicker(s.poll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-hint:
			}
			// The next hint's channel, taken before this round reads: a
			// batch committed after the read's snapshot wakes the next
			// round at once instead of waiting for the poll.
			hint = s.hint()
			if s.localActive(runID) || s.hub.WatchersOf(runID) == 0 {
				return
			}
			// The status first: a run that stopped before this read has
			// all its events stored by the time they are read below.
			info, err := s.store.GetRunInfo(ctx, runID)
			if err != nil {
				continue
			}
			stopped := info.Status != engine.StatusQueued && info.Status != engine.StatusRunning
			if stopped && finalSeq < 0 {
				// The end entry names the run's last event seq; the
				// executing process may store those events a moment after
				// the status, so the topic ends only once they are read.
				finalSeq = 0
				if log, err := s.store.Load(ctx, runID); err == nil && len(log) > 0 {
					finalSeq = log[len(log)-1].EventSeq
				}
			}
			for {
				evs, err := s.remote.EventsAfter(ctx, runID, last, 1000)
				if err != nil {
					break
				}
				for _, ev := range evs {
					s.hub.Emit(ev)
					last = ev.Seq
				}
				if len(evs) < 1000 {
					break
				}
			}
			if stopped {
				waited++
				// Ten periods without the last events: they were lost
				// (the executing process died); the store holds the rest.
				if last >= finalSeq || waited > 10 {
					s.hub.End(runID)
					return
				}
			}
		}
	}()
}

// hint returns a channel closed at the next event hint.
func (s *Service) hint() <-chan struct{} {
	s.hintMu.Lock()
	defer s.hintMu.Unlock()
	return s.hintC
}

// relayHints wakes every remote poller on each hint.
func (s *Service) relayHints(hints <-chan struct{}) {
	for {
		select {
		case <-s.base.Done():
			return
		case <-hints:
		}
		s.hintMu.Lock()
		close(s.hintC)
		s.hintC = make(chan struct{})
		s.hintMu.Unlock()
	}
}
