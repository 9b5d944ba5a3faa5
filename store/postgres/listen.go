package postgres

import (
	"context"
	"time"
)

// EventsChannel is the LISTEN/NOTIFY channel on which event writers say
// that they stored a batch. It is a hint only: the payload is empty, and a
// listener reads the events of the runs it watches from the tables.
const EventsChannel = "studio_events"

// NotifyEvents makes this store's event writers send a NOTIFY on
// EventsChannel with each batch they store.
func (db *DB) NotifyEvents(on bool) { db.notifyEvents.Store(on) }

// ListenEvents holds one connection listening on EventsChannel until ctx
// ends, and signals the returned channel (coalesced) on each notification,
// and after each reconnect: notifications sent while it was away are lost,
// so the reader should read everything it watches again.
func (db *DB) ListenEvents(ctx context.Context) <-chan struct{} {
	hints := make(chan struct{}, 1)
	hint := func() {
		select {
		case hints <- struct{}{}:
		default:
		}
	}
	go func() {
		for ctx.Err() == nil {
			db.listenOnce(ctx, hint)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	return hints
}

// listenOnce listens on one connection until it fails or ctx ends.
func (db *DB) listenOnce(ctx context.Context, hint func()) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return
	}
	conn := c.Hijack() // LISTEN is per session: never back to the pool
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+EventsChannel); err != nil {
		return
	}
	hint() // resync: what was stored while no one listened
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return
		}
		hint()
	}
}
