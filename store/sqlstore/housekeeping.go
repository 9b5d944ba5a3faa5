package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/chainstudio/studio/store"
)

// pruneBatch bounds how many runs one delete transaction removes, so the
// writer is never held for long.
const pruneBatch = 500

// PruneRuns deletes old runs with their events, checkpoints, node results and
// interrupts. Chains and their versions are never touched. It returns how many
// runs it deleted.
func (s *Store) PruneRuns(ctx context.Context, ret store.Retention) (int, error) {
	if ret.OlderThan <= 0 && ret.KeepPerChain <= 0 {
		return 0, fmt.Errorf("store: prune runs: %w: retention sets no limit", store.ErrInvalid)
	}
	var cond []string
	var args []any
	cond = append(cond, "status NOT IN ('running', 'paused')")
	if ret.OlderThan > 0 {
		cond = append(cond, "started_at < ?")
		args = append(args, Micros(s.now().Add(-ret.OlderThan)))
	}
	if ret.KeepPerChain > 0 {
		cond = append(cond, "rn > ?")
		args = append(args, ret.KeepPerChain)
	}
	q := `SELECT id FROM (
  SELECT id, status, started_at,
         ROW_NUMBER() OVER (PARTITION BY COALESCE(chain_id, '') ORDER BY started_at DESC, id) AS rn
  FROM runs
) ranked WHERE ` + strings.Join(cond, " AND ") + ` LIMIT ?`
	total := 0
	for {
		var n int
		err := s.writeTx(ctx, func(tx *Tx) error {
			rows, err := tx.QueryContext(ctx, q, append(args, pruneBatch)...)
			if err != nil {
				return err
			}
			var ids []any
			for rows.Next() {
				var id string
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			in := `(?` + strings.Repeat(", ?", len(ids)-1) + `)`
			// Checkpoints go first: on PostgreSQL they have no foreign key
			// to cascade from runs (its migration 3).
			if _, err := tx.ExecPrepared(ctx, `DELETE FROM checkpoints WHERE run_id IN `+in, ids...); err != nil {
				return err
			}
			res, err := tx.ExecPrepared(ctx, `DELETE FROM runs WHERE id IN `+in, ids...)
			if err != nil {
				return err
			}
			k, err := res.RowsAffected()
			if err != nil {
				return err
			}
			n = int(k)
			// The chains only these runs named go with them.
			return s.pruneRunChainsTx(ctx, tx)
		})
		if err != nil {
			return total, fmt.Errorf("store: prune runs: %w", err)
		}
		total += n
		if n < pruneBatch {
			return total, nil
		}
	}
}
