// Package sandbox runs the code node's JavaScript (goja) outside the
// studio's process: a pool of child processes, each the studio's own binary
// re-executed with a hidden subcommand, bounded in memory (RLIMIT_AS and a
// heap watch) and CPU time (RLIMIT_CPU), with an empty environment and no
// descriptors but its pipes. The parent and a child speak length-prefixed
// JSON frames over stdin and stdout, bounded both ways.
//
// goja has no memory limit and its interrupt cannot stop a native call in
// progress, so a script never runs in the studio's process: whatever a
// script does, the worst case is a dead child, which the pool replaces.
// Parsing (Check) is safe in-process: it is bounded by MaxScriptBytes.
package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds on what crosses the pipes and what a script may log.
const (
	// MaxScriptBytes caps a script's source.
	MaxScriptBytes = 64 << 10
	// MaxRequestBytes caps the data handed to a script (its whole context
	// as JSON).
	MaxRequestBytes = 16 << 20
	// MaxOutputBytes caps a script's result as JSON, like other tools'
	// outputs.
	MaxOutputBytes = 1 << 20
	// MaxLogLines and MaxLogBytes cap console.log per call; further lines
	// are counted, not kept.
	MaxLogLines = 100
	MaxLogBytes = 16 << 10
	// maxResponseBytes bounds a reply frame: the output, the logs, an error.
	maxResponseBytes = MaxOutputBytes + MaxLogBytes + 64<<10
)

// Defaults for Limits.
const (
	DefaultWorkers    = 2
	DefaultMemoryMB   = 256
	DefaultCPUSeconds = 10
)

// Limits bound each child and the pool.
type Limits struct {
	// Workers is the number of child processes (default 2); calls beyond
	// them wait in a queue of at most MaxQueue (default 64 per worker).
	Workers  int
	MaxQueue int
	// MemoryMB is the heap a script may use (default 256 MiB); the child's
	// address space is capped a fixed margin above it (AddressSpaceMB).
	MemoryMB int
	// CPUSeconds is the CPU time one call may use (default 10 s).
	CPUSeconds int
}

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	if l.Workers <= 0 {
		l.Workers = DefaultWorkers
	}
	if l.MaxQueue <= 0 {
		l.MaxQueue = 64 * l.Workers
	}
	if l.MemoryMB <= 0 {
		l.MemoryMB = DefaultMemoryMB
	}
	if l.CPUSeconds <= 0 {
		l.CPUSeconds = DefaultCPUSeconds
	}
	return l
}

// runtimeMarginMB is what a child's Go runtime may still map beside the
// script's heap once it runs: thread stacks, span and GC metadata.
const runtimeMarginMB = 256

// AddressSpaceMB is what a child lets itself map above what its Go runtime
// mapped at start (RLIMIT_AS is set to the sum). Measured on linux/amd64
// (Go 1.26): a child maps about 1 GiB before it runs anything, and a limit
// set before the runtime starts must be at least ~900 MiB for it to start
// at all; hence the limit is set by the child itself, relative to that.
func (l Limits) AddressSpaceMB() int { return l.WithDefaults().MemoryMB*2 + runtimeMarginMB }

// Request is one call: the script and the names it reads.
type Request struct {
	Code string `json:"code"`
	// Scope is a JSON object: each key becomes a name the script reads.
	Scope json.RawMessage `json:"scope"`
}

// Error kinds a Response carries.
const (
	KindSyntax  = "syntax"  // the script does not parse
	KindRuntime = "runtime" // it threw
	KindMemory  = "memory"  // it went over the memory limit
	KindCPU     = "cpu"     // it went over the CPU time limit
	KindOutput  = "output"  // its result is not JSON or is too big
)

// Response is a call's outcome.
type Response struct {
	Value       json.RawMessage `json:"value,omitempty"`
	Error       string          `json:"error,omitempty"`
	Kind        string          `json:"kind,omitempty"`
	Line        int             `json:"line,omitempty"`
	Column      int             `json:"column,omitempty"`
	Logs        []string        `json:"logs,omitempty"`
	LogsDropped int             `json:"logs_dropped,omitempty"`
}

// ErrFrameTooLarge is returned for a frame over its bound.
var ErrFrameTooLarge = errors.New("frame too large")

// encodeFrame returns v as one frame.
func encodeFrame(v any, max int) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode frame: %w", err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, len(b), max)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	return buf, nil
}

// writeFrame writes v as one frame: a 4-byte big-endian length, then JSON.
func writeFrame(w io.Writer, v any, max int) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode frame: %w", err)
	}
	if len(b) > max {
		return fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, len(b), max)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// readFrame reads one frame into v, refusing one over max before reading it.
func readFrame(r io.Reader, v any, max int) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return fmt.Errorf("read frame body: %w", err)
	}
	return json.Unmarshal(b, v)
}
