package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// Ownership of an executing run (docs/deploy.md, "Ownership"). The process
// that executes a run holds a lease on its row: owner, epoch, lease_until.
// Every take bumps the epoch; this process remembers the epoch of each run
// it owns (a fence), and every checkpoint and event write of such a run
// checks, inside its transaction and under the run row's lock, that the row
// still has that epoch. A process that was paused or cut off past its lease
// can therefore never write after another one took the run over.
//
// Lease times are the database server's clock (clock_timestamp()), so the
// processes' clocks never have to agree.

// nowMicros is the server's clock in unix microseconds, in SQL.
const nowMicros = `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::BIGINT`

// fence is this process's hold on a run it owns.
type fence struct {
	epoch int64
	once  sync.Once
	lost  func()
}

// fenceOf returns the fence of a run this process owns, nil for others
// (runs without a lease: ad-hoc runs, tests, SQLite-like use).
func (db *DB) fenceOf(runID string) *fence {
	if v, ok := db.fences.Load(runID); ok {
		return v.(*fence)
	}
	return nil
}

// refused reports a write refused for a stale epoch: the owner hears it
// once, and the caller gets a *store.LeaseLostError.
func (f *fence) refused(runID string) error {
	if f.lost != nil {
		f.once.Do(f.lost)
	}
	return &store.LeaseLostError{RunID: runID, Epoch: f.epoch}
}

// TakeRun implements store.LeaseStore: in one statement, the run (queued or
// running) gets owner, a bumped epoch and a lease until ttl from now; a
// queued run turns running.
func (db *DB) TakeRun(ctx context.Context, runID, owner string, ttl time.Duration, lost func()) (*store.RunLease, error) {
	if db.closed.Load() {
		return nil, errClosed
	}
	var l store.RunLease
	err := db.pool.QueryRow(ctx, `UPDATE runs SET owner = $2, epoch = epoch + 1, lease_until = `+nowMicros+` + $3,
  status = CASE WHEN status = 'queued' THEN 'running' ELSE status END
WHERE id = $1 AND status IN ('queued', 'running')
RETURNING epoch, cancel_requested`, runID, owner, ttl.Microseconds()).Scan(&l.Epoch, &l.CancelRequested)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: take run %s: %w", runID, unavailable(err))
	}
	// The cached position of the log may predate another owner's entries.
	db.lastN.Forget(runID)
	db.fences.Store(runID, &fence{epoch: l.Epoch, lost: lost})
	return &l, nil
}

// RenewRun implements store.LeaseStore.
func (db *DB) RenewRun(ctx context.Context, runID string, epoch int64, ttl time.Duration) (bool, error) {
	if db.closed.Load() {
		return false, errClosed
	}
	var asked bool
	err := db.pool.QueryRow(ctx, `UPDATE runs SET lease_until = `+nowMicros+` + $3 WHERE id = $1 AND epoch = $2 RETURNING cancel_requested`,
		runID, epoch, ttl.Microseconds()).Scan(&asked)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, &store.LeaseLostError{RunID: runID, Epoch: epoch}
	}
	if err != nil {
		return false, fmt.Errorf("store: renew the lease of run %s: %w", runID, unavailable(err))
	}
	return asked, nil
}

// ReleaseRun implements store.LeaseStore: the run stopped executing here.
func (db *DB) ReleaseRun(ctx context.Context, runID string, epoch int64) error {
	if v, ok := db.fences.Load(runID); ok && v.(*fence).epoch == epoch {
		db.fences.CompareAndDelete(runID, v)
	}
	if db.closed.Load() {
		return errClosed
	}
	if _, err := db.pool.Exec(ctx, `UPDATE runs SET owner = NULL, lease_until = NULL WHERE id = $1 AND epoch = $2`, runID, epoch); err != nil {
		return fmt.Errorf("store: release run %s: %w", runID, unavailable(err))
	}
	return nil
}

// TakeoverTx fences out a run's owner inside tx (the reaper's, with the
// job that continues the run): the epoch is bumped and the lease cleared,
// so the previous owner's writes are refused from the commit on.
func (db *DB) TakeoverTx(ctx context.Context, tx pgx.Tx, runID string) error {
	if _, err := tx.Exec(ctx, `UPDATE runs SET epoch = epoch + 1, owner = NULL, lease_until = NULL WHERE id = $1`, runID); err != nil {
		return fmt.Errorf("store: take over run %s: %w", runID, err)
	}
	return nil
}

