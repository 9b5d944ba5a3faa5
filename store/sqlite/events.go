package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	bodies := make([]string, len(events))
	for i := range events {
		b, err := json.Marshal(&events[i])
		if err != nil {
			return fmt.Errorf("store: append events of run %s: event %d: %w", events[i].RunID, events[i].Seq, err)
		}
		bodies[i] = string(b)
	}
	err := db.writeTx(ctx, func(tx *Tx) error { return db.appendEventsTx(ctx, tx, events, bodies) })
	if err != nil {
		return fmt.Errorf("store: append events of run %s: %w", events[0].RunID, err)
	}
	return nil
}

// maxBatchBody bounds one stored batch: a reader wanting one event decodes
// the whole row it sits in, so events with large outputs are spread over
// more rows instead of making one huge one.
const maxBatchBody = 256 << 10

// appendEventsTx writes each run's events in events as batch rows (one per
// run, more when they are large); bodies are the events' JSON.
func (db *DB) appendEventsTx(ctx context.Context, tx *Tx, events []engine.Event, bodies []string) error {
	type runBatch struct {
		id          string
		first, last int64
		created     int64
		body        strings.Builder
	}
	var order []*runBatch          // rows to insert, in order
	open := map[string]*runBatch{} // each run's row being filled
	lastSeq := map[string]int64{}  // each run's last seq in this write
	for i := range events {
		e := &events[i]
		if last, seen := lastSeq[e.RunID]; seen && e.Seq <= last {
			return &store.EventSeqError{RunID: e.RunID, Seq: e.Seq, After: last}
		}
		lastSeq[e.RunID] = e.Seq
		b := open[e.RunID]
		if b != nil && b.body.Len()+len(bodies[i]) > maxBatchBody {
			b = nil // full: start another row
		}
		if b == nil {
			t := sqlstore.Micros(e.Time)
			if t == 0 {
				t = sqlstore.Micros(db.now())
			}
			b = &runBatch{id: e.RunID, first: e.Seq, created: t}
			b.body.Grow(min(maxBatchBody, 64<<10))
			b.body.WriteByte('[')
			open[e.RunID] = b
			order = append(order, b)
		} else {
			b.body.WriteByte(',')
		}
		b.body.WriteString(bodies[i])
		b.last = e.Seq
	}
	checked := map[string]bool{}
	for _, b := range order {
		if !checked[b.id] {
			// The first row of each run in this write: the run must exist and
			// its events must come after what is stored.
			checked[b.id] = true
			if err := db.ensureRun(ctx, tx, b.id, b.created, nil); err != nil {
				return err
			}
			var stored sql.NullInt64
			err := tx.QueryRowPrepared(ctx, `SELECT last_seq FROM event_batches WHERE run_id = ? ORDER BY first_seq DESC LIMIT 1`, b.id).Scan(&stored)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if stored.Valid && b.first <= stored.Int64 {
				return &store.EventSeqError{RunID: b.id, Seq: b.first, After: stored.Int64}
			}
		}
		b.body.WriteByte(']')
		if _, err := tx.ExecPrepared(ctx, `INSERT INTO event_batches (run_id, first_seq, last_seq, created_at, body) VALUES (?, ?, ?, ?, ?)`,
			b.id, b.first, b.last, b.created, b.body.String()); err != nil {
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
