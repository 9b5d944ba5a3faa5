package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/sqlstore"
)

// DB implements engine.Checkpointer.
var _ engine.Checkpointer = (*DB)(nil)

// ensureRun inserts a minimal run row when none exists, so that the run's
// checkpoints and events (which reference it) can be stored before, or
// without, CreateRun. A start record, when given, supplies input, chain name
// and parent.
func (db *DB) ensureRun(ctx context.Context, tx *Tx, runID string, started int64, start *engine.StartRecord) error {
	kind := store.KindRun
	var input any
	var chainName string
	var parent any
	if start != nil {
		var err error
		if input, err = sqlstore.JSONMap(start.Input); err != nil {
			return fmt.Errorf("input: %w", err)
		}
		if start.Chain != nil {
			chainName = start.Chain.Name
		}
		if start.ParentRunID != "" {
			parent = start.ParentRunID
			kind = store.KindSubchain
		}
	}
	_, err := tx.ExecPrepared(ctx, `INSERT INTO runs (id, chain_name, parent_run_id, kind, input, status, started_at)
VALUES (?, ?, ?, ?, ?, 'running', ?) ON CONFLICT (id) DO NOTHING`, runID, chainName, parent, kind, input, started)
	return err
}

// Append adds checkpoint entries to a run's log in one transaction, and keeps
// the run row and its pending interrupts up to date. Node results are not
// stored apart from the log: GetRun folds them from it.
func (db *DB) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	if len(cps) == 0 {
		return nil
	}
	enc, err := cplog.Encode(cps)
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	err = db.appendCommit(ctx, runID, cps, enc)
	if err != nil {
		if _, cached := db.lastN.Load(runID); cached {
			// The cached position may be stale (another process appended):
			// retry once from the database.
			db.lastN.Delete(runID)
			err = db.appendCommit(ctx, runID, cps, enc)
		}
	}
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	return nil
}

