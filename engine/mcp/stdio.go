package mcp

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxStderr is how much of a stdio program's stderr is kept (the tail), for
// error messages.
const maxStderr = 8 << 10

// stopGrace is how long a stdio program has to exit once its stdin closes
// before it (and its process group) is killed.
const stopGrace = 500 * time.Millisecond

// childEnv is a stdio program's whole environment: PATH and the configured
// variables, none of them refused.
func childEnv(extra map[string]string, refuse func(string) string) ([]string, error) {
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names) // the first offending name is the same every time
	env := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range names {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: %q is not a valid variable name", k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("env: the value of %q contains a NUL byte", k)
		}
		if up := strings.ToUpper(k); strings.HasPrefix(up, "LD_") || strings.HasPrefix(up, "DYLD_") {
			return nil, fmt.Errorf("env: variable %q is always refused: it is a dynamic-loader variable", k)
		}
		if refuse != nil {
			if why := refuse(k); why != "" {
				return nil, fmt.Errorf("env: variable %q is always refused: %s", k, why)
			}
		}
		if strings.EqualFold(k, "PATH") {
			env[0] = "PATH=" + v
			continue
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// stdioTransport runs the program and speaks to it over its stdin and
// stdout. Unlike the SDK's CommandTransport it bounds inbound frames and kills
// the program's whole process group when the session closes.
type stdioTransport struct {
	prog     string
	args     []string
	env      []string
	maxFrame int
	stderr   *tailBuffer
	progress *progressTable // told of the progress notifications read
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	cmd := exec.Command(t.prog, t.args...)
	cmd.Env = t.env // never nil: nil would mean the studio's own environment
	cmd.Stderr = t.stderr
	cmd.WaitDelay = time.Second // a grandchild outside the group holding stderr must not hang Close
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", t.prog, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	w := &childStdin{WriteCloser: stdin, cmd: cmd, done: done}
	var out io.ReadCloser = io.NopCloser(stdout)
	if t.progress != nil {
		out = &progressSniffer{r: out, table: t.progress}
	}
	it := &sdk.IOTransport{Reader: out, Writer: w, MaxLineLength: t.maxFrame}
	return it.Connect(ctx)
}

// childStdin closes the session's side of the pipe and then makes sure the
// program is gone.
type childStdin struct {
	io.WriteCloser
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

func (c *childStdin) Close() error {
	var err error
	c.once.Do(func() {
		err = c.WriteCloser.Close()
		select {
		case <-c.done:
		case <-time.After(stopGrace):
		}
		killGroup(c.cmd) // also any children it left behind
		<-c.done
	})
	return err
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	t.b = t.b[:0]
	t.mu.Unlock()
}
