package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// InsertModelCalls indexes the model_usage progress events among events
// (store.UsageStore); keep says which runs' events are written (nil: all).
// An event stored twice is indexed once.
func InsertModelCalls(ctx context.Context, tx Writer, events []engine.Event, keep func(runID string) bool) error {
	for i := range events {
		mc, ok := store.ModelCallOf(&events[i])
		if !ok || (keep != nil && !keep(mc.RunID)) {
			continue
		}
		reported := 0
		if mc.Reported {
			reported = 1
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO model_calls (run_id, seq, node_id, agent, model, input_tokens, output_tokens, reported, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING`,
			mc.RunID, mc.Seq, mc.NodeID, mc.Agent, mc.Model, mc.InputTokens, mc.OutputTokens, reported, mc.Time.UnixMicro()); err != nil {
			return fmt.Errorf("index the model call of event %d: %w", mc.Seq, err)
		}
	}
	return nil
}

// runUsage returns a run's model calls in seq order.
func runUsage(ctx context.Context, q Queryer, runID string) ([]store.ModelCall, error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, node_id, agent, model, input_tokens, output_tokens, reported, created_at
FROM model_calls WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: model calls of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []store.ModelCall{}
	for rows.Next() {
		c := store.ModelCall{RunID: runID}
		var reported, at int64
		if err := rows.Scan(&c.Seq, &c.NodeID, &c.Agent, &c.Model, &c.InputTokens, &c.OutputTokens, &reported, &at); err != nil {
			return nil, fmt.Errorf("store: model calls of run %s: %w", runID, err)
		}
		c.Reported, c.Time = reported != 0, time.UnixMicro(at).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: model calls of run %s: %w", runID, err)
	}
	return out, nil
}

// usage sums model calls (store.UsageStore.Usage).
func usage(ctx context.Context, q Queryer, f store.UsageFilter) ([]store.UsageRow, error) {
	if f.By != store.UsageByChain && f.By != store.UsageByAgent {
		return nil, store.Errorf(store.EINVALID, "usage: by must be %q or %q, not %q", store.UsageByChain, store.UsageByAgent, f.By)
	}
	if f.Bucket < time.Minute {
		return nil, store.Errorf(store.EINVALID, "usage: the bucket must be at least a minute, not %v", f.Bucket)
	}
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	f.Limit = min(f.Limit, 10000)
	width := f.Bucket.Microseconds()
	key, name := `COALESCE(r.chain_id, '')`, `r.chain_name`
	if f.By == store.UsageByAgent {
		key, name = `m.agent`, `m.agent`
	}
	// The bucket is integer arithmetic on the stored microseconds, the same
	// in both backends.
	bucket := `(m.created_at - m.created_at % ?)`
	where, args := `WHERE 1 = 1`, []any{width}
	if !f.Since.IsZero() {
		where += ` AND m.created_at >= ?`
		args = append(args, f.Since.UnixMicro())
	}
	if !f.Until.IsZero() {
		where += ` AND m.created_at < ?`
		args = append(args, f.Until.UnixMicro())
	}
	if !f.All {
		where += ` AND ` + key + ` = ?`
		args = append(args, f.Key)
	}
	args = append(args, f.Limit)
	rows, err := q.QueryContext(ctx, `SELECT `+key+`, MAX(`+name+`), m.model, `+bucket+` AS b,
  COUNT(*), COUNT(DISTINCT m.run_id), SUM(m.input_tokens), SUM(m.output_tokens), SUM(1 - m.reported)
FROM model_calls m JOIN runs r ON r.id = m.run_id
`+where+`
GROUP BY `+key+`, m.model, b
ORDER BY b DESC, `+key+`, m.model
LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: usage by %s: %w", f.By, err)
	}
	defer rows.Close()
	out := []store.UsageRow{}
	for rows.Next() {
		var r store.UsageRow
		var b int64
		if err := rows.Scan(&r.Key, &r.Name, &r.Model, &b, &r.Calls, &r.Runs, &r.InputTokens, &r.OutputTokens, &r.Unreported); err != nil {
			return nil, fmt.Errorf("store: usage by %s: %w", f.By, err)
		}
		r.Bucket = time.UnixMicro(b).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: usage by %s: %w", f.By, err)
	}
	return out, nil
}

// setRunTrace records a run's traceparent unless it has one.
func setRunTrace(ctx context.Context, tx Writer, runID, traceparent string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO run_traces (run_id, traceparent) VALUES (?, ?) ON CONFLICT (run_id) DO NOTHING`,
		runID, cut(traceparent, 64)); err != nil {
		return fmt.Errorf("store: trace of run %s: %w", runID, err)
	}
	return nil
}

// runTrace returns a run's traceparent, "" for none.
func runTrace(ctx context.Context, q Queryer, runID string) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT traceparent FROM run_traces WHERE run_id = ?`, runID)
	if err != nil {
		return "", fmt.Errorf("store: trace of run %s: %w", runID, err)
	}
	defer rows.Close()
	var tp string
	if rows.Next() {
		if err := rows.Scan(&tp); err != nil {
			return "", fmt.Errorf("store: trace of run %s: %w", runID, err)
		}
	}
	return tp, errors.Join(rows.Err())
}

var _ store.UsageStore = (*Store)(nil)

// RunUsage implements store.UsageStore.
func (s *Store) RunUsage(ctx context.Context, runID string) ([]store.ModelCall, error) {
	return runUsage(ctx, s.r, runID)
}

// Usage implements store.UsageStore.
func (s *Store) Usage(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error) {
	return usage(ctx, s.r, f)
}

// SetRunTrace implements store.UsageStore.
func (s *Store) SetRunTrace(ctx context.Context, runID, traceparent string) error {
	return s.writeTx(ctx, func(tx *Tx) error { return setRunTrace(ctx, tx, runID, traceparent) })
}

// RunTrace implements store.UsageStore.
func (s *Store) RunTrace(ctx context.Context, runID string) (string, error) {
	return runTrace(ctx, s.r, runID)
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
