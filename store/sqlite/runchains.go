package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
)

// A run's start checkpoint holds the chain it runs. Rather than a copy in
// every run (a large chain is hundreds of KB, and a chain version is run again
// and again), the document is stored once in run_chains under the SHA-256 of
// its JSON, and the entry's body names it. Load puts the chain back, so the
// engine sees exactly the log it wrote.

// storedCheckpoint is a checkpoint entry as stored: the engine's entry, with
// the start record's chain replaced by its hash.
type storedCheckpoint struct {
	engine.Checkpoint
	ChainSHA256 string `json:"chain_sha256,omitempty"`
}

// encodedCheckpoints are a batch of entries ready to insert.
type encodedCheckpoints struct {
	bodies    []string          // per entry: the stored JSON
	chainRefs []any             // per entry: the chain's hash (start entries) or nil
	chains    map[string]string // hash → chain JSON, for run_chains
}

func encodeCheckpoints(cps []engine.Checkpoint) (*encodedCheckpoints, error) {
	enc := &encodedCheckpoints{bodies: make([]string, len(cps)), chainRefs: make([]any, len(cps))}
	for i := range cps {
		cp := &cps[i]
		if cp.Start == nil || cp.Start.Chain == nil {
			b, err := json.Marshal(cp)
			if err != nil {
				return nil, fmt.Errorf("%s entry: %w", cp.Kind, err)
			}
			enc.bodies[i] = string(b)
			continue
		}
		doc, err := json.Marshal(cp.Start.Chain)
		if err != nil {
			return nil, fmt.Errorf("start entry: chain: %w", err)
		}
		sum := sha256.Sum256(doc)
		ref := hex.EncodeToString(sum[:])
		start := *cp.Start
		start.Chain = nil
		stored := storedCheckpoint{Checkpoint: *cp, ChainSHA256: ref}
		stored.Start = &start
		b, err := json.Marshal(&stored)
		if err != nil {
			return nil, fmt.Errorf("start entry: %w", err)
		}
		enc.bodies[i] = string(b)
		enc.chainRefs[i] = ref
		if enc.chains == nil {
			enc.chains = map[string]string{}
		}
		enc.chains[ref] = string(doc)
	}
	return enc, nil
}

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
