//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
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

// pipelineDepth is how many calls one child may have written to it and not
// yet answered: a map over many items sends them without waiting for each
// answer (one wake-up of the child serves several calls), which is most of
// a trivial call's cost on a busy machine.
const pipelineDepth = 16

// maxRetries bounds how often a call is sent again because another call
// on the same child killed it (a timeout, a memory limit). Scripts have no
// effects outside their result, so sending one again is safe.
const maxRetries = 3

// Pool keeps warm sandbox children. Calls take turns by run (sched); a
// call goes to a live child not running a long call, the one with the
// fewest calls in flight (starting one, up to Workers); a child that dies,
// is killed (timeout, cancellation) or went over its memory is never
// reused, and the calls it held but had not started are sent again
// elsewhere. Safe for concurrent use.
type Pool struct {
	exe  string
	args []string
	lim  Limits

	sched  *sched
	closed atomic.Bool

	mu      sync.Mutex
	workers []*worker // live children
	all     map[*worker]struct{}
}

// NewPool returns a pool that starts children as `exe __sandbox …` (exe is
// normally os.Executable()). Children start on first use.
func NewPool(exe string, lim Limits) (*Pool, error) {
	if exe == "" {
		return nil, errors.New("sandbox: no executable to start children from")
	}
	lim = lim.WithDefaults()
	return &Pool{exe: exe, args: ChildArgs(lim), lim: lim, sched: newSched(lim), all: map[*worker]struct{}{}}, nil
}

// Limits returns the pool's limits with defaults filled.
func (p *Pool) Limits() Limits { return p.lim }

// Warm starts up to n children ahead of the first calls.
func (p *Pool) Warm(n int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.workers) < min(n, p.lim.Workers) {
		if p.closed.Load() {
			return ErrClosed // Close takes mu after setting closed: nothing starts after it
		}
		w, err := p.start()
		if err != nil {
			return err
		}
		p.workers = append(p.workers, w)
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
	frame, err := encodeRequest(req, MaxRequestBytes+MaxScriptBytes+4096)
	if err != nil {
		return nil, err
	}
	g, err := p.sched.acquire(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	setAllowance(frame, g.allow)
	var (
		cpu      time.Duration
		answered bool
	)
	defer func() { p.sched.release(g, cpu, answered) }()
	for attempt := 0; ; attempt++ {
		w, err := p.pick()
		if err != nil {
			return nil, err
		}
		out := w.call(ctx, frame, p.lim)
		if out.retry && attempt < maxRetries && ctx.Err() == nil {
			continue
		}
		if out.retry {
			return nil, errors.New("the sandbox process serving this call was stopped by another call's limit, again and again")
		}
		cpu = out.ran // a call killed while it ran
		if out.resp != nil {
			answered, cpu = true, out.resp.CPU
			if out.resp.Kind == KindCPU {
				cpu = max(cpu, g.allow) // a child killed for CPU reports none
				if g.budget {
					out.resp.Error = fmt.Sprintf("the run's code nodes went over their CPU time budget of %d s a run (--code-run-cpu-seconds)", p.lim.RunCPUSeconds)
				}
			}
		}
		return out.resp, out.err
	}
}

// pick returns the live child with the fewest calls in flight, passing
// over one whose running call is long when another is not, and starting a
// child when every child is busy and there is room for another.
func (p *Pool) pick() (*worker, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	live := p.workers[:0]
	for _, w := range p.workers {
		if !w.isDead() {
			live = append(live, w)
		}
	}
	p.workers = live
	var (
		best     *worker
		bestN    int
		bestLong bool
	)
	now := time.Now()
	for _, w := range p.workers {
		n, long := w.load(now)
		if best == nil || (bestLong && !long) || (long == bestLong && n < bestN) {
			best, bestN, bestLong = w, n, long
		}
	}
	if best == nil || (bestN > 0 && len(p.workers) < p.lim.Workers) {
		w, err := p.start()
		if err != nil {
			return nil, err
		}
		p.workers = append(p.workers, w)
		return w, nil
	}
	return best, nil
}

// Close kills every child; calls in progress fail.
func (p *Pool) Close() error {
	p.closed.Store(true)
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.workers = nil
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
	}
	return nil
}

// children counts the child processes started and not yet ended.
func (p *Pool) children() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.all)
}

// call is one request written to a child.
type call struct {
	done      chan outcome // buffered: the reader never blocks on it
	abandoned bool         // its caller left (ctx ended); its answer is dropped
	started   time.Time    // when it became the one the child runs
}

