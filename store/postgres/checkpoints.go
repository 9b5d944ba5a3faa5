package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store/cplog"
	"github.com/chainstudio/studio/store/sqlstore"
)

// DB implements engine.Checkpointer.
var _ engine.Checkpointer = (*DB)(nil)

// Append adds checkpoint entries to a run's log in one transaction, and keeps
// the run row and its pending interrupts up to date. Node results are not
// stored apart from the log: GetRun folds them from it.
func (db *DB) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	if len(cps) == 0 {
		return nil
	}
	enc, err := db.cpEnc.Encode(cps)
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	_, cached := db.lastN.Of(runID)
	err = db.appendCommit(ctx, runID, cps, enc)
	if err != nil && cached && isUniqueViolation(err) {
		// The cached position was stale (another writer appended; the
		// failed commit forgot it): retry once from the database.
		err = db.appendCommit(ctx, runID, cps, enc)
	}
	if err != nil {
		return fmt.Errorf("store: append checkpoint to run %s: %w", runID, err)
	}
	return nil
}

// appendCommit appends in one transaction and maintains the lastN cache.
func (db *DB) appendCommit(ctx context.Context, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) error {
	var last int64
	var err error
	if n, ok := db.nodeOnlyAppend(runID, cps, enc); ok {
		// Node results of a run this process is writing: one INSERT of
		// every entry (arrays, one per column), in its own implicit
		// transaction: one round trip, however many entries. The (run_id,
		// n) key still refuses an entry number another writer took; the
		// retry in Append then goes the long way.
		col := db.cpColumns(n, cps, enc)
		var epoch any // NULL: a run this process does not own, no check
		f := db.fenceOf(runID)
		if f != nil {
			epoch = f.epoch
		}
		var res sql.Result
		if db.closed.Load() {
			err = errClosed
		} else {
			res, err = db.w.ExecContext(ctx, checkpointNodesSQL, runID, col.ns, col.kinds, col.nodes, col.refs, col.seqs, col.times, enc.Bodies, epoch)
		}
		if err == nil && f != nil {
			if k, kerr := res.RowsAffected(); kerr != nil {
				err = kerr
			} else if k == 0 {
				err = f.refused(runID)
			}
		}
		last = n + int64(len(cps))
	} else {
		last, err = db.appendPipelined(ctx, runID, cps, enc)
	}
	if err != nil {
		db.lastN.Forget(runID)
		return err
	}
	db.lastN.Appended(runID, cps, last)
	return nil
}

// cpColumnArrays holds entries as one array per column, numbered from n+1: the
// form one INSERT … unnest takes however many entries there are.
type cpColumnArrays struct {
	ns, seqs, times []int64
	kinds, nodes    []string
	refs            []*string
}

func (db *DB) cpColumns(n int64, cps []engine.Checkpoint, enc *cplog.Encoded) cpColumnArrays {
	c := cpColumnArrays{ns: make([]int64, len(cps)), kinds: make([]string, len(cps)), nodes: make([]string, len(cps)), refs: make([]*string, len(cps)),
		seqs: make([]int64, len(cps)), times: make([]int64, len(cps))}
	for i := range cps {
		c.ns[i], c.kinds[i], c.nodes[i] = n+int64(i)+1, cps[i].Kind, sqlstore.CheckpointNodeID(&cps[i])
		if ref, ok := enc.ChainRefs[i].(string); ok {
			c.refs[i] = &ref
		}
		c.seqs[i], c.times[i] = cps[i].EventSeq, sqlstore.CheckpointTime(&cps[i], db.now)
	}
	return c
}

// checkpointRowsSQL inserts entries given as one array per column.
const checkpointRowsSQL = `INSERT INTO checkpoints (run_id, n, kind, node_id, chain_sha256, event_seq, created_at, body)
SELECT $1::VARCHAR, v.* FROM unnest($2::BIGINT[], $3::VARCHAR[], $4::VARCHAR[], $5::VARCHAR[], $6::BIGINT[], $7::BIGINT[], $8::TEXT[]) AS v`

