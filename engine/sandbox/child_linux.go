//go:build linux

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dop251/goja"
)

// ChildArg is the hidden subcommand that makes the studio's binary a
// sandbox child; ChildArgs builds its whole command line.
const ChildArg = "__sandbox"

// ChildArgs is the child's arguments after the program name: the limits
// travel on the command line because the environment is empty.
func ChildArgs(l Limits) []string {
	l = l.WithDefaults()
	return []string{ChildArg, strconv.Itoa(l.MemoryMB), strconv.Itoa(l.CPUSeconds)}
}

// exit codes a child ends with on purpose, read by the pool.
const (
	exitUsage  = 90
	exitLimits = 91
)

// Child is the sandbox child's main: args are what follows ChildArg. It
// sets its limits before reading any script, then answers requests on
// stdin/stdout until stdin closes, and never returns.
func Child(args []string) {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "sandbox: usage: __sandbox MEMORY_MB CPU_SECONDS")
		os.Exit(exitUsage)
	}
	mem, err1 := strconv.Atoi(args[0])
	cpu, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || mem <= 0 || cpu <= 0 {
		fmt.Fprintln(os.Stderr, "sandbox: bad limits", args)
		os.Exit(exitUsage)
	}
	l := Limits{MemoryMB: mem, CPUSeconds: cpu}.WithDefaults()
	closeInherited()
	if err := setLimits(l); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(exitLimits)
	}
	serve(os.Stdin, os.Stdout, l)
	os.Exit(0)
}

// setLimits caps the child's address space (the backstop: an allocation
// beyond it fails and the Go runtime dies) and asks the Go heap to stay
// under the script's limit (the GC works harder before the watch fires).
func setLimits(l Limits) error {
	// The Go runtime has already reserved most of its address space (the
	// page summaries, the arena index: about 1 GiB of mappings for a few
	// MiB of memory), so the cap is what is mapped now plus the script's
	// share: its heap twice over (the GC's room) and a margin for thread
	// stacks and the runtime's own growth.
	base, err := mappedBytes()
	if err != nil {
		return err
	}
	as := base + uint64(l.AddressSpaceMB())<<20
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("set RLIMIT_AS to %d MiB: %w", as>>20, err)
	}
	// No core files: a child killed for its limits leaves nothing behind.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	// The GC's soft limit sits above the watch's: at the watch's own limit
	// the GC would collect without end (a script that keeps what it
	// allocates would spin until its CPU limit instead of failing for
	// memory).
	debug.SetMemoryLimit(int64(l.MemoryMB) << 20 * 3 / 2)
	// A fatal error (out of memory) prints its reason, not every
	// goroutine's stack: the pool reads the reason.
	debug.SetTraceback("none")
	runtime.GOMAXPROCS(2)
	return nil
}

// closeInherited closes the descriptors the child inherited beyond its
// three pipes. Go opens its own files close-on-exec, but a descriptor the
// studio itself inherited without that flag (from a shell, a supervisor)
// passes through exec to every child. The Go runtime's own descriptors stay:
// its poller (anon inodes) and the cgroup files it reads its CPU quota from.
func closeInherited() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "/sys/fs/cgroup/") || target == "/proc/self/fd" {
			continue
		}
		_ = syscall.Close(fd)
	}
}

// mappedBytes is the process's virtual size (VmSize in /proc/self/status).
func mappedBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read the virtual size: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmSize %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmSize in /proc/self/status")
}

// running is the VM of the call in progress, for the watches.
type running struct {
	mu sync.Mutex
	vm *goja.Runtime
}

func (r *running) set(vm *goja.Runtime) {
	r.mu.Lock()
	r.vm = vm
	r.mu.Unlock()
}

func (r *running) interrupt(in interrupt) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vm == nil {
		return false
	}
	r.vm.Interrupt(in)
	return true
}

