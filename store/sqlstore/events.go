package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// eventsAfter reads up to limit events of a run with seq > afterSeq, in seq
// order (limit <= 0: 1000), from the batches that stop once maxBytes of
// stored batch bodies were read (maxBytes <= 0: no bound; at least one
// batch is always read). A batch holds at most 256 KiB unless it is one
// larger event, so a read holds about maxBytes plus one batch.
func eventsAfter(ctx context.Context, q Queryer, runID string, afterSeq int64, limit int, maxBytes int64) ([]engine.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	// From the batch holding afterSeq+1 (the last one starting at or before
	// it) onwards; both bounds use the (run_id, first_seq) key.
	rows, err := q.QueryContext(ctx, `SELECT body FROM event_batches
WHERE run_id = ?1 AND last_seq > ?2
  AND first_seq >= COALESCE((SELECT MAX(first_seq) FROM event_batches WHERE run_id = ?1 AND first_seq <= ?2 + 1), 0)
ORDER BY first_seq`, runID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var out []engine.Event
	var body []byte
	read := int64(0)
	for (maxBytes <= 0 || read < maxBytes) && len(out) < limit && rows.Next() {
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
		}
		read += int64(len(body))
		var batch []engine.Event
		if err := jsonv2.Unmarshal(body, &batch); err != nil {
			return nil, fmt.Errorf("store: events of run %s: stored events are corrupt: %w", runID, err)
		}
		for _, e := range batch {
			if e.Seq > afterSeq && len(out) < limit {
				out = append(out, e)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of run %s: %w", runID, err)
	}
	return out, nil
}

// EventsAfter returns up to limit events of a run with seq > afterSeq, in seq
// order (limit <= 0: 1000).
func (s *Store) EventsAfter(ctx context.Context, runID string, afterSeq int64, limit int) ([]engine.Event, error) {
	return eventsAfter(ctx, s.r, runID, afterSeq, limit, 0)
}

// EventsAfterBytes is EventsAfter that stops reading once about maxBytes of
// stored events were read.
func (s *Store) EventsAfterBytes(ctx context.Context, runID string, afterSeq int64, limit int, maxBytes int64) ([]engine.Event, error) {
	return eventsAfter(ctx, s.r, runID, afterSeq, limit, maxBytes)
}

// MaxSeq returns the highest stored event seq of a run (0 when none).
func (s *Store) MaxSeq(ctx context.Context, runID string) (int64, error) {
	n, err := MaxSeqOf(ctx, s.r, runID)
	if err != nil {
		return 0, fmt.Errorf("store: max seq of run %s: %w", runID, err)
	}
	return n, nil
}

// MaxSeqOf is MaxSeq read through q (a transaction).
func MaxSeqOf(ctx context.Context, q rowQueryer, runID string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, `SELECT last_seq FROM event_batches WHERE run_id = ? ORDER BY first_seq DESC LIMIT 1`, runID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// MaxBatchBody bounds one stored batch of events: a reader wanting one event
// decodes the whole row it sits in, so events with large outputs are spread
// over more rows instead of making one huge one.
const MaxBatchBody = 256 << 10

// EventBatch is one row of event_batches: a JSON array of one run's events
// First..Last in seq order.
type EventBatch struct {
	RunID       string
	First, Last int64
	Created     int64 // unix microseconds
	Body        string
}

// EventBatches groups events into the rows they are stored as: one per run
// per write, more when they are large (MaxBatchBody), in the order of each
// row's first event. bodies are the events' JSON; an event without a time
// makes its row's time now. A run's events must come in increasing seq order
// (else a *store.EventSeqError).
func EventBatches(events []engine.Event, bodies []string, now func() time.Time) ([]EventBatch, error) {
	type filling struct {
		run  string
		at   int // in out
		body strings.Builder
	}
	var out []EventBatch
	var rows []*filling
	// Each run's row being filled, found by a scan: a write holds the
	// events of one run or of a few, and a map per write costs more.
	var open []*filling
	for i := range events {
		e := &events[i]
		k := -1
		for j := range open {
			if open[j].run == e.RunID {
				k = j
				break
			}
		}
		var f *filling
		if k >= 0 {
			f = open[k]
			if last := out[f.at].Last; e.Seq <= last {
				return nil, &store.EventSeqError{RunID: e.RunID, Seq: e.Seq, After: last}
			}
			if f.body.Len()+len(bodies[i]) > MaxBatchBody {
				f = nil // full: start another row
			}
		}
		if f == nil {
			t := Micros(e.Time)
			if t == 0 {
				t = Micros(now())
			}
			f = &filling{run: e.RunID, at: len(out)}
			f.body.Grow(min(MaxBatchBody, 64<<10))
			f.body.WriteByte('[')
			if k >= 0 {
				open[k] = f
			} else {
				open = append(open, f)
			}
			rows = append(rows, f)
			out = append(out, EventBatch{RunID: e.RunID, First: e.Seq, Created: t})
		} else {
			f.body.WriteByte(',')
		}
		f.body.WriteString(bodies[i])
		out[f.at].Last = e.Seq
	}
	for _, f := range rows {
		f.body.WriteByte(']')
		out[f.at].Body = f.body.String()
	}
	return out, nil
}

// EventBodies encodes events as they are stored, for EventBatches; its
// error is the store's answer to AppendEvents.
func EventBodies(events []engine.Event) ([]string, error) {
	bodies := make([]string, len(events))
	for i := range events {
		b, err := json.Marshal(&events[i])
		if err != nil {
			return nil, fmt.Errorf("store: append events of run %s: event %d: %w", events[i].RunID, events[i].Seq, err)
		}
		bodies[i] = string(b)
	}
	return bodies, nil
}
