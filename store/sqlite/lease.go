package sqlite

import (
	"context"
	"time"

	"github.com/chainstudio/studio/store"
)

// A SQLite database has one owner process (the lock file beside it), so the
// runs it executes need no lease: taking one always succeeds at epoch 1,
// renewing never fails and no write is ever refused. These exist so that
// the run service sees one interface on both backends; the embedded studio
// does not call them (it has no Dispatcher), so its speed is unchanged.

// TakeRun implements store.LeaseStore.
func (db *DB) TakeRun(ctx context.Context, runID, owner string, ttl time.Duration, lost func()) (*store.RunLease, error) {
	return &store.RunLease{Epoch: 1}, nil
}

// RenewRun implements store.LeaseStore.
func (db *DB) RenewRun(ctx context.Context, runID string, epoch int64, ttl time.Duration) (bool, error) {
	return false, nil
}

// ReleaseRun implements store.LeaseStore.
func (db *DB) ReleaseRun(ctx context.Context, runID string, epoch int64) error { return nil }
