package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// selfServer is the test binary run as the stdio server, allow-listed.
func selfServer(t *testing.T) (Server, Options) {
	t.Helper()
	self, err := ResolveCommand(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.HTTPClient = nil // stdio needs none
	opts.AllowCommand = func(p string) bool { return p == self }
	// The host passes builtin.LoaderEnv; importing it here would tie this
	// package's tests to builtin's imports.
	opts.RefuseEnv = func(name string) string {
		if name == "GCONV_PATH" {
			return "it loads shared libraries"
		}
		return ""
	}
	return Server{Name: "self", Transport: TransportStdio, Command: self, Env: map[string]string{stdioServerEnv: "1", "GREETING": "hello"}}, opts
}

func TestStdioServerSeesABareEnvironment(t *testing.T) {
	t.Setenv("CS_MCP_TEST_INHERITED", "leak")
	srv, opts := selfServer(t)
	m := newManager(t, opts, srv)
	waitFor(t, m, available("self", "env", "pid"))
	res, err := m.Call(context.Background(), ToolID("self", "env"), nil)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(res.Text, "\n")
	slices.Sort(env)
	want := []string{"GREETING=hello", "PATH=" + os.Getenv("PATH"), stdioServerEnv + "=1"}
	slices.Sort(want)
	if !slices.Equal(env, want) {
		t.Errorf("the program's environment is\n%q\nwant\n%q", env, want)
	}

	res, err = m.Call(context.Background(), ToolID("self", "pid"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(res.Text)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	// Close waits for the program, so it is gone (reaped) by now.
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the program (pid %d) outlives the session: kill 0 = %v", pid, err)
	}
}

func TestStdioCommandNotOnTheAllowListIsRefusedBeforeItRuns(t *testing.T) {
	t.Parallel()
	srv, opts := selfServer(t)
	marker := filepath.Join(t.TempDir(), "ran")
	srv.Env = map[string]string{stdioServerEnv: "1", "MARKER": marker}
	var asked []string
	opts.AllowCommand = func(p string) bool { asked = append(asked, p); return false }
	_, err := NewManager([]Server{srv}, opts)
	if err == nil || !strings.Contains(err.Error(), AllowCommandFlag) || !strings.Contains(err.Error(), "not on the allow-list") {
		t.Fatalf("err = %v, want a refusal naming %s", err, AllowCommandFlag)
	}
	if len(asked) != 1 || asked[0] != srv.Command {
		t.Errorf("AllowCommand was asked %q, want the resolved path %q", asked, srv.Command)
	}
	opts.AllowCommand = nil
	if _, err := NewManager([]Server{srv}, opts); err == nil || !strings.Contains(err.Error(), AllowCommandFlag) {
		t.Errorf("no allow-list: err = %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran")
	}
}

func TestStdioRefusesLoaderVariables(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"LD_PRELOAD", "ld_library_path", "DYLD_INSERT_LIBRARIES", "GCONV_PATH"} {
		srv, opts := selfServer(t)
		srv.Env = map[string]string{name: "/tmp/x"}
		if _, err := NewManager([]Server{srv}, opts); err == nil || !strings.Contains(err.Error(), "always refused") {
			t.Errorf("%s: err = %v, want it refused", name, err)
		}
	}
}

func TestStdioProgramThatDiesIsUnavailableWithItsStderr(t *testing.T) {
	t.Parallel()
	srv, opts := selfServer(t)
	srv.Env = map[string]string{} // not a server: the test binary runs its tests, prints and exits
	srv.Args = []string{"-test.run=^$", "-test.v", "-this-flag-does-not-exist"}
	m := newManager(t, opts, srv)
	c := waitFor(t, m, unavailable("self", "stderr ends"))
	if r := status(c, "self").Reason; !strings.Contains(r, "this-flag-does-not-exist") {
		t.Errorf("reason = %q, want the program's stderr in it", r)
	}
}

// Not parallel: the program (this test binary, slow to start under the race
// detector) must write its pid within the connect timeout, so it runs where
// no other test competes for the CPU.
func TestStdioProgramThatNeverAnswersTimesOutAndIsKilled(t *testing.T) {
	srv, opts := selfServer(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	srv.Env = map[string]string{stdioServerEnv: "hang", "PIDFILE": pidfile}
	// Long enough for the program (this test binary, slow to start under the
	// race detector on a loaded machine) to write its pid before the timeout.
	opts.ConnectTimeout = 3 * time.Second
	opts.RetryDelay = time.Hour
	m := newManager(t, opts, srv)
	if st := status(m.Tools(), "self"); st.State != StateConnecting {
		t.Errorf("state = %q, want connecting", st.State)
	}
	waitFor(t, m, unavailable("self", "timeout"))
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(string(b))
	// The session of the failed handshake is closed, which kills the program;
	// it is reaped, so signal 0 finds no process.
	testutil.Eventually(t, 10*time.Second, func() error {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("the program (pid %d) is still there: %v", pid, err)
		}
		return nil
	})
}

func TestStdioResultsAreBounded(t *testing.T) {
	t.Parallel()
	srv, opts := selfServer(t)
	opts.MaxResultBytes = 64 << 10
	opts.MaxListBytes = 256 << 10 // so that a line past it is cut by the transport
	m := newManager(t, opts, srv)
	waitFor(t, m, available("self", "big"))
	if res, err := m.Call(context.Background(), ToolID("self", "big"), map[string]any{"bytes": 1000}); err != nil || len(res.Text) != 1000 {
		t.Fatalf("a small result: %v", err)
	}
	for _, n := range []int{100 << 10, 1 << 20} { // over the limit, and over the transport's line bound
		_, err := m.Call(context.Background(), ToolID("self", "big"), map[string]any{"bytes": n})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != "MaxResultBytes" {
			t.Errorf("%d bytes: err = %v, want a LimitError", n, err)
		}
		waitFor(t, m, available("self", "big")) // a cut line ends the session; it comes back
	}
}
