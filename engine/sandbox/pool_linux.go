//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Supported reports whether this platform can run the sandbox.
const Supported = true

// ErrBusy is returned when more calls wait for a child than the queue holds.
var ErrBusy = errors.New("the code sandbox is busy")

// ErrClosed is returned by a pool that was closed.
var ErrClosed = errors.New("the code sandbox is shut down")

// Pool keeps warm sandbox children. A call takes an idle child (or starts
// one, up to Workers), sends its request and reads the answer; a child that
// dies, is killed (timeout, cancellation) or misbehaves is never reused.
// Safe for concurrent use.
type Pool struct {
	exe  string
	args []string
	lim  Limits

	slots   chan struct{} // one token per child that may exist
	idle    chan *worker
	waiting atomic.Int64
	closed  atomic.Bool

	mu  sync.Mutex
	all map[*worker]struct{}
}

// NewPool returns a pool that starts children as `exe __sandbox …` (exe is
// normally os.Executable()). Children start on first use.
func NewPool(exe string, lim Limits) (*Pool, error) {
	if exe == "" {
		return nil, errors.New("sandbox: no executable to start children from")
	}
	lim = lim.WithDefaults()
	p := &Pool{exe: exe, args: ChildArgs(lim), lim: lim,
		slots: make(chan struct{}, lim.Workers), idle: make(chan *worker, lim.Workers),
		all: map[*worker]struct{}{}}
	return p, nil
}

// Limits returns the pool's limits with defaults filled.
func (p *Pool) Limits() Limits { return p.lim }

// Warm starts n children ahead of the first calls (at most Workers).
func (p *Pool) Warm(n int) error {
	for i := 0; i < min(n, p.lim.Workers); i++ {
		select {
		case p.slots <- struct{}{}:
		default:
			return nil
		}
		w, err := p.start()
		<-p.slots
		if err != nil {
			return err
		}
		p.idle <- w
	}
	return nil
}

// Run runs one script. A script's own failure (a syntax error, a throw, a
// limit) is in the Response; err is for what stopped the call itself
// (ctx, a full queue, a child that could not start or died).
func (p *Pool) Run(ctx context.Context, req *Request) (*Response, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if err := checkSize(req.Code); err != nil {
		return nil, err
	}
	if len(req.Scope) > MaxRequestBytes {
		return nil, fmt.Errorf("the data the script reads is %d bytes as JSON, over the sandbox's limit of %d (16 MiB)", len(req.Scope), MaxRequestBytes)
	}
	if n := p.waiting.Add(1); n > int64(p.lim.MaxQueue) {
		p.waiting.Add(-1)
		return nil, fmt.Errorf("%w: %d calls are waiting for %d workers (--code-workers)", ErrBusy, n-1, p.lim.Workers)
	}
	select {
	case p.slots <- struct{}{}:
		p.waiting.Add(-1)
	case <-ctx.Done():
		p.waiting.Add(-1)
		return nil, context.Cause(ctx)
	}
	defer func() { <-p.slots }()
	var w *worker
	select {
	case w = <-p.idle:
	default:
		var err error
		if w, err = p.start(); err != nil {
			return nil, err
		}
	}
	resp, err := w.call(ctx, req, p.lim)
	if err != nil || resp.Kind == KindMemory {
		// A child that went over its memory once may keep a grown heap:
		// a fresh one is cheap.
		p.drop(w)
		return resp, err
	}
	if p.closed.Load() {
		p.drop(w)
		return resp, nil
	}
	p.idle <- w
	return resp, nil
}

// Close kills every child; calls in progress fail.
func (p *Pool) Close() error {
	p.closed.Store(true)
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		p.drop(w)
	}
	return nil
}

func (p *Pool) drop(w *worker) {
	w.kill()
	p.mu.Lock()
	delete(p.all, w)
	p.mu.Unlock()
}

// worker is one child process.
type worker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	exited chan struct{} // closed once Wait returned
	state  error         // Wait's error, read after exited
}

func (p *Pool) start() (*worker, error) {
	cmd := exec.Command(p.exe, p.args...)
	// Nothing of the studio's: no environment (so no secret in a variable),
	// the root as working folder, no descriptor but the three pipes (Go
	// opens every other with close-on-exec), its own process group so a
	// kill takes whatever it might start.
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: stdout pipe: %w", err)
	}
	w := &worker{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &tail{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", p.exe, err)
	}
	go func() {
		w.state = cmd.Wait()
		close(w.exited)
	}()
	p.mu.Lock()
	p.all[w] = struct{}{}
	p.mu.Unlock()
	return w, nil
}

type result struct {
	resp *Response
	err  error
}

// call sends req and waits for the answer, the context's end, the child's
// death or the backstop (a child that ignores its CPU interrupt).
func (w *worker) call(ctx context.Context, req *Request, lim Limits) (*Response, error) {
	done := make(chan result, 1)
	go func() {
		if err := writeFrame(w.stdin, req, MaxRequestBytes+MaxScriptBytes+4096); err != nil {
			done <- result{err: err}
			return
		}
		var resp Response
		if err := readFrame(w.stdout, &resp, maxResponseBytes); err != nil {
			done <- result{err: err}
			return
		}
		done <- result{resp: &resp}
	}()
	backstop := time.Duration(2*lim.CPUSeconds+5) * time.Second
	t := time.NewTimer(backstop)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			return r.resp, nil
		}
		if errors.Is(r.err, ErrFrameTooLarge) {
			return nil, fmt.Errorf("sandbox: %w", r.err)
		}
		return w.died(lim)
	case <-ctx.Done():
		w.kill()
		return nil, context.Cause(ctx)
	case <-t.C:
		w.kill()
		return &Response{Kind: KindCPU, Error: fmt.Sprintf("the script did not stop at its CPU time limit of %d s and was killed after %s", lim.CPUSeconds, backstop)}, nil
	}
}

// died explains a child that stopped answering: it ran out of address
// space (the memory limit), the kernel killed it for CPU, or it crashed.
func (w *worker) died(lim Limits) (*Response, error) {
	w.kill()
	msg := w.stderr.String()
	switch {
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory"):
		return &Response{Kind: KindMemory, Error: fmt.Sprintf("the script went over its memory limit of %d MiB (the sandbox process ran out of memory and was replaced)", lim.MemoryMB)}, nil
	}
	var ee *exec.ExitError
	if errors.As(w.state, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGXCPU || ws.Signal() == syscall.SIGKILL) {
			return &Response{Kind: KindCPU, Error: fmt.Sprintf("the script went over its CPU time limit of %d s (the sandbox process was killed)", lim.CPUSeconds)}, nil
		}
	}
	last := strings.TrimSpace(msg)
	if i := strings.IndexByte(last, '\n'); i >= 0 {
		last = last[:i] // the runtime's reason; the rest is a trace
	}
	if len(last) > 300 {
		last = last[:300]
	}
	return nil, fmt.Errorf("the sandbox process died (%v): %s", w.state, last)
}

// kill ends the child's whole process group and waits for it.
func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = w.stdin.Close()
	<-w.exited
}

// tail keeps the first and the last max bytes written (a child's stderr:
// the Go runtime's reason comes first, the rest last).
type tail struct {
	mu   sync.Mutex
	max  int
	head []byte
	b    []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = bytes.Clone(t.b[over:])
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + "\n" + string(t.b)
}