// appendPipelined is appendTx (with asyncCommit for progress) in at most
// two round trips instead of one per statement (ten for a run's first
// append: begin, run row, lock, last entry, chain, three inserts, run row,
// commit; each round trip also waits for the server to be scheduled, which
// on a busy machine is most of it). The transaction's statements go in
// pipelines on one connection: the first begins and, when the run's
// position is not cached or the run is owned here, makes sure of the run
// row, locks it and reads its epoch and last entry number; the second
// stores the chain, inserts every entry with one statement, updates the
// run row and interrupts as the entries say, and commits. A cached
// position of a run not owned here needs no read: one round trip.
func (db *DB) appendPipelined(ctx context.Context, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) (int64, error) {
	if db.closed.Load() {
		return 0, errClosed
	}
	f := db.fenceOf(runID)
	var n int64
	known := false
	if v, ok := db.lastN.Of(runID); ok && cps[0].Start == nil {
		n, known = v, true
	}
	var begin []sqlstore.Stmt
	if !known {
		st, err := sqlstore.EnsureRunStmt(runID, sqlstore.CheckpointTime(&cps[0], db.now), cps[0].Start)
		if err != nil {
			return 0, err
		}
		begin = append(begin, st)
	}
	lock := !known || f != nil

	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return 0, unavailable(err)
	}
	// A connection left inside a transaction (an error half-way) is closed
	// on release, not reused.
	defer c.Release()
	rollback := func() {
		if c.Conn().PgConn().TxStatus() != 'I' {
			_, _ = c.Exec(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}

	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if progressOnly(cps) {
		b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	}
	if lock {
		for _, st := range begin {
			b.Queue(rebind(st.Q), st.Args...)
		}
		b.Queue(`SELECT epoch FROM runs WHERE id = $1 FOR UPDATE`, runID)
		if !known {
			b.Queue(`SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = $1`, runID)
		}
		var epoch int64
		err := sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
			for range b.Len() - 1 - boolInt(!known) {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			if err := br.QueryRow().Scan(&epoch); err != nil {
				return err
			}
			if !known {
				return br.QueryRow().Scan(&n)
			}
			return nil
		})
		if err != nil {
			rollback()
			return 0, unavailable(err)
		}
		if f != nil && f.epoch != epoch {
			rollback()
			return 0, f.refused(runID)
		}
		b = &pgx.Batch{}
	}
	for ref, doc := range enc.Chains {
		b.Queue(`INSERT INTO run_chains (sha256, doc, created_at) VALUES ($1, $2, $3) ON CONFLICT (sha256) DO NOTHING`, ref, doc, sqlstore.Micros(db.now()))
	}
	col := db.cpColumns(n, cps, enc)
	b.Queue(checkpointRowsSQL, runID, col.ns, col.kinds, col.nodes, col.refs, col.seqs, col.times, enc.Bodies)
	for i := range cps {
		if cps[i].Kind == engine.CheckpointNode {
			continue
		}
		sts, err := sqlstore.CheckpointStmts(runID, col.ns[i], col.times[i], &cps[i])
		if err != nil {
			rollback()
			return 0, fmt.Errorf("%s entry %d: %w", cps[i].Kind, col.ns[i], err)
		}
		for _, st := range sts {
			b.Queue(rebind(st.Q), st.Args...)
		}
	}
	b.Queue(`COMMIT`)
	err = sendBatch(ctx, c, b, func(br pgx.BatchResults) error {
		for range b.Len() {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		rollback()
		return 0, unavailable(err)
	}
	return n + int64(len(cps)), nil
}

// sendBatch sends b on c, reads its results with read, and closes them.
func sendBatch(ctx context.Context, c *pgxpool.Conn, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	br := c.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Progress and milestones. A run's node entries and events are its
// progress; its start, pauses, resumes and end are milestones. Progress
// commits without waiting for the WAL flush (synchronous_commit off, for
// that transaction only): a commit's fsync is most of what persisting a
// run costs, and PostgreSQL flushes the WAL in order, so the next milestone
// (whose commit waits for the flush) makes everything before it durable.
// What a crash of the database server (never of a studio process) can lose
// is the progress since the last milestone, less than a second: those
// nodes run again when the run is taken over or resumed, as the node in
// flight does at a crash. SQLite's WAL with synchronous=NORMAL gives the
// same guarantee.

// asyncCommit makes tx commit without waiting for the WAL flush.
func asyncCommit(ctx context.Context, tx *Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT set_config('synchronous_commit', 'off', true)`)
	return err
}

// progressOnly reports whether cps holds progress only (no milestone).
func progressOnly(cps []engine.Checkpoint) bool {
	for i := range cps {
		if k := cps[i].Kind; k != engine.CheckpointNode && k != engine.CheckpointEdges {
			return false
		}
	}
	return true
}

// nodeOnlyAppend says whether cps can go in with a single INSERT: the run's
// last entry number is cached (so its row exists), and every entry is a
// node result (no run row or interrupt to update, no chain to store). It
// returns the last entry number.
func (db *DB) nodeOnlyAppend(runID string, cps []engine.Checkpoint, enc *cplog.Encoded) (int64, bool) {
	if len(enc.Chains) > 0 {
		return 0, false
	}
	for i := range cps {
		if cps[i].Kind != engine.CheckpointNode {
			return 0, false
		}
	}
	return db.lastN.Of(runID)
}

// appendTx appends entries inside tx and returns the last entry's number.
// For a run this process is writing, the run row's existence and the log's
// last entry number come from the lastN cache instead of two queries.
func (db *DB) appendTx(ctx context.Context, tx *Tx, runID string, cps []engine.Checkpoint, enc *cplog.Encoded) (int64, error) {
	var n int64
	if v, ok := db.lastN.Of(runID); ok && cps[0].Start == nil {
		n = v
		if db.fenceOf(runID) != nil {
			if err := db.lockRun(ctx, tx, runID); err != nil {
				return 0, err
			}
		}
	} else {
		if err := sqlstore.EnsureRun(ctx, tx, runID, sqlstore.CheckpointTime(&cps[0], db.now), cps[0].Start); err != nil {
			return 0, err
		}
		if err := db.lockRun(ctx, tx, runID); err != nil {
			return 0, err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(n), 0) FROM checkpoints WHERE run_id = ?`, runID).Scan(&n); err != nil {
			return 0, err
		}
	}
	return sqlstore.InsertCheckpoints(ctx, tx, runID, n, cps, enc, db.now)
}

// checkpointNodesSQL inserts node entries given as one array per column,
// in one statement. With an epoch ($9, the run owned here) the check is
// folded in: FOR SHARE waits for a concurrent take of the run and reads
// its outcome, and a stale epoch inserts nothing. Node entries are
// progress, so the statement's own transaction commits without waiting for
// the WAL flush (set_config runs before the commit that reads it).
const checkpointNodesSQL = `INSERT INTO checkpoints (run_id, n, kind, node_id, chain_sha256, event_seq, created_at, body)
SELECT ?1::VARCHAR, v.* FROM unnest(?2::BIGINT[], ?3::VARCHAR[], ?4::VARCHAR[], ?5::VARCHAR[], ?6::BIGINT[], ?7::BIGINT[], ?8::TEXT[]) AS v,
  (SELECT set_config('synchronous_commit', 'off', true)) AS a
WHERE ?9::BIGINT IS NULL OR EXISTS (SELECT 1 FROM runs WHERE id = ?1::VARCHAR AND epoch = ?9 FOR SHARE)`

// ClaimInterruptTx claims a run's unclaimed pause pauseID ("": the first),
// as ClaimInterrupt does, inside tx, and marks the run running again: the
// caller commits the claim with the job that continues the run, so that a
// claimed pause always has its continuation.
func (db *DB) ClaimInterruptTx(ctx context.Context, tx pgx.Tx, runID, pauseID string) (string, error) {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM checkpoints WHERE run_id = $1 LIMIT 1`, runID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &engine.ChainCheckpointError{RunID: runID, Msg: "no such run"}
	}
	if err != nil {
		return "", fmt.Errorf("store: claim interrupt of run %s: %w", runID, err)
	}
	var n int64
	var nodeID string
	// The conditional UPDATE is re-checked after a concurrent claim
	// commits, so of concurrent claims one wins.
	err = tx.QueryRow(ctx, `UPDATE run_interrupts SET claimed_at = $2
WHERE run_id = $1 AND claimed_at IS NULL AND n = (SELECT min(n) FROM run_interrupts
  WHERE run_id = $1 AND claimed_at IS NULL AND ($3 = '' OR node_id = $3))
RETURNING n, node_id`, runID, sqlstore.Micros(db.now()), pauseID).Scan(&n, &nodeID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &engine.AlreadyResumedError{RunID: runID, PauseID: pauseID}
	}
	if err != nil {
		return "", fmt.Errorf("store: claim interrupt of run %s: %w", runID, err)
	}
	// A take of the run, as a job start is: the epoch moves on (whoever held
	// the run before can no longer write), and an old cancel does not apply
	// to the continuation.
	if _, err := tx.Exec(ctx, `UPDATE runs SET status = CASE WHEN status = 'paused' THEN 'running' ELSE status END,
  epoch = epoch + 1, owner = NULL, lease_until = NULL, cancel_requested = FALSE
WHERE id = $1`, runID); err != nil {
		return "", fmt.Errorf("store: claim interrupt of run %s: %w", runID, err)
	}
	return nodeID, nil
}
