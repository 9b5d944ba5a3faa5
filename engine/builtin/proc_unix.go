//go:build unix

package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/chainstudio/studio/engine/tool"
)

// pipeDrainDelay bounds how long proc waits for output once the program and
// its process group are gone (a process that left the group may still hold
// the pipes open).
const pipeDrainDelay = time.Second

// procTimeoutError reports a proc call stopped by its own `timeout`.
type procTimeoutError struct {
	prog string
	sec  float64
}

func (e *procTimeoutError) Error() string {
	return fmt.Sprintf("proc timed out after %s (program %q and its child processes were killed)", secondsString(e.sec), e.prog)
}

func (e *procTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// call implements the proc tool. The program runs in its own process group;
// when the context ends, the timeout expires or the program exits, the whole
// group is killed, so no child it started outlives the call.
func (t *procTool) call(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
	req, err := t.check(in)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	prog := req.argv[0]
	var runCtx context.Context
	var cancel context.CancelFunc
	if req.timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, req.timeout)
	} else {
		runCtx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	cmd := exec.CommandContext(runCtx, req.path)
	cmd.Args = req.argv
	cmd.Env = req.env
	cmd.Dir = req.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeDrainDelay

	// The pipes are made here rather than by os/exec so that Wait returns as
	// soon as the program exits, even if a grandchild still holds them.
	var toClose []*os.File
	closeAll := func() {
		for _, f := range toClose {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			toClose = append(toClose, r, w)
		}
		return r, w, err
	}
	outR, outW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("proc: cannot create a pipe: %v", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("proc: cannot create a pipe: %v", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	var inW *os.File
	if req.stdin != nil {
		var inR *os.File
		if inR, inW, err = pipe(); err != nil {
			closeAll()
			return nil, fmt.Errorf("proc: cannot create a pipe: %v", err)
		}
		cmd.Stdin = inR
	}
	defer closeAll()

	startErr := cmd.Start()
	// The child has its own copies now; ours must go so that EOF arrives.
	outW.Close()
	errW.Close()
	if f, ok := cmd.Stdin.(*os.File); ok {
		f.Close()
	}
	if startErr != nil {
		return nil, fmt.Errorf("proc: cannot start %q (%s): %v", prog, req.path, unwrapPathError(startErr))
	}
	pgid := cmd.Process.Pid

	stdout := &cappedBuffer{max: maxProcOutput}
	stderr := &cappedBuffer{max: maxProcOutput}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(stdout, outR) }()
	go func() { defer wg.Done(); _, _ = io.Copy(stderr, errR) }()
	if inW != nil {
		go func() {
			_, _ = io.WriteString(inW, *req.stdin)
			inW.Close()
		}()
	}

	waitErr := cmd.Wait()
	// Kill whatever the program left running in its group.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeDrainDelay):
		outR.Close()
		errR.Close()
		<-drained
	}
	if inW != nil {
		inW.Close()
	}

	state := cmd.ProcessState
	exitedNormally := state != nil && state.Exited()
	if runCtx.Err() != nil && !exitedNormally {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("proc: %q was killed because the run was stopped: %w", prog, err)
		}
		return nil, &procTimeoutError{prog: prog, sec: req.timeoutSec}
	}
	if state == nil {
		return nil, fmt.Errorf("proc: waiting for %q failed: %v", prog, waitErr)
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return nil, fmt.Errorf("proc: waiting for %q failed: %v", prog, waitErr)
	}
	code := state.ExitCode()
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	return map[string]any{
		"stdout":    stdout.String(),
		"stderr":    stderr.String(),
		"exit_code": float64(code),
	}, nil
}
