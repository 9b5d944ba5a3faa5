package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/sqlstore"
)

// ListInterrupts lists the pending interrupts of paused runs (the inbox).
func (db *DB) ListInterrupts(ctx context.Context, f store.InterruptFilter) ([]store.Interrupt, error) {
	var out []store.Interrupt
	err := db.readTx(ctx, func(tx *Tx) (err error) {
		out, err = sqlstore.ListInterrupts(ctx, tx, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list interrupts: %w", err)
	}
	return out, nil
}

// DueInterrupts lists pending interrupts whose deadline passed by now.
func (db *DB) DueInterrupts(ctx context.Context, now time.Time, limit int) ([]store.Interrupt, error) {
	var out []store.Interrupt
	err := db.readTx(ctx, func(tx *Tx) (err error) {
		out, err = sqlstore.DueInterrupts(ctx, tx, now, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: due interrupts: %w", err)
	}
	return out, nil
}

// DueEscalations lists the escalation notifications due at now.
func (db *DB) DueEscalations(ctx context.Context, now time.Time, limit int) ([]store.Escalation, error) {
	var out []store.Escalation
	err := db.readTx(ctx, func(tx *Tx) (err error) {
		out, err = sqlstore.DueEscalations(ctx, tx, now, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: due escalations: %w", err)
	}
	return out, nil
}

// ClaimEscalation marks a notification sent; false: it was already.
func (db *DB) ClaimEscalation(ctx context.Context, runID string, n int64, stage string, now time.Time) (bool, error) {
	var ok bool
	err := db.writeTx(ctx, func(tx *Tx) (err error) {
		ok, err = sqlstore.ClaimEscalation(ctx, tx, runID, n, stage, now)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: claim escalation of run %s: %w", runID, err)
	}
	return ok, nil
}

// Answers returns the audit entries of runID's answered interrupts.
func (db *DB) Answers(ctx context.Context, runID string) ([]engine.ResumeRecord, error) {
	var out []engine.ResumeRecord
	err := db.readTx(ctx, func(tx *Tx) (err error) {
		out, err = sqlstore.Answers(ctx, tx, runID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: answers of run %s: %w", runID, err)
	}
	return out, nil
}
