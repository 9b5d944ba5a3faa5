package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
)

// The statements a checkpoint append writes. Each backend decides how they
// reach the database (SQLite: prepared, one transaction; PostgreSQL: also
// pipelined, see its checkpoints.go); what they are is written once here.

// Stmt is one statement and its arguments, with ? placeholders.
type Stmt struct {
	Q    string
	Args []any
}

// ExecStmts runs sts in order (ExecPrepared).
func (t *Tx) ExecStmts(ctx context.Context, sts []Stmt) error {
	for _, st := range sts {
		if _, err := t.ExecPrepared(ctx, st.Q, st.Args...); err != nil {
			return err
		}
	}
	return nil
}

// EnsureRunStmt inserts a minimal run row when none exists, so that the
// run's checkpoints and events (which reference it) can be stored before,
// or without, CreateRun. A start record, when given, supplies input, chain
// name and parent.
func EnsureRunStmt(runID string, started int64, start *engine.StartRecord) (Stmt, error) {
	kind := store.KindRun
	var input any
	var chainName string
	var parent any
	if start != nil {
		var err error
		if input, err = JSONMap(start.Input); err != nil {
			return Stmt{}, fmt.Errorf("input: %w", err)
		}
		if start.Chain != nil {
			chainName = start.Chain.Name
		}
		if start.ParentRunID != "" {
			parent = start.ParentRunID
			kind = store.KindSubchain
		}
	}
	return Stmt{`INSERT INTO runs (id, chain_name, parent_run_id, kind, input, status, started_at)
VALUES (?, ?, ?, ?, ?, 'running', ?) ON CONFLICT (id) DO NOTHING`, []any{runID, chainName, parent, kind, input, started}}, nil
}

// EnsureRun runs EnsureRunStmt in tx.
func EnsureRun(ctx context.Context, tx *Tx, runID string, started int64, start *engine.StartRecord) error {
	st, err := EnsureRunStmt(runID, started, start)
	if err != nil {
		return err
	}
	_, err = tx.ExecPrepared(ctx, st.Q, st.Args...)
	return err
}

// CheckpointStmts are the statements that update the run row and its
// interrupts for entry n (time t), none for node results, in order.
func CheckpointStmts(runID string, n, t int64, cp *engine.Checkpoint) ([]Stmt, error) {
	switch cp.Kind {
	case engine.CheckpointStart:
		if cp.Start == nil {
			return nil, nil
		}
		input, err := JSONMap(cp.Start.Input)
		if err != nil {
			return nil, err
		}
		name := ""
		if cp.Start.Chain != nil {
			name = cp.Start.Chain.Name
		}
		return []Stmt{{`UPDATE runs SET status = 'running', ended_at = NULL,
  input = COALESCE(input, ?),
  chain_name = CASE WHEN chain_name = '' THEN ? ELSE chain_name END,
  parent_run_id = COALESCE(parent_run_id, ?)
WHERE id = ?`, []any{input, name, NullString(cp.Start.ParentRunID), runID}}}, nil

	case engine.CheckpointPause:
		r := cp.Pause
		if r == nil {
			return nil, nil
		}
		q, args, err := insertPause(runID, n, t, r)
		if err != nil {
			return nil, err
		}
		return []Stmt{{q, args}}, nil

	case engine.CheckpointResume:
		return []Stmt{{`UPDATE runs SET status = 'running', error = NULL, outcome = NULL, ended_at = NULL, duration_ms = NULL WHERE id = ?`, []any{runID}}}, nil

	case engine.CheckpointEnd:
		r := cp.End
		if r == nil {
			return nil, nil
		}
		var errJSON any
		if r.Error != nil {
			var err error
			if errJSON, err = JSONText(r.Error); err != nil {
				return nil, err
			}
		}
		final, err := JSONText(r.Final)
		if err != nil {
			return nil, err
		}
		// outputs stays NULL: GetRun builds it from the node results it reads
		// anyway, so the end of a run does not re-read and re-encode every
		// output (2.5 ms of a 1,000-node run).
		sts := []Stmt{{`UPDATE runs SET status = ?, error = ?, outcome = ?, final_output = ?, outputs = NULL, nodes_run = ?,
  ended_at = ?, duration_ms = (? - started_at) / 1000
WHERE id = ?`, []any{string(r.Status), errJSON, NullString(r.Outcome), final, r.NodesRun, t, t, runID}}}
		if r.Status != chain.StatusPaused {
			sts = append(sts, Stmt{`UPDATE run_interrupts SET claimed_at = ? WHERE run_id = ? AND claimed_at IS NULL`, []any{t, runID}})
		}
		return sts, nil
	}
	return nil, nil
}

