package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
)

// The triggers' SQL (schedules, hooks, firings), the same on both backends.
// Errors come back unwrapped so that each backend can tell its own unique
// violation (a schedule tick fired twice) from other failures.

// Conn runs statements and queries: *sql.Tx, *sql.DB or a backend's wrapper.
type Conn interface {
	Queryer
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func micros(t time.Time) int64 { return t.UTC().UnixMicro() }

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// liveChain returns store.ErrNotFound unless chain id exists and is not
// deleted.
func liveChain(ctx context.Context, q Conn, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM chains WHERE id = ? AND deleted_at IS NULL`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: chain %q", store.ErrNotFound, id)
	}
	return err
}

// insertSchedule stores a new schedule of a live chain.
func insertSchedule(ctx context.Context, q Conn, s store.Schedule) error {
	if err := liveChain(ctx, q, s.ChainID); err != nil {
		return err
	}
	input, err := json.Marshal(orEmpty(s.Input))
	if err != nil {
		return fmt.Errorf("%w: schedule input: %v", store.ErrInvalid, err)
	}
	_, err = q.ExecContext(ctx, `INSERT INTO schedules (id, chain_id, cron, time_zone, input, overlap, catch_up, enabled, budget, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, s.ID, s.ChainID, s.Cron, s.TimeZone, string(input), s.Overlap, s.CatchUp, boolInt(s.Enabled), encodeBudget(s.Budget),
		micros(s.Created), micros(s.Updated))
	return err
}

// updateSchedule replaces a schedule's fields; store.ErrNotFound when the
// chain has no such schedule.
func updateSchedule(ctx context.Context, q Conn, s store.Schedule) error {
	input, err := json.Marshal(orEmpty(s.Input))
	if err != nil {
		return fmt.Errorf("%w: schedule input: %v", store.ErrInvalid, err)
	}
	res, err := q.ExecContext(ctx, `UPDATE schedules SET cron = ?, time_zone = ?, input = ?, overlap = ?, catch_up = ?, enabled = ?, budget = ?, updated_at = ?
WHERE id = ? AND chain_id = ?`, s.Cron, s.TimeZone, string(input), s.Overlap, s.CatchUp, boolInt(s.Enabled), encodeBudget(s.Budget), micros(s.Updated), s.ID, s.ChainID)
	if err != nil {
		return err
	}
	return oneRow(res, "schedule", s.ID)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func oneRow(res sql.Result, what, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s %q", store.ErrNotFound, what, id)
	}
	return nil
}

// deleteSchedule deletes a chain's schedule and its firings.
func deleteSchedule(ctx context.Context, q Conn, chainID, id string) error {
	return deleteTrigger(ctx, q, `DELETE FROM schedules WHERE id = ? AND chain_id = ?`, "schedule", chainID, id)
}

// deleteHook deletes a chain's hook and its firings.
func deleteHook(ctx context.Context, q Conn, chainID, id string) error {
	return deleteTrigger(ctx, q, `DELETE FROM hooks WHERE id = ? AND chain_id = ?`, "hook", chainID, id)
}

func deleteTrigger(ctx context.Context, q Conn, del, what, chainID, id string) error {
	res, err := q.ExecContext(ctx, del, id, chainID)
	if err != nil {
		return err
	}
	if err := oneRow(res, what, id); err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `DELETE FROM trigger_firings WHERE trigger_id = ?`, id)
	return err
}

const scheduleCols = `s.id, s.chain_id, s.cron, s.time_zone, s.input, s.overlap, s.catch_up, s.enabled, s.budget, s.created_at, s.updated_at,
  (SELECT MAX(f.tick) FROM trigger_firings f WHERE f.trigger_id = s.id)`