// appendCommit appends in one transaction and maintains the lastN cache.
func (db *DB) appendCommit(ctx context.Context, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error {
	var last int64
	err := db.writeTx(ctx, func(tx *Tx) error {
		var err error
		last, err = db.appendTx(ctx, tx, runID, cps, enc)
		return err
	})
	if err != nil {
		db.lastN.Delete(runID)
		return err
	}
	ended := false
	for i := range cps {
		if cps[i].Kind == engine.CheckpointEnd {
			ended = true
		}
	}
	if ended {
		// Forget runs that stopped; a resume reads the position again.
		db.lastN.Delete(runID)
	} else {
		db.lastN.Store(runID, last)
	}
	return nil
}

func cpTime(cp *engine.Checkpoint, now func() time.Time) int64 {
	if cp.Time.IsZero() {
		return sqlstore.Micros(now())
	}
	return sqlstore.Micros(cp.Time)
}

// appendTx appends entries inside tx and returns the last entry's number.
// For a run this process is writing, the run row's existence and the log's
// last entry number come from the lastN cache instead of two queries.
func (db *DB) appendTx(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) (int64, error) {
	var n int64
	if v, ok := db.lastN.Load(runID); ok && cps[0].Start == nil {
		n = v.(int64)
	} else {
		if err := db.ensureRun(ctx, tx, runID, cpTime(&cps[0], db.now), cps[0].Start); err != nil {
			return 0, err
		}
		if err := tx.QueryRowPrepared(ctx, `SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = ?`, runID).Scan(&n); err != nil {
			return 0, err
		}
	}
	if err := sqlstore.StoreRunChains(ctx, tx, enc.Chains, db.now()); err != nil {
		return 0, err
	}
	// Rows go in with multi-row statements: one statement per group of
	// entries instead of one per entry (most of a run's cost in SQLite).
	for start := 0; start < len(cps); {
		end := min(start+cpRowsPerStatement, len(cps))
		args := make([]any, 0, cpCols*(end-start))
		for i := start; i < end; i++ {
			args = append(args, runID, n+int64(i-start)+1, cps[i].Kind, cpNodeID(&cps[i]), enc.ChainRefs[i], cps[i].EventSeq, cpTime(&cps[i], db.now), enc.Bodies[i])
		}
		if _, err := tx.ExecPrepared(ctx, checkpointInsertSQLs[end-start], args...); err != nil {
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
			if err := db.applyCheckpoint(ctx, tx, runID, ni, cpTime(cp, db.now), cp); err != nil {
				return 0, fmt.Errorf("%s entry %d: %w", cp.Kind, ni, err)
			}
		}
		n += int64(end - start)
		start = end
	}
	return n, nil
}

// cpRowsPerStatement bounds a multi-row insert (SQLite allows 32,766 parameters).
const (
	cpRowsPerStatement = 64
	cpCols             = 8
)

var checkpointInsertSQLs [cpRowsPerStatement + 1]string

func init() {
	for k := 1; k <= cpRowsPerStatement; k++ {
		checkpointInsertSQLs[k] = "INSERT INTO checkpoints (run_id, n, kind, node_id, chain_sha256, event_seq, created_at, body) VALUES " + placeholders(k, cpCols)
	}
}

// cpNodeID is the node a node or pause entry is about, "" for other kinds.
func cpNodeID(cp *engine.Checkpoint) string {
	switch {
	case cp.Node != nil:
		return cp.Node.NodeID
	case cp.Pause != nil:
		return cp.Pause.NodeID
	}
	return ""
}

// placeholders returns "(?, …), (?, …)" for rows rows of cols columns.
func placeholders(rows, cols int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

// applyCheckpoint updates the run row and interrupts from one entry.
func (db *DB) applyCheckpoint(ctx context.Context, tx *Tx, runID string, n, t int64, cp *engine.Checkpoint) error {
	switch cp.Kind {
	case engine.CheckpointStart:
		if cp.Start == nil {
			return nil
		}
		input, err := sqlstore.JSONMap(cp.Start.Input)
		if err != nil {
			return err
		}
		name := ""
		if cp.Start.Chain != nil {
			name = cp.Start.Chain.Name
		}
		_, err = tx.ExecPrepared(ctx, `UPDATE runs SET status = 'running', ended_at = NULL,
  input = COALESCE(input, ?),
  chain_name = CASE WHEN chain_name = '' THEN ? ELSE chain_name END,
  parent_run_id = COALESCE(parent_run_id, ?)
WHERE id = ?`, input, name, sqlstore.NullString(cp.Start.ParentRunID), runID)
		return err

	case engine.CheckpointPause:
		r := cp.Pause
		if r == nil {
			return nil
		}
		q, args, err := sqlstore.InsertPause(runID, n, t, r)
		if err != nil {
			return err
		}
		_, err = tx.ExecPrepared(ctx, q, args...)
		return err

	case engine.CheckpointResume:
		_, err := tx.ExecPrepared(ctx, `UPDATE runs SET status = 'running', error = NULL, ended_at = NULL, duration_ms = NULL WHERE id = ?`, runID)
		return err

	case engine.CheckpointEnd:
		r := cp.End
		if r == nil {
			return nil
		}
		var errJSON any
		if r.Error != nil {
			var err error
			if errJSON, err = sqlstore.JSONText(r.Error); err != nil {
				return err
			}
		}
		final, err := sqlstore.JSONText(r.Final)
		if err != nil {
			return err
		}
		// outputs stays NULL: GetRun builds it from the node results it reads
		// anyway, so the end of a run does not re-read and re-encode every
		// output (2.5 ms of a 1,000-node run).
		if _, err := tx.ExecPrepared(ctx, `UPDATE runs SET status = ?, error = ?, final_output = ?, outputs = NULL, nodes_run = ?,
  ended_at = ?, duration_ms = (? - started_at) / 1000
WHERE id = ?`, string(r.Status), errJSON, final, r.NodesRun, t, t, runID); err != nil {
			return err
		}
		if r.Status != engine.StatusPaused {
			_, err := tx.ExecPrepared(ctx, `UPDATE run_interrupts SET claimed_at = ? WHERE run_id = ? AND claimed_at IS NULL`, t, runID)
			return err
		}
	}
	return nil
}
