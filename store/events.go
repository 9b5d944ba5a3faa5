package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/chainstudio/studio/engine"
)

// AppendEvents stores events in one transaction. Events are append-only; a
// (run, seq) that is already stored is an error and nothing is written.
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
	err := db.writeTx(ctx, func(tx *sql.Tx) error { return db.appendEventsTx(ctx, tx, events, bodies) })
	if err != nil {
		return fmt.Errorf("store: append events of run %s: %w", events[0].RunID, err)
	}
	return nil
}

// eventInsertRows is how many events one INSERT statement carries.
const eventInsertRows = 64

func (db *DB) appendEventsTx(ctx context.Context, tx *sql.Tx, events []engine.Event, bodies []string) error {
	seen := map[string]bool{}
	for i := range events {
		id := events[i].RunID
		if !seen[id] {
			seen[id] = true
			t := micros(events[i].Time)
			if t == 0 {
				t = micros(db.now())
			}
			if err := db.ensureRun(ctx, tx, id, t, nil); err != nil {
				return err
			}
		}
	}
	args := make([]any, 0, 6*eventInsertRows)
	for start := 0; start < len(events); start += eventInsertRows {
		end := min(start+eventInsertRows, len(events))
		args = args[:0]
		for i := start; i < end; i++ {
			e := &events[i]
			t := micros(e.Time)
			if t == 0 {
				t = micros(db.now())
			}
			args = append(args, e.RunID, e.Seq, e.NodeID, string(e.Phase), t, bodies[i])
		}
		if _, err := db.exec(ctx, tx, eventInsertSQL(end-start), args...); err != nil {
			return err
		}
	}
	return nil
}

var eventInsertSQLs [eventInsertRows + 1]string

func init() {
	for i := 1; i <= eventInsertRows; i++ {
		eventInsertSQLs[i] = buildEventInsertSQL(i)
	}
}

// eventInsertSQL is the INSERT of rows events (1..eventInsertRows).
func eventInsertSQL(rows int) string { return eventInsertSQLs[rows] }

func buildEventInsertSQL(rows int) string {
	b := make([]byte, 0, 80+rows*20)
	b = append(b, "INSERT INTO events (run_id, seq, node_id, phase, created_at, body) VALUES "...)
	for i := 0; i < rows; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "(?, ?, ?, ?, ?, ?)"...)
	}
	return string(b)
}

// EventsAfter returns up to limit events of a run with seq > afterSeq, in seq
// order (limit <= 0: 1000).
func (db *DB) EventsAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	rows, err := db.r.QueryContext(ctx, `SELECT body FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []engine.Event
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		var e engine.Event
		if err := json.Unmarshal(body, &e); err != nil {
			return nil, fmt.Errorf("store: events of run %s: stored event is corrupt: %w", runID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	return out, nil
}

// MaxSeq returns the highest stored event seq of a run (0 when none).
func (db *DB) MaxSeq(ctx context.Context, runID string) (int64, error) {
	var n sql.NullInt64
	if err := db.r.QueryRowContext(ctx, `SELECT MAX(seq) FROM events WHERE run_id = ?`, runID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: max seq of run %s: %w", runID, err)
	}
	return n.Int64, nil
}