func serve(in io.Reader, w io.Writer, l Limits) {
	r := bufio.NewReaderSize(in, 64<<10)
	cache := &programs{}
	cur := &running{}

	// CPU: a watch reads the process's CPU time while a call runs and
	// interrupts it at its allowance. RLIMIT_CPU, which counts the
	// process's whole life in whole seconds, is the backstop: each call
	// moves the soft limit past the allowance, and the kernel's SIGXCPU
	// (sent every second past it) interrupts a script the watch missed.
	xcpu := make(chan os.Signal, 4)
	signal.Notify(xcpu, syscall.SIGXCPU)
	cpuMsg := fmt.Sprintf("the script went over its CPU time limit of %d s", l.CPUSeconds)
	go func() {
		for range xcpu {
			cur.interrupt(interrupt{KindCPU, cpuMsg})
		}
	}()
	perCall := time.Duration(l.CPUSeconds) * time.Second
	cpu := newCPUWatch()
	go cpu.run(func(allow time.Duration) {
		msg := cpuMsg
		if allow < perCall { // the parent gave less: what is left of the run's budget
			msg = fmt.Sprintf("the script used the %s of CPU time left to its run", allow)
		}
		cur.interrupt(interrupt{KindCPU, msg})
	})

	// Memory: a watch reads the live heap every few milliseconds while a
	// script runs and interrupts it past the limit; RLIMIT_AS is the
	// backstop for one allocation too big to be seen growing.
	memMsg := fmt.Sprintf("the script went over its memory limit of %d MiB", l.MemoryMB)
	limit := uint64(l.MemoryMB) << 20
	watch := newMemWatch()
	go watch.run(limit, func() { cur.interrupt(interrupt{KindMemory, memMsg}) })
	vms := &vmCache{}
	cpuLimit := &cpuAllowance{seconds: l.CPUSeconds}

	var out []byte // response frames not yet written
	for {
		body, err := readFrame(r, MaxRequestBytes+MaxScriptBytes+4096)
		if err != nil {
			if err == io.EOF {
				return
			}
			fmt.Fprintln(os.Stderr, "sandbox: read request:", err)
			os.Exit(exitUsage)
		}
		req, allow, err := decodeRequest(body)
		if err != nil {
			fmt.Fprintln(os.Stderr, "sandbox: read request:", err)
			os.Exit(exitUsage)
		}
		if err := cpuLimit.allow(); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox:", err)
			os.Exit(exitLimits)
		}
		if allow <= 0 || allow > perCall {
			allow = perCall
		}
		cpu.begin(allow)
		resp := execute(cache, vms, req, func(vm *goja.Runtime) {
			cur.set(vm)
			watch.set(vm != nil)
		})
		resp.CPU = cpu.end()
		req, body = nil, nil
		if resp.Kind == KindMemory {
			runtime.GC()
			debug.FreeOSMemory()
		}
		if out, err = appendResponse(out, &resp, maxResponseBytes); err != nil {
			fmt.Fprintln(os.Stderr, "sandbox: write response:", err)
			os.Exit(exitUsage)
		}
		if r.Buffered() > 0 && len(out) < 64<<10 {
			continue // more requests are here: answer them first, then write once
		}
		if _, err := w.Write(out); err != nil {
			os.Exit(0) // the parent is gone
		}
		if cap(out) > 1<<20 {
			out = nil // a big answer's buffer goes
		}
		out = out[:0]
	}
}

// cpuAllowance is the backstop behind cpuWatch: it moves the soft
// RLIMIT_CPU before each call to the CPU time used so far plus the call's
// seconds (rounded up: the kernel counts whole seconds). The hard limit is
// left alone: an unprivileged process cannot raise it again for the next
// call; the pool kills a child that ignores its interrupt. Calls in the
// same second of CPU time need no new limit, and calls within a quarter
// second of wall time of the last reading need no reading: two threads use
// at most half a second of CPU time in it, less than the second the soft
// limit rounds up by.
type cpuAllowance struct {
	seconds   int
	hard, set uint64
	read      bool
	checked   time.Time
}

func (c *cpuAllowance) allow() error {
	now := time.Now()
	if c.read && now.Sub(c.checked) < 250*time.Millisecond {
		return nil
	}
	c.checked = now
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return fmt.Errorf("getrusage: %w", err)
	}
	if !c.read {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_CPU, &cur); err != nil {
			return fmt.Errorf("getrlimit: %w", err)
		}
		c.hard, c.read = cur.Max, true
	}
	// Whole seconds used, rounded up, plus one for the reading skipped
	// above: a call gets between seconds and seconds+2 of CPU time.
	usec := (ru.Utime.Sec+ru.Stime.Sec)*1_000_000 + int64(ru.Utime.Usec+ru.Stime.Usec)
	used := usec/1_000_000 + 2
	soft := min(uint64(used)+uint64(c.seconds), c.hard)
	if soft == c.set {
		return nil
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: soft, Max: c.hard}); err != nil {
		return err
	}
	c.set = soft
	return nil
}

