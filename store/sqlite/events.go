package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/eventbuf"
	"github.com/chainstudio/studio/store/sqlstore"
)

// Events are stored in batches: one row per run per write, holding a JSON
// array of that run's events in seq order, keyed by the first seq and
// labelled with the last. A busy run emits thousands of small events; one row
// each made the per-row cost of SQLite the largest part of persisting a run,
// while every reader wants a range of a run's events anyway (a stream from
// Last-Event-ID, a run's timeline). Migration 2 converted the one-row-per-event
// table of schema 1.

// AppendEvents stores events in one transaction. A run's events must come in
// increasing seq order, after every seq already stored for it: an event whose
// seq is stored already is an error and nothing is written.
func (db *DB) AppendEvents(ctx context.Context, events []engine.Event) error {
	if len(events) == 0 {
		return nil
	}
	bodies, err := sqlstore.EventBodies(events)
	if err != nil {
		return err
	}
	err = db.writeTx(ctx, func(tx *Tx) error { return db.appendEventsTx(ctx, tx, events, bodies) })
	if err != nil {
		return fmt.Errorf("store: append events of run %s: %w", events[0].RunID, err)
	}
	return nil
}

// appendEventsTx writes each run's events in events as batch rows (one per
// run, more when they are large); bodies are the events' JSON.
func (db *DB) appendEventsTx(ctx context.Context, tx *Tx, events []engine.Event, bodies []string) error {
	order, err := sqlstore.EventBatches(events, bodies, db.now)
	if err != nil {
		return err
	}
	checked := map[string]bool{}
	for _, b := range order {
		if !checked[b.RunID] {
			// The first row of each run in this write: the run must exist and
			// its events must come after what is stored.
			checked[b.RunID] = true
			if err := sqlstore.EnsureRun(ctx, tx, b.RunID, b.Created, nil); err != nil {
				return err
			}
			var stored sql.NullInt64
			err := tx.QueryRowPrepared(ctx, `SELECT last_seq FROM event_batches WHERE run_id = ? ORDER BY first_seq DESC LIMIT 1`, b.RunID).Scan(&stored)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if stored.Valid && b.First <= stored.Int64 {
				return &store.EventSeqError{RunID: b.RunID, Seq: b.First, After: stored.Int64}
			}
		}
		if _, err := tx.ExecPrepared(ctx, `INSERT INTO event_batches (run_id, first_seq, last_seq, created_at, body) VALUES (?, ?, ?, ?, ?)`,
			b.RunID, b.First, b.Last, b.Created, b.Body); err != nil {
			return err
		}
	}
	return sqlstore.InsertModelCalls(ctx, tx, events, nil)
}

// EventWriter is the buffered event writer on this backend.
type EventWriter = eventbuf.EventWriter

// NewEventWriter starts a buffered event writer on db: store.EventStore's
// NewEventWriter.
func (db *DB) NewEventWriter(opts store.EventWriterOptions) store.EventWriter {
	return NewEventWriter(db, opts)
}

// NewEventWriter starts a buffered event writer on db, logging to db's
// logger unless opts names another. Close it before closing db.
func NewEventWriter(db *DB, opts store.EventWriterOptions) *EventWriter {
	if opts.Logger == nil {
		opts.Logger = db.log
	}
	return eventbuf.New(db, opts)
}

// WriteEventBatch stores one batch of the event writer in one transaction.
func (db *DB) WriteEventBatch(ctx context.Context, batch []engine.Event, bodies []string) error {
	return db.writeTx(ctx, func(tx *Tx) error { return db.appendEventsTx(ctx, tx, batch, bodies) })
}