// InsertCheckpoints inserts entries numbered n+1… into tx, after the chains
// they refer to, and applies each entry other than a node result to the run
// row and its interrupts; it returns the last entry's number. The caller has
// made sure of the run row and of n.
func InsertCheckpoints(ctx context.Context, tx *Tx, runID string, n int64, cps []engine.Checkpoint, enc *cplog.Encoded, now func() time.Time) (int64, error) {
	if err := StoreRunChains(ctx, tx, enc.Chains, now()); err != nil {
		return 0, err
	}
	// Rows go in with multi-row statements: one statement per group of
	// entries instead of one per entry (most of a run's cost in SQLite, a
	// round trip each on PostgreSQL).
	for start := 0; start < len(cps); {
		end := min(start+CheckpointRowsPerStatement, len(cps))
		args := make([]any, 0, checkpointCols*(end-start))
		for i := start; i < end; i++ {
			args = append(args, runID, n+int64(i-start)+1, cps[i].Kind, CheckpointNodeID(&cps[i]), enc.ChainRefs[i], cps[i].EventSeq, CheckpointTime(&cps[i], now), enc.Bodies[i])
		}
		if _, err := tx.ExecPrepared(ctx, CheckpointInsertSQL[end-start], args...); err != nil {
			return 0, err
		}
		// Entries other than node results may change the run row or its
		// interrupts.
		for i := start; i < end; i++ {
			cp := &cps[i]
			if cp.Kind == engine.CheckpointNode {
				continue
			}
			ni := n + int64(i-start) + 1
			sts, err := CheckpointStmts(runID, ni, CheckpointTime(cp, now), cp)
			if err == nil {
				err = tx.ExecStmts(ctx, sts)
			}
			if err != nil {
				return 0, fmt.Errorf("%s entry %d: %w", cp.Kind, ni, err)
			}
		}
		n += int64(end - start)
		start = end
	}
	return n, nil
}

// CheckpointRowsPerStatement bounds a multi-row insert of entries (SQLite
// allows 32,766 parameters, PostgreSQL 65,535).
const (
	CheckpointRowsPerStatement = 64
	checkpointCols             = 8
)

// CheckpointInsertSQL[k] inserts k entries.
var CheckpointInsertSQL [CheckpointRowsPerStatement + 1]string

func init() {
	for k := 1; k <= CheckpointRowsPerStatement; k++ {
		CheckpointInsertSQL[k] = "INSERT INTO checkpoints (run_id, n, kind, node_id, chain_sha256, event_seq, created_at, body) VALUES " + placeholders(k, checkpointCols)
	}
}

// CheckpointNodeID is the node a node or pause entry is about, "" for other
// kinds.
func CheckpointNodeID(cp *engine.Checkpoint) string {
	switch {
	case cp.Node != nil:
		return cp.Node.NodeID
	case cp.Pause != nil:
		return cp.Pause.NodeID
	}
	return ""
}

// CheckpointTime is when an entry was made (now when it does not say), in
// unix microseconds.
func CheckpointTime(cp *engine.Checkpoint, now func() time.Time) int64 {
	if cp.Time.IsZero() {
		return Micros(now())
	}
	return Micros(cp.Time)
}

// placeholders returns "(?, …), (?, …)" for rows rows of cols columns.
func placeholders(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}
