// Package cplog is the stored form of a run's checkpoint log, shared by the
// store backends: each entry as JSON, with a start entry's chain replaced by
// the SHA-256 of its JSON (the document itself is stored once, beside the
// log).
package cplog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// v1 makes Marshal write exactly the bytes encoding/json writes (HTML
// escaping, sorted map keys, nil slices as null, v1's omitempty).
var v1 = jsonv1.DefaultOptionsV1()

// Marshal is encoding/json.Marshal, byte for byte, through the faster v2
// encoder: a persisted run encodes each node's entry and events, and
// encoding/json was a third of the CPU the store spent on a 1,000-node run.
// The stored bytes (and so the chains' hashes) do not change.
func Marshal(v any) ([]byte, error) { return jsonv2.Marshal(v, v1) }

// bufs hold the JSON of one entry or event while it is encoded.
var bufs = sync.Pool{New: func() any { return new(bytesBuffer) }}

// bytesBuffer is a reusable encoding buffer (an io.Writer for MarshalWrite).
type bytesBuffer struct{ b []byte }

func (w *bytesBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// MarshalString is Marshal returning a string (what the backends insert),
// through a pooled buffer: the JSON is copied once, not twice (Marshal's
// own copy of its buffer, then the string's).
func MarshalString(v any) (string, error) {
	buf := bufs.Get().(*bytesBuffer)
	buf.b = buf.b[:0]
	err := jsonv2.MarshalWrite(buf, v, v1)
	return finish(buf, buf.b, err)
}

// pooledMax bounds the buffers kept for reuse: a rare large value does not
// stay pinned.
const pooledMax = 64 << 10

// finish returns the JSON in b as a string and puts buf back for reuse
// with b as its buffer. A buffer too large to keep becomes the string
// instead of being copied into one: a run's large output is then held once
// in its entry or event until that is written, not twice (the buffer is
// nobody else's).
func finish(buf *bytesBuffer, b []byte, err error) (string, error) {
	if err != nil || cap(b) <= pooledMax {
		s := ""
		if err == nil {
			s = string(b)
		}
		if cap(b) <= pooledMax {
			buf.b = b
			bufs.Put(buf)
		}
		return s, err
	}
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

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
func Encode(cps []engine.Checkpoint) (*Encoded, error) { return (*Encoder)(nil).Encode(cps) }

// Encoder is Encode remembering the last chains it encoded, by pointer: the
// engine never modifies a record it hands a checkpointer (engine.Checkpointer),
// so a chain it starts run after run (a decoded version from the document
// cache, a benchmark's chain) is encoded and hashed once, not per run (125 KB
// of JSON and its SHA-256 for a 1,000-node chain: 4 ms of CPU). A nil
// *Encoder remembers nothing.
type Encoder struct {
	mu     sync.Mutex
	chains map[*chain.Chain]encodedChain
	order  []*chain.Chain // oldest first, to bound the map
}

type encodedChain struct{ doc, ref string }

// encoderChains bounds an Encoder: the chains of the runs starting about
// now; each is held (with its JSON) until pushed out.
const encoderChains = 8

func (e *Encoder) chain(c *chain.Chain) (doc, ref string, err error) {
	if e != nil {
		e.mu.Lock()
		ec, ok := e.chains[c]
		e.mu.Unlock()
		if ok {
			return ec.doc, ec.ref, nil
		}
	}
	b, err := Marshal(c)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	doc, ref = string(b), hex.EncodeToString(sum[:])
	if e != nil {
		e.mu.Lock()
		if _, ok := e.chains[c]; !ok {
			if e.chains == nil {
				e.chains = map[*chain.Chain]encodedChain{}
			}
			if len(e.order) == encoderChains {
				delete(e.chains, e.order[0])
				e.order = append(e.order[:0], e.order[1:]...)
			}
			e.chains[c] = encodedChain{doc, ref}
			e.order = append(e.order, c)
		}
		e.mu.Unlock()
	}
	return doc, ref, nil
}

// Encode turns entries into their stored form.
func (e *Encoder) Encode(cps []engine.Checkpoint) (*Encoded, error) {
	enc := &Encoded{Bodies: make([]string, len(cps)), ChainRefs: make([]any, len(cps))}
	for i := range cps {
		cp := &cps[i]
		if cp.Start == nil || cp.Start.Chain == nil {
			b, err := marshalEntry(cp)
			if err != nil {
				return nil, fmt.Errorf("%s entry: %w", cp.Kind, err)
			}
			enc.Bodies[i] = b
			continue
		}
		doc, ref, err := e.chain(cp.Start.Chain)
		if err != nil {
			return nil, fmt.Errorf("start entry: chain: %w", err)
		}
		start := *cp.Start
		start.Chain = nil
		stored := Stored{Checkpoint: *cp, ChainSHA256: ref}
		stored.Start = &start
		b, err := MarshalString(&stored)
		if err != nil {
			return nil, fmt.Errorf("start entry: %w", err)
		}
		enc.Bodies[i] = b
		enc.ChainRefs[i] = ref
		if enc.Chains == nil {
			enc.Chains = map[string]string{}
		}
		enc.Chains[ref] = doc
	}
	return enc, nil
}

// A node's output is encoded once for its checkpoint entry and its event:
// the engine gives both the same *engine.OutputJSON, and whichever is
// encoded first stores the output's JSON there for the other. The output's
// bytes inside the entry or event are the ones Marshal writes for it in
// place (the same options), so the stored form does not change.

// outputJSON returns *v's JSON, from memo when it holds it (which then lets
// go of it), else encoded and kept there for the other. (v points into the record or event, so nothing is copied
// to encode it.)
func outputJSON(v *any, memo *engine.OutputJSON) ([]byte, error) {
	if b := memo.Take(); b != nil { // the other of the two: it is no longer needed
		return b, nil
	}
	b, err := Marshal(v)
	if err != nil {
		return nil, err
	}
	return memo.Store(b), nil
}
