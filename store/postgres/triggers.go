package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

// The triggers (schedules, hooks, firings): store/sqlstore/triggers.go holds
// their SQL, shared with the SQLite backend.

// CreateSchedule implements store.TriggerStore.
func (db *DB) CreateSchedule(ctx context.Context, s store.Schedule) (*store.Schedule, error) {
	now := db.now()
	s.Created, s.Updated = now, now
	err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.InsertSchedule(ctx, tx, s) })
	if err != nil {
		return nil, fmt.Errorf("store: create schedule: %w", err)
	}
	return db.schedule(ctx, s.ChainID, s.ID)
}

// UpdateSchedule implements store.TriggerStore.
func (db *DB) UpdateSchedule(ctx context.Context, s store.Schedule) (*store.Schedule, error) {
	s.Updated = db.now()
	if err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.UpdateSchedule(ctx, tx, s) }); err != nil {
		return nil, fmt.Errorf("store: update schedule: %w", err)
	}
	return db.schedule(ctx, s.ChainID, s.ID)
}

func (db *DB) schedule(ctx context.Context, chainID, id string) (*store.Schedule, error) {
	ss, err := db.ListSchedules(ctx, chainID)
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
func (db *DB) DeleteSchedule(ctx context.Context, chainID, id string) error {
	if err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.DeleteSchedule(ctx, tx, chainID, id) }); err != nil {
		return fmt.Errorf("store: delete schedule: %w", err)
	}
	return nil
}

// ListSchedules implements store.TriggerStore.
func (db *DB) ListSchedules(ctx context.Context, chainID string) ([]store.Schedule, error) {
	ss, err := sqlstore.ListSchedules(ctx, db.r, chainID)
	if err != nil {
		return nil, fmt.Errorf("store: list schedules: %w", err)
	}
	return ss, nil
}

// CreateHook implements store.TriggerStore.
func (db *DB) CreateHook(ctx context.Context, h store.Hook) (*store.Hook, error) {
	h.Created = db.now()
	if err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.InsertHook(ctx, tx, h) }); err != nil {
		return nil, fmt.Errorf("store: create hook: %w", err)
	}
	return db.GetHook(ctx, h.ID)
}

// GetHook implements store.TriggerStore.
func (db *DB) GetHook(ctx context.Context, id string) (*store.Hook, error) {
	h, err := sqlstore.GetHook(ctx, db.r, id)
	if err != nil {
		return nil, fmt.Errorf("store: get hook: %w", err)
	}
	return h, nil
}

// ListHooks implements store.TriggerStore.
func (db *DB) ListHooks(ctx context.Context, chainID string) ([]store.Hook, error) {
	hs, err := sqlstore.ListHooks(ctx, db.r, chainID)
	if err != nil {
		return nil, fmt.Errorf("store: list hooks: %w", err)
	}
	return hs, nil
}

// DeleteHook implements store.TriggerStore.
func (db *DB) DeleteHook(ctx context.Context, chainID, id string) error {
	if err := db.writeTx(ctx, func(tx *Tx) error { return sqlstore.DeleteHook(ctx, tx, chainID, id) }); err != nil {
		return fmt.Errorf("store: delete hook: %w", err)
	}
	return nil
}

// RecordFiring implements store.TriggerStore.
func (db *DB) RecordFiring(ctx context.Context, f store.Firing) error {
	if f.Created.IsZero() {
		f.Created = db.now()
	}
	err := db.writeTx(ctx, func(tx *Tx) error { return insertFiring(ctx, tx, f) })
	if err != nil {
		return fmt.Errorf("store: record firing of %s: %w", f.TriggerID, err)
	}
	return nil
}

// insertFiring is sqlstore.InsertFiring with a tick recorded twice read as
// store.ErrAlreadyFired.
func insertFiring(ctx context.Context, tx *Tx, f store.Firing) error {
	err := sqlstore.InsertFiring(ctx, tx, f)
	if isUniqueViolation(err) {
		return fmt.Errorf("%w (tick %s)", store.ErrAlreadyFired, f.Tick.Format("2006-01-02T15:04:05Z07:00"))
	}
	return err
}

// ListFirings implements store.TriggerStore.
func (db *DB) ListFirings(ctx context.Context, triggerID string, limit int) ([]store.Firing, error) {
	fs, err := sqlstore.ListFirings(ctx, db.r, triggerID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: list firings: %w", err)
	}
	return fs, nil
}

// ChainBusy implements store.TriggerStore.
func (db *DB) ChainBusy(ctx context.Context, chainID string) (bool, error) {
	busy, err := sqlstore.ChainBusy(ctx, db.r, chainID)
	if err != nil {
		return false, fmt.Errorf("store: is a run of chain %s going: %w", chainID, err)
	}
	return busy, nil
}

// UseHookSignature implements store.TriggerStore.
func (db *DB) UseHookSignature(ctx context.Context, hookID string, digest []byte, now, expires time.Time) error {
	var used bool
	err := db.writeTx(ctx, func(tx *Tx) (err error) {
		used, err = sqlstore.UseHookSignature(ctx, tx, hookID, digest, now, expires)
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
func (db *DB) PruneHookSignatures(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := db.writeTx(ctx, func(tx *Tx) (err error) {
		n, err = sqlstore.PruneHookSignatures(ctx, tx, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune webhook signatures: %w", err)
	}
	return n, nil
}