// listSchedules lists a chain's schedules, or ("" chain) the enabled
// schedules of every live chain.
func listSchedules(ctx context.Context, q Conn, chainID string) ([]store.Schedule, error) {
	query := `SELECT ` + scheduleCols + ` FROM schedules s WHERE s.chain_id = ? ORDER BY s.created_at, s.id`
	args := []any{chainID}
	if chainID == "" {
		query = `SELECT ` + scheduleCols + ` FROM schedules s JOIN chains c ON c.id = s.chain_id
WHERE c.deleted_at IS NULL AND s.enabled = 1 ORDER BY s.created_at, s.id`
		args = nil
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var s store.Schedule
		var input, budget string
		var enabled int
		var created, updated int64
		var last sql.NullInt64
		if err := rows.Scan(&s.ID, &s.ChainID, &s.Cron, &s.TimeZone, &input, &s.Overlap, &s.CatchUp, &enabled, &budget, &created, &updated, &last); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(input), &s.Input); err != nil {
			return nil, fmt.Errorf("schedule %s: stored input is corrupt: %w", s.ID, err)
		}
		if s.Budget, err = decodeBudget(budget); err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.ID, err)
		}
		s.Enabled, s.Created, s.Updated = enabled == 1, fromMicros(created), fromMicros(updated)
		if last.Valid {
			s.LastTick = fromMicros(last.Int64)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// encodeBudget is a budget as its column keeps it: JSON, ” for none.
func encodeBudget(b store.DayBudget) string {
	if b.IsZero() {
		return ""
	}
	enc, _ := json.Marshal(b) // two numbers: cannot fail
	return string(enc)
}

func decodeBudget(s string) (store.DayBudget, error) {
	var b store.DayBudget
	if s == "" {
		return b, nil
	}
	if err := json.Unmarshal([]byte(s), &b); err != nil {
		return b, fmt.Errorf("stored budget is corrupt: %w", err)
	}
	return b, nil
}

// triggerBudget reads the budget of the schedule or hook id (zero when
// none).
func triggerBudget(ctx context.Context, q Conn, id string) (store.DayBudget, error) {
	var budget string
	err := q.QueryRowContext(ctx, `SELECT budget FROM schedules WHERE id = ? UNION ALL SELECT budget FROM hooks WHERE id = ?`, id, id).Scan(&budget)
	if errors.Is(err, sql.ErrNoRows) {
		return store.DayBudget{}, nil
	}
	if err != nil {
		return store.DayBudget{}, err
	}
	return decodeBudget(budget)
}

// insertHook stores a new hook of a live chain.
func insertHook(ctx context.Context, q Conn, h store.Hook) error {
	if err := liveChain(ctx, q, h.ChainID); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `INSERT INTO hooks (id, chain_id, secret, sync, sync_timeout_ms, budget, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		h.ID, h.ChainID, h.Secret, boolInt(h.Sync), h.SyncTimeout.Milliseconds(), encodeBudget(h.Budget), micros(h.Created))
	return err
}

const hookCols = `h.id, h.chain_id, h.secret, h.sync, h.sync_timeout_ms, h.budget, h.created_at,
  (SELECT MAX(f.created_at) FROM trigger_firings f WHERE f.trigger_id = h.id)`

// getHook returns a hook of a live chain with its secret.
func getHook(ctx context.Context, q Conn, id string) (*store.Hook, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+hookCols+` FROM hooks h JOIN chains c ON c.id = h.chain_id
WHERE h.id = ? AND c.deleted_at IS NULL`, id)
	if err != nil {
		return nil, err
	}
	hs, err := scanHooks(rows, true)
	if err != nil {
		return nil, err
	}
	if len(hs) == 0 {
		return nil, fmt.Errorf("%w: hook %q", store.ErrNotFound, id)
	}
	return &hs[0], nil
}

// listHooks lists a chain's hooks without their secrets.
func listHooks(ctx context.Context, q Conn, chainID string) ([]store.Hook, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+hookCols+` FROM hooks h WHERE h.chain_id = ? ORDER BY h.created_at, h.id`, chainID)
	if err != nil {
		return nil, err
	}
	return scanHooks(rows, false)
}

func scanHooks(rows *sql.Rows, secret bool) ([]store.Hook, error) {
	defer rows.Close()
	var out []store.Hook
	for rows.Next() {
		var h store.Hook
		var sync int
		var timeoutMS, created int64
		var last sql.NullInt64
		var budget string
		if err := rows.Scan(&h.ID, &h.ChainID, &h.Secret, &sync, &timeoutMS, &budget, &created, &last); err != nil {
			return nil, err
		}
		var err error
		if h.Budget, err = decodeBudget(budget); err != nil {
			return nil, fmt.Errorf("hook %s: %w", h.ID, err)
		}
		if !secret {
			h.Secret = ""
		}
		h.Sync, h.SyncTimeout, h.Created = sync == 1, time.Duration(timeoutMS)*time.Millisecond, fromMicros(created)
		if last.Valid {
			h.LastFired = fromMicros(last.Int64)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// insertFiring records a firing and trims the trigger's history to
// store.MaxFiringsKept rows. A schedule tick already recorded fails with the
// backend's unique violation.
func insertFiring(ctx context.Context, q Conn, f store.Firing) error {
	if _, err := q.ExecContext(ctx, InsertFiringSQL, FiringArgs(f)...); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, TrimFiringsSQL, TrimFiringsArgs(f.TriggerID)...)
	return err
}

// InsertFiringSQL and TrimFiringsSQL are InsertFiring's statements, for a
// backend that runs them on a transaction of its own driver (PostgreSQL's
// pgx transaction shared with River).
const (
	InsertFiringSQL = `INSERT INTO trigger_firings (trigger_id, tick, run_id, outcome, message, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	// The newest rows stay, and with them the newest tick (ticks only grow).
	TrimFiringsSQL = `DELETE FROM trigger_firings WHERE trigger_id = ? AND created_at < (
  SELECT created_at FROM trigger_firings WHERE trigger_id = ? ORDER BY created_at DESC LIMIT 1 OFFSET ?)`
)

// FiringArgs are InsertFiringSQL's arguments.
func FiringArgs(f store.Firing) []any {
	var tick any
	if !f.Tick.IsZero() {
		tick = micros(f.Tick)
	}
	var run any
	if f.RunID != "" {
		run = f.RunID
	}
	return []any{f.TriggerID, tick, run, f.Outcome, f.Message, micros(f.Created)}
}

// TrimFiringsArgs are TrimFiringsSQL's arguments.
func TrimFiringsArgs(triggerID string) []any {
	return []any{triggerID, triggerID, store.MaxFiringsKept - 1}
}

// listFirings lists a trigger's firings newest first.
func listFirings(ctx context.Context, q Conn, triggerID string, limit int) ([]store.Firing, error) {
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, store.MaxFiringsKept)
	rows, err := q.QueryContext(ctx, `SELECT trigger_id, tick, run_id, outcome, message, created_at FROM trigger_firings
WHERE trigger_id = ? ORDER BY created_at DESC LIMIT ?`, triggerID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Firing
	for rows.Next() {
		var f store.Firing
		var tick sql.NullInt64
		var run sql.NullString
		var created int64
		if err := rows.Scan(&f.TriggerID, &tick, &run, &f.Outcome, &f.Message, &created); err != nil {
			return nil, err
		}
		if tick.Valid {
			f.Tick = fromMicros(tick.Int64)
		}
		f.RunID, f.Created = run.String, fromMicros(created)
		out = append(out, f)
	}
	return out, rows.Err()
}

// chainBusy reports whether a run of the chain is queued or running.
func chainBusy(ctx context.Context, q Conn, chainID string) (bool, error) {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE chain_id = ? AND status IN ('queued', 'running') LIMIT 1`, chainID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// RunFiring is the firing CreateRun records with a run a schedule or a
// webhook started; ok is false for other runs (an A2E session's too).
func RunFiring(r store.Run) (f store.Firing, ok bool) {
	if (r.TriggerKind != store.TriggerSchedule && r.TriggerKind != store.TriggerWebhook) || r.TriggerID == "" {
		return f, false
	}
	tick := time.Time{}
	if r.TriggerKind == store.TriggerSchedule {
		tick = r.TriggerTick
	}
	return store.Firing{TriggerID: r.TriggerID, Tick: tick, RunID: r.ID, Outcome: store.FiringStarted, Created: r.Started}, true
}

// CreateSchedule implements store.TriggerStore.
func (s *Store) CreateSchedule(ctx context.Context, sc store.Schedule) (*store.Schedule, error) {
	now := s.now()
	sc.Created, sc.Updated = now, now
	err := s.writeTx(ctx, func(tx *Tx) error { return insertSchedule(ctx, tx, sc) })
	if err != nil {
		return nil, fmt.Errorf("store: create schedule: %w", err)
	}
	return s.schedule(ctx, sc.ChainID, sc.ID)
}

// UpdateSchedule implements store.TriggerStore.
func (s *Store) UpdateSchedule(ctx context.Context, sc store.Schedule) (*store.Schedule, error) {
	sc.Updated = s.now()
	if err := s.writeTx(ctx, func(tx *Tx) error { return updateSchedule(ctx, tx, sc) }); err != nil {
		return nil, fmt.Errorf("store: update schedule: %w", err)
	}
	return s.schedule(ctx, sc.ChainID, sc.ID)
}

func (s *Store) schedule(ctx context.Context, chainID, id string) (*store.Schedule, error) {
	ss, err := s.ListSchedules(ctx, chainID)
	if err != nil {
		return nil, err
	}
	for i := range ss {
		if ss[i].ID == id {
			return &ss[i], nil
		}
	}
	return nil, fmt.Errorf("store: %w: schedule %q", store.ErrNotFound, id)
}

// DeleteSchedule implements store.TriggerStore.
func (s *Store) DeleteSchedule(ctx context.Context, chainID, id string) error {
	if err := s.writeTx(ctx, func(tx *Tx) error { return deleteSchedule(ctx, tx, chainID, id) }); err != nil {
		return fmt.Errorf("store: delete schedule: %w", err)
	}
	return nil
}

// ListSchedules implements store.TriggerStore.
func (s *Store) ListSchedules(ctx context.Context, chainID string) ([]store.Schedule, error) {
	ss, err := listSchedules(ctx, s.r, chainID)
	if err != nil {
		return nil, fmt.Errorf("store: list schedules: %w", err)
	}
	return ss, nil
}

// TriggerBudget implements store.TriggerStore.
func (s *Store) TriggerBudget(ctx context.Context, id string) (store.DayBudget, error) {
	b, err := triggerBudget(ctx, s.r, id)
	if err != nil {
		return b, fmt.Errorf("store: trigger %q's budget: %w", id, err)
	}
	return b, nil
}

// CreateHook implements store.TriggerStore.
func (s *Store) CreateHook(ctx context.Context, h store.Hook) (*store.Hook, error) {
	h.Created = s.now()
	if err := s.writeTx(ctx, func(tx *Tx) error { return insertHook(ctx, tx, h) }); err != nil {
		return nil, fmt.Errorf("store: create hook: %w", err)
	}
	return s.GetHook(ctx, h.ID)
}

// GetHook implements store.TriggerStore.
func (s *Store) GetHook(ctx context.Context, id string) (*store.Hook, error) {
	h, err := getHook(ctx, s.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: get hook: %w", err)
	}
	return h, nil
}

// ListHooks implements store.TriggerStore.
func (s *Store) ListHooks(ctx context.Context, chainID string) ([]store.Hook, error) {
	hs, err := listHooks(ctx, s.r, chainID)
	if err != nil {
		return nil, fmt.Errorf("store: list hooks: %w", err)
	}
	return hs, nil
}

// DeleteHook implements store.TriggerStore.
func (s *Store) DeleteHook(ctx context.Context, chainID, id string) error {
	if err := s.writeTx(ctx, func(tx *Tx) error { return deleteHook(ctx, tx, chainID, id) }); err != nil {
		return fmt.Errorf("store: delete hook: %w", err)
	}
	return nil
}

// RecordFiring implements store.TriggerStore.
func (s *Store) RecordFiring(ctx context.Context, f store.Firing) error {
	if f.Created.IsZero() {
		f.Created = s.now()
	}
	err := s.writeTx(ctx, func(tx *Tx) error { return s.insertFiring(ctx, tx, f) })
	if err != nil {
		return fmt.Errorf("store: record firing of %s: %w", f.TriggerID, err)
	}
	return nil
}

// insertFiring is InsertFiring with a tick recorded twice read as
// store.ErrAlreadyFired.
func (s *Store) insertFiring(ctx context.Context, tx *Tx, f store.Firing) error {
	err := insertFiring(ctx, tx, f)
	if s.d.IsUniqueViolation(err) {
		return fmt.Errorf("%w (tick %s)", store.ErrAlreadyFired, f.Tick.Format("2006-01-02T15:04:05Z07:00"))
	}
	return err
}

// ListFirings implements store.TriggerStore.
func (s *Store) ListFirings(ctx context.Context, triggerID string, limit int) ([]store.Firing, error) {
	fs, err := listFirings(ctx, s.r, triggerID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list firings: %w", err)
	}
	return fs, nil
}

// ChainBusy implements store.TriggerStore.
func (s *Store) ChainBusy(ctx context.Context, chainID string) (bool, error) {
	busy, err := chainBusy(ctx, s.r, chainID)
	if err != nil {
		return false, fmt.Errorf("store: is a run of chain %s going: %w", chainID, err)
	}
	return busy, nil
}

// UseHookSignature implements store.TriggerStore.
func (s *Store) UseHookSignature(ctx context.Context, hookID string, digest []byte, now, expires time.Time) error {
	var used bool
	err := s.writeTx(ctx, func(tx *Tx) (err error) {
		used, err = useHookSignature(ctx, tx, hookID, digest, now, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record the signature of a call of hook %s: %w", hookID, err)
	}
	if used {
		return fmt.Errorf("%w (hook %s)", store.ErrSignatureUsed, hookID)
	}
	return nil
}

// PruneHookSignatures implements store.Housekeeping.
func (s *Store) PruneHookSignatures(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.writeTx(ctx, func(tx *Tx) (err error) {
		n, err = pruneHookSignatures(ctx, tx, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune webhook signatures: %w", err)
	}
	return n, nil
}
