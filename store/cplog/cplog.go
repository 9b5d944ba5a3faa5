// Package cplog is the stored form of a run's checkpoint log, shared by the
// store backends: each entry as JSON, with a start entry's chain replaced by
// the SHA-256 of its JSON (the document itself is stored once, beside the
// log).
package cplog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/chainstudio/studio/engine"
)

// A run's start checkpoint holds the chain it runs. Rather than a copy in
// every run (a large chain is hundreds of KB, and a chain version is run again
// and again), the document is stored once in run_chains under the SHA-256 of
// its JSON, and the entry's body names it. Load puts the chain back, so the
// engine sees exactly the log it wrote.

// Stored is a checkpoint entry as stored: the engine's entry, with
// the start record's chain replaced by its hash.
type Stored struct {
	engine.Checkpoint
	ChainSHA256 string `json:"chain_sha256,omitempty"`
}

// Encoded is a batch of entries ready to insert.
type Encoded struct {
	Bodies    []string          // per entry: the stored JSON
	ChainRefs []any             // per entry: the chain's hash (start entries) or nil
	Chains    map[string]string // hash → chain JSON, for run_chains
}

// Encode turns entries into their stored form.
func Encode(cps []engine.Checkpoint) (*Encoded, error) {
	enc := &Encoded{Bodies: make([]string, len(cps)), ChainRefs: make([]any, len(cps))}
	for i := range cps {
		cp := &cps[i]
		if cp.Start == nil || cp.Start.Chain == nil {
			b, err := json.Marshal(cp)
			if err != nil {
				return nil, fmt.Errorf("%s entry: %w", cp.Kind, err)
			}
			enc.Bodies[i] = string(b)
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
		stored := Stored{Checkpoint: *cp, ChainSHA256: ref}
		stored.Start = &start
		b, err := json.Marshal(&stored)
		if err != nil {
			return nil, fmt.Errorf("start entry: %w", err)
		}
		enc.Bodies[i] = string(b)
		enc.ChainRefs[i] = ref
		if enc.Chains == nil {
			enc.Chains = map[string]string{}
		}
		enc.Chains[ref] = string(doc)
	}
	return enc, nil
}
