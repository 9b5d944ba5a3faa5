package runs

import "context"

// Watch follows one run's events for one watcher, in seq order, without
// gaps or duplicates, whatever the transport. Its order: subscribe to the
// live hub first (Service.Watch), then replay every event emitted so far,
// after the last seq sent (CatchUp), then the live events (Next), skipping
// any seq already sent; events emitted between the subscription and the
// replay are in both and sent once. A gap, which that order rules out, is
// filled by a replay. The transport writes the frames and owns the bounds
// of its writes and its replay reads.
type Watch struct {
	svc     *Service
	sub     *Subscription
	run     string
	last    int64
	pending []*LiveEvent
}

// Replayer sends a watcher the events emitted after seq after, within the
// transport's bounds, and returns the seq of the last one it sent (after
// when none). It reads them with Service.Events, which sees the events the
// event writer has not stored yet.
type Replayer func(ctx context.Context, after int64) (int64, error)

// WatchState is how a watch goes on after Next.
type WatchState int

const (
	// WatchOpen: more live events may come.
	WatchOpen WatchState = iota
	// WatchEnded: the run stopped (or paused) and every live event was
	// taken: catch up (CatchUp), then send the run's result.
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

// CatchUp has replay send the events emitted so far after the last one
// sent.
func (w *Watch) CatchUp(ctx context.Context, replay Replayer) error {
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

// ---- the live hub --------------------------------------------------------------

// subscribe starts receiving a run's live events (see Hub).
// It answers a *BusyError when the run or the studio has as many watchers
// as allowed.
//
// The executor hears of it: a run executing in another process has its
// events reach the hub from the store.
func (s *Service) subscribe(runID string) (*Subscription, error) {
	sub, err := s.hub.Subscribe(runID)
	if err == nil {
		s.exec.subscribed(runID)
	}
	return sub, err
}

// unsubscribe stops a subscription.
func (s *Service) unsubscribe(sub *Subscription) { s.hub.Unsubscribe(sub) }