type outcome struct {
	resp  *Response
	err   error
	retry bool          // the child was stopped before this call ran: send it again
	ran   time.Duration // how long it ran before it was killed for its caller
}

// worker is one child process and the calls written to it, in order.
type worker struct {
	p      *Pool
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *tail
	exited chan struct{} // closed once Wait returned
	state  error         // Wait's error, read after exited

	// Frames to write: a call appends its frame to wbuf and wakes the
	// worker's writer, which writes everything queued at once, so calls
	// made together (a map's items) reach the child in few writes and no
	// call waits for a write.
	wmu     sync.Mutex
	wbuf    []byte
	wake    chan struct{} // one pending wake-up for the writer
	mu      sync.Mutex
	pending []*call // written (or being written), not answered; pending[0] is running
	dead    bool
	killed  bool // by the pool: a timeout, a cancellation, the backstop
	cause   *outcome
	spared  atomic.Int32 // times the backstop let a call past its wall time run on (for tests)
}

func (w *worker) isDead() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dead
}

// load is the calls in flight and whether the running one has run long.
func (w *worker) load(now time.Time) (n int, long bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) > 0 && !w.pending[0].started.IsZero() {
		long = now.Sub(w.pending[0].started) > longRunning
	}
	return len(w.pending), long
}

func (p *Pool) start() (*worker, error) {
	cmd := exec.Command(p.exe, p.args...)
	// Nothing of the studio's: no environment (so no secret in a variable),
	// the root as working folder, no descriptor but the three pipes (Go
	// opens every other with close-on-exec; the child closes any the
	// studio inherited without it), its own process group so a kill takes
	// whatever it might start.
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
	w := &worker{p: p, cmd: cmd, stdin: stdin, wake: make(chan struct{}, 1), stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &tail{max: 4 << 10}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", p.exe, err)
	}
	go func() {
		w.state = cmd.Wait()
		close(w.exited)
	}()
	p.all[w] = struct{}{}
	go w.read()
	go w.write()
	go w.watch()
	return w, nil
}

// call writes a request and waits for its answer, its context's end, or
// the child's death.
func (w *worker) call(ctx context.Context, frame []byte, lim Limits) outcome {
	c := &call{done: make(chan outcome, 1)}
	// wmu keeps frames whole and in the order of pending; the write itself
	// is outside both locks, so a child too busy to read (a big frame, a
	// stuck script) never keeps kill, the reader or the watch from mu, nor
	// other calls from queueing their frames.
	w.wmu.Lock()
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		w.wmu.Unlock()
		return outcome{retry: true}
	}
	w.pending = append(w.pending, c)
	if len(w.pending) == 1 {
		c.started = time.Now()
	}
	w.mu.Unlock()
	w.wbuf = append(w.wbuf, frame...)
	w.wmu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // the writer has a wake-up pending: it takes this frame too
	}
	select {
	case out := <-c.done:
		return out
	case <-ctx.Done():
		w.mu.Lock()
		c.abandoned = true
		running := len(w.pending) > 0 && w.pending[0] == c
		var ran time.Duration
		if running && !c.started.IsZero() {
			ran = time.Since(c.started)
		}
		w.mu.Unlock()
		if running {
			w.kill() // the child is running a script nobody waits for
		}
		return outcome{err: context.Cause(ctx), ran: ran}
	}
}

// write is the worker's writer: at each wake-up it writes the frames
// queued, until none is left. A failed write kills the child (its reader
// then answers every call it held).
func (w *worker) write() {
	var spare []byte
	for {
		select {
		case <-w.wake:
		case <-w.exited:
			return
		}
		for {
			w.wmu.Lock()
			buf := w.wbuf
			if len(buf) == 0 {
				w.wmu.Unlock()
				break
			}
			w.wbuf = spare[:0]
			w.wmu.Unlock()
			if _, err := w.stdin.Write(buf); err != nil {
				w.kill()
				return
			}
			spare = nil
			if cap(buf) <= 1<<20 {
				spare = buf // reused unless a big frame grew it
			}
		}
	}
}

