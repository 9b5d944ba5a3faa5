// Package sandbox runs the code node's JavaScript (goja) outside the
// studio's process: a pool of child processes, each the studio's own binary
// re-executed with a hidden subcommand, bounded in memory (RLIMIT_AS and a
// heap watch) and CPU time (RLIMIT_CPU), with an empty environment and no
// descriptors but its pipes. The parent and a child speak length-prefixed
// frames over stdin and stdout, bounded both ways.
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
	"time"
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
	DefaultWorkers        = 2
	DefaultMemoryMB       = 256
	DefaultCPUSeconds     = 10
	DefaultRunConcurrency = 32
	DefaultRunCPUSeconds  = 300
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
	// RunConcurrency is how many calls of one run (Request.Session) may
	// be in the sandbox at once, running or written to a child (default
	// 32: the pipelines of two workers, which a map of short calls keeps
	// full); a run whose last call took long gets at most one per worker.
	// Runs with calls waiting take turns for free places.
	RunConcurrency int
	// RunCPUSeconds is the CPU time all the calls of one run may use
	// (default 300 s); past it the run's further calls fail. Negative:
	// no budget. Calls without a session have none.
	RunCPUSeconds int
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
	if l.RunConcurrency <= 0 {
		l.RunConcurrency = DefaultRunConcurrency
	}
	if l.RunCPUSeconds == 0 {
		l.RunCPUSeconds = DefaultRunCPUSeconds
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
	// Session groups calls that may share one runtime: the calls of one
	// run (tool.Scope.Session). Such a call sees what an earlier call of
	// the same script in the same run left on shared prototypes, never what
	// another run left. "" gets a fresh runtime. It is also the unit the
	// pool shares its children fairly between and charges CPU time to.
	Session string `json:"session,omitempty"`
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
	// CPU is the CPU time the call used in its child (measured for a call
	// that ran past the CPU watch's first tick, else its wall time).
	CPU time.Duration `json:"-"`
}

// ErrFrameTooLarge is returned for a frame over its bound.
var ErrFrameTooLarge = errors.New("frame too large")

// The frames. Each is a 4-byte big-endian length and a body.
//
// A request's body is binary, so that neither side scans the script or
// the data more than once: the call's CPU allowance in milliseconds (4
// bytes, 0 for the child's own limit; set when the call is sent, see
// setAllowance), the script's length (4 bytes) and text, the session's
// length and text, then the scope's JSON to the end.
//
// A response's body is a type byte, the CPU time the call used in
// microseconds (a uvarint), then: for 'V' the value's JSON when the call
// succeeded and logged nothing (a map's usual item), for 'J' the Response
// as JSON.

// encodeRequest returns a Request as one frame.
func encodeRequest(req *Request, max int) ([]byte, error) {
	n := 4 + 4 + len(req.Code) + 4 + len(req.Session) + len(req.Scope)
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, n, max)
	}
	buf := make([]byte, 8, 4+n)
	binary.BigEndian.PutUint32(buf, uint32(n))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(req.Code)))
	buf = append(buf, req.Code...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(req.Session)))
	buf = append(buf, req.Session...)
	return append(buf, req.Scope...), nil
}

// setAllowance writes a request frame's CPU allowance.
func setAllowance(frame []byte, d time.Duration) {
	binary.BigEndian.PutUint32(frame[4:], uint32(max(d.Milliseconds(), 1)))
}

// decodeRequest reads a request frame's body and its CPU allowance (0:
// the child's own limit).
func decodeRequest(b []byte) (*Request, time.Duration, error) {
	if len(b) < 4 {
		return nil, 0, errors.New("request frame cut short")
	}
	allow := time.Duration(binary.BigEndian.Uint32(b)) * time.Millisecond
	b = b[4:]
	next := func() (string, error) {
		if len(b) < 4 {
			return "", errors.New("request frame cut short")
		}
		n := binary.BigEndian.Uint32(b)
		if uint64(n) > uint64(len(b)-4) {
			return "", errors.New("request frame cut short")
		}
		s := string(b[4 : 4+n])
		b = b[4+n:]
		return s, nil
	}
	code, err := next()
	if err != nil {
		return nil, 0, err
	}
	session, err := next()
	if err != nil {
		return nil, 0, err
	}
	return &Request{Code: code, Session: session, Scope: b}, allow, nil
}

// appendResponse appends a response frame to buf.
func appendResponse(buf []byte, resp *Response, max int) ([]byte, error) {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0)
	var cpu uint64
	if resp.CPU > 0 {
		cpu = uint64(resp.CPU.Microseconds())
	}
	if resp.Kind == "" && len(resp.Logs) == 0 && resp.LogsDropped == 0 {
		buf = append(buf, 'V')
		buf = binary.AppendUvarint(buf, cpu)
		buf = append(buf, resp.Value...)
	} else {
		b, err := json.Marshal(resp)
		if err != nil {
			return buf[:start], fmt.Errorf("encode frame: %w", err)
		}
		buf = append(buf, 'J')
		buf = binary.AppendUvarint(buf, cpu)
		buf = append(buf, b...)
	}
	n := len(buf) - start - 4
	if n > max {
		return buf[:start], fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, n, max)
	}
	binary.BigEndian.PutUint32(buf[start:], uint32(n))
	return buf, nil
}

// decodeResponse reads a response frame's body.
func decodeResponse(b []byte) (*Response, error) {
	if len(b) == 0 {
		return nil, errors.New("empty response frame")
	}
	cpu, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return nil, errors.New("response frame without its CPU time")
	}
	body := b[1+n:]
	switch b[0] {
	case 'V':
		return &Response{Value: json.RawMessage(body), CPU: time.Duration(cpu) * time.Microsecond}, nil
	case 'J':
		var r Response
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		r.CPU = time.Duration(cpu) * time.Microsecond
		return &r, nil
	}
	return nil, fmt.Errorf("response frame of unknown type %q", b[0])
}

// readFrame reads one frame's body, refusing one over max before reading
// it.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrFrameTooLarge, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read frame body: %w", err)
	}
	return b, nil
}
