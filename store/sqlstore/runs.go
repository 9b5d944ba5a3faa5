package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// JSONText is v as stored JSON text, NULL for nil.
func JSONText(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if raw, ok := v.(json.RawMessage); ok { // encoded already (see preEncode)
		return string(raw), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// JSONMap is JSONText of a map, NULL for a nil one.
func JSONMap(v map[string]any) (any, error) {
	if v == nil {
		return nil, nil
	}
	return JSONText(v)
}

// NewRun is r with a new run's defaults (Kind "run", Status running,
// Started now), Started to the microsecond as stored, and its input as
// stored; a run without an id is ErrInvalid.
func NewRun(r store.Run, now time.Time) (store.Run, any, error) {
	if r.ID == "" {
		return r, nil, fmt.Errorf("store: create run: %w: no run id", store.ErrInvalid)
	}
	if r.Kind == "" {
		r.Kind = store.KindRun
	}
	if r.Status == "" {
		r.Status = chain.StatusRunning
	}
	if r.Started.IsZero() {
		r.Started = now
	}
	r.Started = FromMicros(Micros(r.Started))
	input, err := JSONMap(r.Input)
	if err != nil {
		return r, nil, fmt.Errorf("store: create run %s: input: %w", r.ID, err)
	}
	return r, input, nil
}

// CreateRun records a run before the engine starts it. Status defaults to
// running, Kind to "run", Started to now. When the run row already exists
// (the engine's first checkpoint or event got there first), its metadata is
// filled in from r.
func (s *Store) CreateRun(ctx context.Context, r store.Run) (*store.Run, error) {
	r, input, err := NewRun(r, s.now())
	if err != nil {
		return nil, err
	}
	err = s.writeTx(ctx, func(tx *Tx) error {
		// A trigger's firing first: a schedule tick already fired writes
		// nothing.
		if f, ok := RunFiring(r); ok {
			if err := s.insertFiring(ctx, tx, f); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, chain_id, chain_version, chain_name, parent_run_id, kind, input, status, started_at, trigger_kind, trigger_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
  chain_id = excluded.chain_id, chain_version = excluded.chain_version,
  chain_name = CASE WHEN excluded.chain_name <> '' THEN excluded.chain_name ELSE runs.chain_name END,
  parent_run_id = COALESCE(excluded.parent_run_id, runs.parent_run_id),
  kind = excluded.kind, input = COALESCE(excluded.input, runs.input),
  trigger_kind = COALESCE(excluded.trigger_kind, runs.trigger_kind), trigger_id = COALESCE(excluded.trigger_id, runs.trigger_id)`,
			r.ID, NullString(r.ChainID), NullInt(r.ChainVersion), r.ChainName, NullString(r.ParentRunID), r.Kind, input, string(r.Status), Micros(r.Started),
			NullString(r.TriggerKind), NullString(r.TriggerID))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: create run %s: %w", r.ID, err)
	}
	return &r, nil
}

const runCols = `id, chain_id, chain_version, chain_name, parent_run_id, kind, input, status, error, final_output, outputs, nodes_run, started_at, ended_at, duration_ms, trigger_kind, trigger_id, outcome`

// listCols are runCols for a listing, which never decodes a run's input or
// outputs: SQLite would still read and copy them (megabytes a run), so
// they are not selected; listBriefCols leave the final output out too
// (RunFilter.Brief).
const (
	listCols      = `id, chain_id, chain_version, chain_name, parent_run_id, kind, NULL, status, error, final_output, NULL, nodes_run, started_at, ended_at, duration_ms, trigger_kind, trigger_id, outcome`
	listBriefCols = `id, chain_id, chain_version, chain_name, parent_run_id, kind, NULL, status, error, NULL, NULL, nodes_run, started_at, ended_at, duration_ms, trigger_kind, trigger_id, outcome`
)

func scanRun(row interface{ Scan(...any) error }, full bool) (*store.Run, error) {
	var r store.Run
	var chainID, parent, input, errJSON, final, outputs, trigKind, trigID, outcome sql.NullString
	var version, ended, dur sql.NullInt64
	var started int64
	var status string
	if err := row.Scan(&r.ID, &chainID, &version, &r.ChainName, &parent, &r.Kind, &input, &status, &errJSON, &final, &outputs,
		&r.NodesRun, &started, &ended, &dur, &trigKind, &trigID, &outcome); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	r.ChainID, r.ChainVersion, r.ParentRunID = chainID.String, int(version.Int64), parent.String
	r.TriggerKind, r.TriggerID = trigKind.String, trigID.String
	r.Status, r.Outcome = chain.RunStatus(status), outcome.String
	r.Started, r.Ended, r.DurationMS = FromMicros(started), FromNullMicros(ended), dur.Int64
	if errJSON.Valid {
		r.Error = &engine.RunError{}
		if err := json.Unmarshal([]byte(errJSON.String), r.Error); err != nil {
			return nil, fmt.Errorf("run %s: stored error is corrupt: %w", r.ID, err)
		}
	}
	if final.Valid {
		if err := json.Unmarshal([]byte(final.String), &r.FinalOutput); err != nil {
			return nil, fmt.Errorf("run %s: stored final output is corrupt: %w", r.ID, err)
		}
	}
	if full {
		if input.Valid {
			if err := json.Unmarshal([]byte(input.String), &r.Input); err != nil {
				return nil, fmt.Errorf("run %s: stored input is corrupt: %w", r.ID, err)
			}
		}
		if outputs.Valid {
			if err := json.Unmarshal([]byte(outputs.String), &r.Outputs); err != nil {
				return nil, fmt.Errorf("run %s: stored outputs are corrupt: %w", r.ID, err)
			}
		}
	}
	return &r, nil
}

// GetRun returns a run with its per-node results (in the order the nodes
// first finished or paused).
func (s *Store) GetRun(ctx context.Context, id string) (*store.Run, error) {
	var r *store.Run
	err := s.readTx(ctx, func(tx *Tx) error {
		var err error
		r, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id), true)
		if err != nil {
			return err
		}
		if r.Nodes, err = runNodes(ctx, tx, id, ""); err != nil {
			return err
		}
		if r.Outputs == nil {
			r.Outputs = doneOutputs(r.Nodes)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: get run %s: %w", id, err)
	}
	return r, nil
}

// GetRunInfo returns a run's row without its node results and outputs: what
// existence checks, status checks and run headers need, at a fixed cost
// however many nodes the run has.
func (s *Store) GetRunInfo(ctx context.Context, id string) (*store.Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id), true)
	if err != nil {
		return nil, fmt.Errorf("store: get run %s: %w", id, err)
	}
	return r, nil
}

// GetRunNode returns what one node of a run did, folded from that node's
// checkpoint entries only; nil when the node has not finished or paused.
func (s *Store) GetRunNode(ctx context.Context, runID, nodeID string) (*engine.NodeResult, error) {
	var nodes []engine.NodeResult
	err := s.readTx(ctx, func(tx *Tx) error {
		var err error
		nodes, err = runNodes(ctx, tx, runID, nodeID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get node %s of run %s: %w", nodeID, runID, err)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	return &nodes[0], nil
}

// doneOutputs is every done node's output by node id: a run's outputs. Runs
// ended before schema 2 also kept a copy in runs.outputs, which is read
// instead when present.
func doneOutputs(nodes []engine.NodeResult) map[string]any {
	out := map[string]any{}
	for _, n := range nodes {
		if n.Status == engine.PhaseDone {
			out[n.NodeID] = n.Output
		}
	}
	return out
}

// ListRuns lists runs newest first, one page at a time (keyset pagination on
// (started_at DESC, id)). next is the cursor for the following page, "" after the
// last one. Inputs, outputs and node results are left out.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) (runs []store.Run, next string, err error) {
	p, err := s.ListRunsPage(ctx, f)
	if err != nil {
		return nil, "", err
	}
	return p.Runs, p.Older, nil
}

// ListRunsPage lists one page of runs newest first, filtered by chain and
// status, with the cursors of the older and newer pages. f.After (mutually
// exclusive with f.Before) walks back towards the newest runs.
func (s *Store) ListRunsPage(ctx context.Context, f store.RunFilter) (store.RunPage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	if f.Limit > 1000 {
		f.Limit = 1000
	}
	if f.Before != "" && f.After != "" {
		return store.RunPage{}, fmt.Errorf("store: list runs: %w: before and after together", store.ErrInvalid)
	}
	var where []string
	var args []any
	if f.ChainID != "" {
		where = append(where, "chain_id = ?")
		args = append(args, f.ChainID)
	}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.NodeID != "" {
		where = append(where, s.reachedNode)
		args = append(args, f.NodeID)
	}
	order := ` ORDER BY started_at DESC, id`
	switch {
	case f.Before != "":
		started, id, err := decodeCursor(f.Before)
		if err != nil {
			return store.RunPage{}, fmt.Errorf("store: list runs: %w", err)
		}
		// Rows after the cursor in (started_at DESC, id ASC) order, with a
		// plain range bound on started_at so that the index is used.
		where = append(where, "started_at <= ? AND (started_at < ? OR id > ?)")
		args = append(args, started, started, id)
	case f.After != "":
		started, id, err := decodeCursor(f.After)
		if err != nil {
			return store.RunPage{}, fmt.Errorf("store: list runs: %w", err)
		}
		// Rows before the cursor in that order, read backwards from it.
		where = append(where, "started_at >= ? AND (started_at > ? OR id < ?)")
		args = append(args, started, started, id)
		order = ` ORDER BY started_at ASC, id DESC`
	}
	cols := listCols
	if f.Brief {
		cols = listBriefCols
	}
	q := `SELECT ` + cols + ` FROM runs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += order + ` LIMIT ?`
	args = append(args, f.Limit+1)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return store.RunPage{}, fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	var runs []store.Run
	for rows.Next() {
		r, err := scanRun(rows, false)
		if err != nil {
			return store.RunPage{}, fmt.Errorf("store: list runs: %w", err)
		}
		runs = append(runs, *r)
	}
	if err := rows.Err(); err != nil {
		return store.RunPage{}, fmt.Errorf("store: list runs: %w", err)
	}
	more := len(runs) > f.Limit
	if more {
		runs = runs[:f.Limit]
	}
	var p store.RunPage
	if f.After != "" {
		slices.Reverse(runs)
		if len(runs) > 0 {
			// came back from an older page: there is one
			p.Older = encodeCursor(Micros(runs[len(runs)-1].Started), runs[len(runs)-1].ID)
			if more {
				p.Newer = encodeCursor(Micros(runs[0].Started), runs[0].ID)
			}
		}
	} else if len(runs) > 0 {
		if more {
			p.Older = encodeCursor(Micros(runs[len(runs)-1].Started), runs[len(runs)-1].ID)
		}
		if f.Before != "" {
			p.Newer = encodeCursor(Micros(runs[0].Started), runs[0].ID)
		}
	}
	p.Runs = runs
	return p, nil
}
