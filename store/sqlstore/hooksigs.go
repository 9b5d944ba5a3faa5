package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/chainstudio/studio/store"
)

// useHookSignature records a webhook signature's digest until expires,
// unless it is recorded already and not expired at now: used reports
// whether it was (a replay; nothing written). An expired row of the same
// digest is taken over, so a row that housekeeping has not deleted yet
// never refuses a call.
func useHookSignature(ctx context.Context, tx Writer, hookID string, digest []byte, now, expires time.Time) (used bool, err error) {
	if len(digest) != sha256.Size {
		return false, store.Errorf(store.EINVALID, "hook signature digest: want %d bytes (SHA-256), got %d", sha256.Size, len(digest))
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO hook_signatures (digest, hook_id, expires_at) VALUES (?, ?, ?)
ON CONFLICT (digest) DO UPDATE SET hook_id = excluded.hook_id, expires_at = excluded.expires_at
WHERE hook_signatures.expires_at <= ?`, hex.EncodeToString(digest), hookID, micros(expires), micros(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 0, nil
}

// pruneHookSignatures deletes the digests expired at now.
func pruneHookSignatures(ctx context.Context, tx Writer, now time.Time) (int, error) {
	res, err := tx.ExecContext(ctx, `DELETE FROM hook_signatures WHERE expires_at <= ?`, micros(now))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
