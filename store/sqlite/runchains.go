package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
)

// A run's start checkpoint holds the chain it runs; the chain is stored
// once in run_chains under its hash (the stored form is package cplog's).

// storeRunChainsTx stores the chains a batch refers to, once each.
func (db *DB) storeRunChainsTx(ctx context.Context, tx *sql.Tx, chains map[string]string) error {
	for ref, doc := range chains {
		if _, err := db.exec(ctx, tx, `INSERT INTO run_chains (sha256, doc, created_at) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING`,
			ref, doc, micros(db.now())); err != nil {
			return fmt.Errorf("run chain %s: %w", ref, err)
		}
	}
	return nil
}

// runChain returns the chain stored under ref, from the decoded-document
// cache when it is there.
func (db *DB) runChain(ctx context.Context, q querier, ref string) (*engine.Chain, error) {
	key := "sha256:" + ref
	if d := db.docs.Get(key, 0); d != nil {
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
	db.docs.Put(key, 0, d)
	return d, nil
}

// pruneRunChainsTx deletes the chains no remaining start entry names.
func (db *DB) pruneRunChainsTx(ctx context.Context, tx *sql.Tx) error {
	_, err := db.exec(ctx, tx, `DELETE FROM run_chains WHERE sha256 NOT IN (
  SELECT chain_sha256 FROM checkpoints WHERE chain_sha256 IS NOT NULL)`)
	return err
}
