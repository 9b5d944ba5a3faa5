package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/eventbuf"
	"github.com/chainstudio/studio/store/sqlstore"
)

// Events are stored in batches: one row per run per write, holding a JSON
// array of that run's events in seq order, keyed by the first seq and
// labelled with the last, as in the SQLite backend: a busy run emits
// thousands of small events, a row each would make the per-row cost the
// largest part of persisting a run, and every reader wants a range of a
// run's events anyway (a stream from Last-Event-ID, a run's timeline).

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
	err = db.writeTx(ctx, func(tx *Tx) error { return db.appendEventsTx(ctx, tx, events, bodies, false) })
	if err != nil {
		return fmt.Errorf("store: append events of run %s: %w", events[0].RunID, err)
	}
	return nil
}

// appendEventsTx writes each run's events in events as batch rows (one per
// run, more when they are large); bodies are the events' JSON. The events
// of a run this process lost to another (a stale epoch) refuse the whole
// write, or with dropStale are left out and the rest is written: the event
// writer's batches mix runs, and one run's lost lease must not hold the
// others' events.
func (db *DB) appendEventsTx(ctx context.Context, tx *Tx, events []engine.Event, bodies []string, dropStale bool) error {
	order, err := sqlstore.EventBatches(events, bodies, db.now)
	if err != nil {
		return err
	}
	// Each run must exist, and is locked (in id order, so that two writers
	// never wait for each other) so that its stored last seq cannot change
	// before this write commits.
	firsts := map[string]int64{}
	for _, b := range order {
		if _, ok := firsts[b.RunID]; !ok {
			firsts[b.RunID] = b.Created
		}
	}
	ids := make([]string, 0, len(firsts))
	for id := range firsts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var stale map[string]bool
	stored := make(map[string]int64, len(ids)) // each run's last stored seq
	for _, id := range ids {
		f := db.fenceOf(id)
		if f == nil { // a run this process owns has its row already
			if err := sqlstore.EnsureRun(ctx, tx, id, firsts[id], nil); err != nil {
				return err
			}
		}
		// The lock, the epoch and the last stored seq in one round trip.
		var epoch int64
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT r.epoch, (SELECT last_seq FROM event_batches WHERE run_id = r.id ORDER BY first_seq DESC LIMIT 1)
FROM runs r WHERE r.id = ? FOR UPDATE OF r`, id).Scan(&epoch, &last); err != nil {
			return err
		}
		stored[id] = last.Int64
		if f != nil && f.epoch != epoch {
			if !dropStale {
				return f.refused(id)
			}
			_ = f.refused(id)
			if stale == nil {
				stale = map[string]bool{}
			}
			stale[id] = true
		}
	}
	checked := map[string]bool{}
	for _, b := range order {
		if stale[b.RunID] {
			continue
		}
		if !checked[b.RunID] {
			// The first row of each run in this write: its events must come
			// after what is stored.
			checked[b.RunID] = true
			if b.First <= stored[b.RunID] {
				return &store.EventSeqError{RunID: b.RunID, Seq: b.First, After: stored[b.RunID]}
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_batches (run_id, first_seq, last_seq, created_at, body) VALUES (?, ?, ?, ?, ?)`,
			b.RunID, b.First, b.Last, b.Created, b.Body); err != nil {
			return err
		}
	}
	return sqlstore.InsertModelCalls(ctx, tx, events, func(id string) bool { return !stale[id] })
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

// WriteEventBatch stores one batch of the event writer in one transaction,
// and tells the other processes' listeners that events arrived.
func (db *DB) WriteEventBatch(ctx context.Context, batch []engine.Event, bodies []string) error {
	if len(batch) > 0 {
		if f := db.fenceOf(batch[0].RunID); f != nil && oneRun(batch) {
			return db.writeOwnedEvents(ctx, f, batch, bodies)
		}
	}
	return db.writeTx(ctx, func(tx *Tx) error {
		// Events are progress: see asyncCommit.
		if err := asyncCommit(ctx, tx); err != nil {
			return err
		}
		if err := db.appendEventsTx(ctx, tx, batch, bodies, true); err != nil {
			return err
		}
		if db.notifyEvents.Load() {
			// One notification per stored batch, whatever its size: NOTIFY
			// takes a database-wide lock at commit.
			if _, err := tx.ExecContext(ctx, `SELECT pg_notify(?, '')`, EventsChannel); err != nil {
				return err
			}
		}
		return nil
	})
}

func oneRun(batch []engine.Event) bool {
	for i := range batch {
		if batch[i].RunID != batch[0].RunID {
			return false
		}
	}
	return true
}

// writeOwnedEvents stores a batch of one run this process owns, the common
// case of a worker's event writer, in one round trip: the transaction's
// statements go in one pipeline. The run's row is locked first and read
// (epoch, last stored seq); the INSERT, whose snapshot comes after the
// lock, checks both again and inserts nothing when either fails, and the
// transaction commits without waiting for the WAL flush (progress, see
// asyncCommit).
func (db *DB) writeOwnedEvents(ctx context.Context, f *fence, batch []engine.Event, bodies []string) error {
	runID := batch[0].RunID
	batches, err := sqlstore.EventBatches(batch, bodies, db.now)
	if err != nil {
		return err
	}
	firsts, lasts, created, rows := make([]int64, len(batches)), make([]int64, len(batches)), make([]int64, len(batches)), make([]string, len(batches))
	for i, b := range batches {
		firsts[i], lasts[i], created[i], rows[i] = b.First, b.Last, b.Created, b.Body
	}
	if db.closed.Load() {
		return errClosed
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`SELECT r.epoch, COALESCE((SELECT last_seq FROM event_batches WHERE run_id = r.id ORDER BY first_seq DESC LIMIT 1), 0)
FROM runs r WHERE r.id = $1 FOR UPDATE OF r`, runID)
	b.Queue(`INSERT INTO event_batches (run_id, first_seq, last_seq, created_at, body)
SELECT $1::VARCHAR, v.f, v.l, v.c, v.b FROM unnest($2::BIGINT[], $3::BIGINT[], $4::BIGINT[], $5::TEXT[]) AS v(f, l, c, b)
WHERE (SELECT epoch FROM runs WHERE id = $1::VARCHAR) = $6
  AND COALESCE((SELECT last_seq FROM event_batches WHERE run_id = $1::VARCHAR ORDER BY first_seq DESC LIMIT 1), 0) < $2[1]`,
		runID, firsts, lasts, created, rows, f.epoch)
	notify := db.notifyEvents.Load()
	if notify {
		// One notification per stored batch: NOTIFY takes a database-wide
		// lock at commit.
		b.Queue(`SELECT pg_notify($1, '')`, EventsChannel)
	}
	b.Queue(`COMMIT`)
	br := db.pool.SendBatch(ctx, b)
	var epoch, stored int64
	var inserted int64
	err = func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&epoch, &stored); err != nil {
			return err
		}
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		inserted = tag.RowsAffected()
		if notify {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		_, err = br.Exec()
		return err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: append events of run %s: %w", runID, unavailable(err))
	}
	switch {
	case epoch != f.epoch:
		_ = f.refused(runID) // left out, as the transaction path leaves them
		return nil
	case inserted == 0:
		return &store.EventSeqError{RunID: runID, Seq: firsts[0], After: stored}
	}
	return nil
}