// cpuTick is how often the CPU watch reads the process's CPU time while a
// call runs: a call stops within about two ticks past its allowance.
const cpuTick = 20 * time.Millisecond

// cpuWatch stops a call at its CPU allowance. While a call runs it reads
// the process's CPU time (all its threads: the collector's work for the
// script counts too) every cpuTick, from the first tick that sees the call;
// at the allowance it interrupts the script. Marking a call's start and
// end is a lock and a clock reading each, and the CPU time is read only for
// a call a tick saw, so a map's short calls cost no system call: such a call
// is charged its wall time, which is at least the CPU it used on one thread.
type cpuWatch struct {
	mu      sync.Mutex
	n       uint64        // calls begun
	seq     uint64        // the call running (n at its start); 0 when none
	start   time.Time     // its start
	allow   time.Duration // its allowance
	stopped bool          // it was interrupted
	seen    uint64        // the call a tick first saw
	seenCPU time.Duration // the process's CPU time then
	seenAt  time.Time
	wake    chan struct{}
}

func newCPUWatch() *cpuWatch { return &cpuWatch{wake: make(chan struct{}, 1)} }

func (c *cpuWatch) begin(allow time.Duration) {
	c.mu.Lock()
	c.n++
	c.seq, c.start, c.allow, c.stopped = c.n, time.Now(), allow, false
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// end marks the call done and returns the CPU time it used.
func (c *cpuWatch) end() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	used := time.Since(c.start)
	if c.seen == c.seq {
		// Before the tick that saw it the call is charged its wall time,
		// at most a tick's.
		used = processCPU() - c.seenCPU + min(c.seenAt.Sub(c.start), cpuTick)
	}
	c.seq = 0
	return used
}

func (c *cpuWatch) run(over func(allow time.Duration)) {
	t := time.NewTicker(cpuTick)
	t.Stop()
	idle := idleTicks
	for {
		if idle >= idleTicks {
			t.Stop()
			<-c.wake
			idle = 0
			t.Reset(cpuTick)
		}
		<-t.C
		c.mu.Lock()
		switch {
		case c.seq == 0:
			idle++
		case c.seen != c.seq:
			// The call's CPU time counts from here: a call is never
			// stopped short of its allowance, and at most a tick past it.
			idle = 0
			c.seen, c.seenCPU, c.seenAt = c.seq, processCPU(), time.Now()
		case !c.stopped && processCPU()-c.seenCPU >= c.allow:
			// Under mu: the call cannot end and the next begin before
			// the interrupt reaches this one's runtime.
			c.stopped = true
			over(c.allow)
		}
		c.mu.Unlock()
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memWatch samples the heap every few milliseconds while scripts run; past
// the limit it collects, and calls over when what is still live passes
// the limit (garbage alone never fails a script). Marking a call's start
// and end is two atomic stores: a burst of short calls (a map's items)
// costs the serving loop no hand-off to the watch. The watch sleeps after
// a quiet spell and is woken by the next start.
type memWatch struct {
	busy atomic.Bool
	wake chan struct{}
}

func newMemWatch() *memWatch { return &memWatch{wake: make(chan struct{}, 1)} }

// idleTicks is how many quiet samples the watch takes before it sleeps.
const idleTicks = 50

func (m *memWatch) set(on bool) {
	m.busy.Store(on)
	if on {
		select {
		case m.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

func (m *memWatch) run(limit uint64, over func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(2 * time.Millisecond)
	t.Stop()
	idle := idleTicks
	for {
		if idle >= idleTicks {
			// Sleep until a call starts. A start between the check
			// above and this receive left its token in wake.
			t.Stop()
			<-m.wake
			idle = 0
			t.Reset(2 * time.Millisecond)
		}
		<-t.C
		if !m.busy.Load() {
			idle++
			continue
		}
		idle = 0
		metrics.Read(sample)
		if sample[0].Value.Uint64() <= limit {
			continue
		}
		runtime.GC()
		metrics.Read(live)
		if live[0].Value.Uint64() > limit && m.busy.Load() {
			over()
		}
	}
}