// RequestCancelTx sets a running run's cancel flag inside tx (with River's
// cancel of its job): the owner's heartbeat reads it, so the cancel lands
// even when River's notification is lost.
func (db *DB) RequestCancelTx(ctx context.Context, tx pgx.Tx, runID string) error {
	if _, err := tx.Exec(ctx, `UPDATE runs SET cancel_requested = TRUE WHERE id = $1 AND status = 'running'`, runID); err != nil {
		return fmt.Errorf("store: cancel run %s: %w", runID, err)
	}
	return nil
}

// ClaimFailedTx claims a stopped run for a resume without a value, inside
// tx (with the job that continues it): in one conditional statement the
// run turns running again, its epoch moves on (as for every take) and an
// old cancel no longer applies. Of concurrent claims one wins; a run that
// is executing, waiting, paused or finished is a *engine.ChainResumeError,
// an unknown one a *engine.ChainCheckpointError.
func (db *DB) ClaimFailedTx(ctx context.Context, tx pgx.Tx, runID string) error {
	var claimed bool
	var status *string
	err := tx.QueryRow(ctx, `WITH claimed AS (
  UPDATE runs SET status = 'running', error = NULL, outcome = NULL, ended_at = NULL, duration_ms = NULL,
    epoch = epoch + 1, owner = NULL, lease_until = NULL, cancel_requested = FALSE
  WHERE id = $1 AND status IN ('failed', 'cancelled') RETURNING id)
SELECT EXISTS (SELECT 1 FROM claimed), (SELECT status FROM runs WHERE id = $1)`, runID).Scan(&claimed, &status)
	switch {
	case err != nil:
		return fmt.Errorf("store: claim run %s for a resume: %w", runID, err)
	case claimed:
		return nil
	case status == nil:
		return &engine.ChainCheckpointError{RunID: runID, Msg: "no such run"}
	case *status == string(chain.StatusFailed) || *status == string(chain.StatusCancelled):
		// Read before a concurrent claim committed; the UPDATE saw it.
		return &engine.ChainResumeError{ChainCheckpointError: engine.ChainCheckpointError{RunID: runID,
			Msg: "another resume took the run; it is executing again"}}
	}
	return &engine.ChainResumeError{ChainCheckpointError: engine.ChainCheckpointError{RunID: runID,
		Msg: fmt.Sprintf("the run is %s; only a failed or cancelled run can be resumed without a value", *status)}}
}

// lockRun locks a run's row until tx ends (the writes that read the run's
// log or events before appending to them take it first) and, for a run
// this process owns, refuses the write when the row's epoch is no longer
// this process's.
func (db *DB) lockRun(ctx context.Context, tx *Tx, runID string) error {
	var epoch int64
	if err := tx.QueryRowContext(ctx, `SELECT epoch FROM runs WHERE id = ? FOR UPDATE`, runID).Scan(&epoch); err != nil {
		return err
	}
	if f := db.fenceOf(runID); f != nil && f.epoch != epoch {
		return f.refused(runID)
	}
	return nil
}

// ExpiredRun is a run the reaper takes over: its lease passed while its
// newest job is still marked running (the job's worker died or was cut
// off), and that job's arguments.
type ExpiredRun struct {
	ID      string
	JobArgs []byte
}

// ExpiredRunsTx finds, locks (skipping rows another transaction holds) and
// returns up to limit runs whose lease expired: status queued or running,
// lease_until passed (or never set), and their newest job of kind jobKind
// in River's table still running, started more than grace ago (a job just
// fetched may not have taken its run yet). A run whose newest job waits to
// be fetched is being taken over already.
func (db *DB) ExpiredRunsTx(ctx context.Context, tx pgx.Tx, jobKind string, grace time.Duration, limit int) ([]ExpiredRun, error) {
	rows, err := tx.Query(ctx, `SELECT r.id, j.args FROM runs r
CROSS JOIN LATERAL (SELECT state, attempted_at, args FROM river_job
  WHERE kind = $1 AND args->>'run_id' = r.id ORDER BY id DESC LIMIT 1) j
WHERE r.status IN ('queued', 'running') AND COALESCE(r.lease_until, 0) < `+nowMicros+`
  AND j.state = 'running' AND j.attempted_at < clock_timestamp() - make_interval(secs => $2)
ORDER BY r.started_at LIMIT $3
FOR UPDATE OF r SKIP LOCKED`, jobKind, grace.Seconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("store: expired runs: %w", err)
	}
	defer rows.Close()
	var out []ExpiredRun
	for rows.Next() {
		var r ExpiredRun
		if err := rows.Scan(&r.ID, &r.JobArgs); err != nil {
			return nil, fmt.Errorf("store: expired runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: expired runs: %w", err)
	}
	return out, nil
}