// read delivers the child's answers in order, and on its death the reason
// to the call it was running and a retry to the others.
func (w *worker) read() {
	for {
		var resp *Response
		body, err := readFrame(w.stdout, maxResponseBytes)
		if err == nil {
			resp, err = decodeResponse(body)
		}
		w.mu.Lock()
		if err != nil || len(w.pending) == 0 {
			w.mu.Unlock()
			w.die(err)
			return
		}
		c := w.pending[0]
		w.pending = w.pending[1:]
		if len(w.pending) > 0 {
			w.pending[0].started = time.Now()
		}
		nextAbandoned := len(w.pending) > 0 && w.pending[0].abandoned
		w.mu.Unlock()
		if !c.abandoned {
			c.done <- outcome{resp: resp}
		}
		if resp.Kind == KindMemory || nextAbandoned {
			// A child that went over its memory may keep a grown heap; a
			// fresh one is cheap. One running an abandoned call is wasted.
			w.kill()
		}
	}
}

// die ends the child and answers every call it held.
func (w *worker) die(readErr error) {
	w.end(false)
	<-w.exited
	w.mu.Lock()
	pending := w.pending
	w.pending = nil
	killed := w.killed
	cause := w.cause
	w.mu.Unlock()
	for i, c := range pending {
		if c.abandoned {
			continue
		}
		switch {
		case i == 0 && cause != nil:
			c.done <- *cause
		case i == 0 && !killed:
			resp, err := w.died(w.p.lim, readErr)
			c.done <- outcome{resp: resp, err: err}
		default:
			c.done <- outcome{retry: true}
		}
	}
	w.p.mu.Lock()
	delete(w.p.all, w)
	w.p.mu.Unlock()
}

// watch is the backstop: a call that runs well past its CPU allowance (a
// script stuck in a native call the interrupt cannot stop) gets its child
// killed. Past 2S + 5 s of wall time the child's own CPU time decides,
// counted from the first second the watch saw the call: on a busy machine
// a script may take that long without having used its allowance, and is
// still stopped by the child's own watch. Past five times that, wall time
// alone decides (a child that hangs without using CPU).
func (w *worker) watch() {
	allow := time.Duration(w.p.lim.CPUSeconds) * time.Second
	backstop := 2*allow + 5*time.Second
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var (
		seen    *call
		seenCPU time.Duration
	)
	for {
		select {
		case <-w.exited:
			return
		case <-t.C:
		}
		w.mu.Lock()
		var head *call
		if len(w.pending) > 0 && !w.pending[0].started.IsZero() && w.cause == nil {
			head = w.pending[0]
		}
		w.mu.Unlock()
		if head == nil {
			seen = nil
			continue
		}
		if head != seen {
			seen, seenCPU = head, procCPU(w.cmd.Process.Pid)
			continue
		}
		ran := time.Since(head.started)
		if ran <= backstop {
			continue
		}
		used := procCPU(w.cmd.Process.Pid) - seenCPU
		if seenCPU >= 0 && used >= 0 && used < allow+2*time.Second && ran <= 5*backstop {
			w.spared.Add(1)
			continue // the child has not had its allowance yet: its own watch stops it
		}
		w.mu.Lock()
		over := len(w.pending) > 0 && w.pending[0] == head && w.cause == nil
		if over {
			w.cause = &outcome{resp: &Response{Kind: KindCPU, Error: fmt.Sprintf("the script did not stop at its CPU time limit of %d s and was killed after %s", w.p.lim.CPUSeconds, ran.Round(time.Second))}}
		}
		w.mu.Unlock()
		if over {
			w.kill()
		}
	}
}

// procCPU is the CPU time process pid has used (user and system, from
// /proc/PID/stat in the kernel's 100 Hz ticks), or -1 when it cannot be
// read: the backstop then goes by wall time alone.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	// After the command's ")": state, ppid, … utime is the 12th, stime
	// the 13th.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return -1
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// died explains a child that stopped answering on its own: it ran out of
// address space (the memory limit), the kernel killed it for CPU, or it
// crashed.
func (w *worker) died(lim Limits, readErr error) (*Response, error) {
	msg := w.stderr.String()
	if errors.Is(readErr, ErrFrameTooLarge) {
		return nil, fmt.Errorf("sandbox: %w", readErr)
	}
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

// kill ends the child's whole process group on the pool's decision (the
// reader then answers the calls it held: none of them caused it).
func (w *worker) kill() { w.end(true) }

func (w *worker) end(byPool bool) {
	w.mu.Lock()
	if !w.dead {
		w.dead = true
		w.killed = byPool
		if w.cmd.Process != nil {
			_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		}
		_ = w.stdin.Close()
	}
	w.mu.Unlock()
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
