package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// A run's start checkpoint holds the chain it runs; the chain is stored
// once in run_chains under its hash (the stored form is package cplog's).

// StoreRunChains stores the chains a batch of checkpoint entries refers to
// (cplog.Encoded's Chains), once each.
func StoreRunChains(ctx context.Context, tx *Tx, chains map[string]string, now time.Time) error {
	for ref, doc := range chains {
		if _, err := tx.ExecPrepared(ctx, `INSERT INTO run_chains (sha256, doc, created_at) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING`,
			ref, doc, Micros(now)); err != nil {
			return fmt.Errorf("run chain %s: %w", ref, err)
		}
	}
	return nil
}

// runChain returns the chain stored under ref, from the decoded-document
// cache when it is there.
func (s *Store) runChain(ctx context.Context, q rowQueryer, ref string) (*chain.Chain, error) {
	key := "sha256:" + ref
	if d := s.docs.Get(key, 0); d != nil {
		return d, nil
	}
	var body string
	err := q.QueryRowContext(ctx, `SELECT doc FROM run_chains WHERE sha256 = ?`, ref).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("its chain (sha256 %s) is missing", ref)
	}
	if err != nil {
		return nil, err
	}
	d, err := decodeDoc(body, 0)
	if err != nil {
		return nil, err
	}
	s.docs.Put(key, 0, d)
	return d, nil
}

// pruneRunChainsTx deletes the chains no remaining start entry names.
func (s *Store) pruneRunChainsTx(ctx context.Context, tx *Tx) error {
	_, err := tx.ExecPrepared(ctx, `DELETE FROM run_chains WHERE sha256 NOT IN (
  SELECT chain_sha256 FROM checkpoints WHERE chain_sha256 IS NOT NULL)`)
	return err
}
