//go:build unix

package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/internal/testutil"
)

func procFunc(opts Options) func(context.Context, map[string]any) (any, error) {
	f := Tools(opts)["proc"]
	return func(ctx context.Context, in map[string]any) (any, error) { return f(ctx, in, nil) }
}

func TestProcRuns(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	os.Mkdir(filepath.Join(ws, "sub"), 0o755)
	call := procFunc(Options{Workspace: ws, ProcAllow: []string{"/bin/echo", "echo", "sh", "cat"}, ProcAllowEnv: []string{"FOO"}})
	for _, tc := range []struct {
		name string
		in   map[string]any
		want map[string]any
	}{
		{"echo absolute", map[string]any{"argv": []any{"/bin/echo", "hello", "$HOME", "; rm -rf /"}},
			map[string]any{"stdout": "hello $HOME ; rm -rf /\n", "stderr": "", "exit_code": 0.0}},
		{"echo by name", map[string]any{"argv": []string{"echo", "hi"}},
			map[string]any{"stdout": "hi\n", "stderr": "", "exit_code": 0.0}},
		{"exit code and stderr", map[string]any{"argv": []any{"sh", "-c", "echo oops >&2; exit 3"}},
			map[string]any{"stdout": "", "stderr": "oops\n", "exit_code": 3.0}},
		{"stdin", map[string]any{"argv": []any{"cat"}, "stdin": "fed in"},
			map[string]any{"stdout": "fed in", "stderr": "", "exit_code": 0.0}},
		{"minimal env", map[string]any{"argv": []any{"sh", "-c", "env | sort | grep -v '^PWD=\\|^SHLVL=\\|^_='"}, "env": map[string]any{"FOO": "bar"}},
			map[string]any{"stdout": "FOO=bar\nPATH=" + os.Getenv("PATH") + "\n", "stderr": "", "exit_code": 0.0}},
		{"dir defaults to workspace", map[string]any{"argv": []any{"sh", "-c", "pwd -P"}},
			map[string]any{"stdout": realPath(t, ws) + "\n", "stderr": "", "exit_code": 0.0}},
		{"dir inside workspace", map[string]any{"argv": []any{"sh", "-c", "pwd -P"}, "dir": "sub"},
			map[string]any{"stdout": realPath(t, ws) + "/sub\n", "stderr": "", "exit_code": 0.0}},
		{"killed by signal", map[string]any{"argv": []any{"sh", "-c", "kill -9 $$"}},
			map[string]any{"stdout": "", "stderr": "", "exit_code": 137.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out, tc.want) {
				t.Fatalf("out = %#v\nwant  %#v", out, tc.want)
			}
		})
	}
	t.Run("output capped", func(t *testing.T) {
		out, err := call(context.Background(), map[string]any{"argv": []any{"sh", "-c", "head -c 1048600 /dev/zero"}})
		if err != nil {
			t.Fatal(err)
		}
		s := out.(map[string]any)["stdout"].(string)
		if !strings.HasPrefix(s, strings.Repeat("\x00", maxProcOutput)) || !strings.HasSuffix(s, "\n[truncated: 24 more bytes; output is capped at 1048576 bytes]") {
			t.Fatalf("stdout not truncated with a marker: len %d, tail %q", len(s), s[len(s)-80:])
		}
	})
}

func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestProcRefused(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	outside := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(ws, "out-link")))
	allowed := Options{Workspace: ws, ProcAllow: []string{"/bin/echo"}, ProcAllowEnv: []string{"A", "LD_PRELOAD", "GCONV_PATH"}}
	for _, tc := range []struct {
		name   string
		opts   Options
		in     map[string]any
		denied bool
		want   string
	}{
		{"nothing allowed", Options{}, map[string]any{"argv": []any{"/bin/sh", "-c", "id"}}, true,
			`proc: running programs is disabled, so "/bin/sh" may not run: start the studio with --allow-proc sh`},
		{"not on allow-list", allowed, map[string]any{"argv": []any{"/bin/sh", "-c", "id"}}, true,
			`proc: program "/bin/sh" (`},
		{"not on allow-list hint", allowed, map[string]any{"argv": []any{"sh"}}, true,
			`is not on the allow-list: start the studio with --allow-proc sh`},
		{"dir outside workspace", allowed, map[string]any{"argv": []any{"/bin/echo"}, "dir": "/tmp"}, true,
			`proc: field "dir" ("/tmp") is outside the workspace`},
		{"dir escapes", allowed, map[string]any{"argv": []any{"/bin/echo"}, "dir": "../.."}, true,
			`proc: field "dir" ("../..") is outside the workspace`},
		{"dir symlink outside", allowed, map[string]any{"argv": []any{"/bin/echo"}, "dir": "out-link"}, true,
			`proc: field "dir" ("out-link") is outside the workspace`},
		{"dir without workspace", Options{ProcAllow: []string{"/bin/echo"}}, map[string]any{"argv": []any{"/bin/echo"}, "dir": "x"}, true,
			`proc: field "dir" ("x") needs a workspace: start the studio with --workspace DIR`},
		{"argv missing", allowed, map[string]any{}, false, `proc: field "argv" is required`},
		{"argv string", allowed, map[string]any{"argv": "echo hi"}, false, `proc: field "argv" must be an array of strings, got string`},
		{"argv empty", allowed, map[string]any{"argv": []any{}}, false, `proc: field "argv" must not be empty`},
		{"argv element", allowed, map[string]any{"argv": []any{"/bin/echo", 1.0}}, false, `proc: field "argv": element 1 must be a string, got number`},
		{"relative program", allowed, map[string]any{"argv": []any{"./echo"}}, false, `proc: program "./echo": a relative path is not allowed`},
		{"unknown program", allowed, map[string]any{"argv": []any{"no-such-program-xyz"}}, false, `proc: program "no-such-program-xyz": not found in PATH`},
		{"bad env", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"A=B": "c"}}, false, `proc: field "env": "A=B" is not a valid variable name`},
		{"env not allowed", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"HOME": "/"}}, true,
			`proc: field "env": variable "HOME" is not allowed: start the studio with --allow-proc-env HOME`},
		{"env none allowed", Options{ProcAllow: []string{"/bin/echo"}}, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"A": "1"}}, true,
			`proc: field "env": variable "A" is not allowed: start the studio with --allow-proc-env A`},
		{"LD_PRELOAD even when allowed", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"LD_PRELOAD": "./evil.so"}}, true,
			`proc: field "env": variable "LD_PRELOAD" is always refused: it is a dynamic-loader variable`},
		{"LD_AUDIT", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"LD_AUDIT": "./evil.so"}}, true,
			`variable "LD_AUDIT" is always refused`},
		{"GCONV_PATH even when allowed", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"GCONV_PATH": "."}}, true,
			`proc: field "env": variable "GCONV_PATH" is always refused: it is a C-library variable that loads iconv modules`},
		{"DYLD lower case", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"dyld_insert_libraries": "x"}}, true,
			`variable "dyld_insert_libraries" is always refused`},
		{"env value type", allowed, map[string]any{"argv": []any{"/bin/echo"}, "env": map[string]any{"A": 1.0}}, false, `proc: field "env": value of "A" must be a string, got number`},
		{"dir missing", allowed, map[string]any{"argv": []any{"/bin/echo"}, "dir": "nope"}, false, `proc: field "dir" ("nope") is not accessible`},
		{"bad timeout", allowed, map[string]any{"argv": []any{"/bin/echo"}, "timeout": 0.0}, false, `proc: field "timeout" must be a positive number of seconds, got 0`},
		{"bad stdin", allowed, map[string]any{"argv": []any{"/bin/echo"}, "stdin": 1.0}, false, `proc: field "stdin" must be a string, got number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := procFunc(tc.opts)(context.Background(), tc.in)
			if tc.denied {
				wantDenied(t, err, tc.want)
			} else {
				wantErr(t, err, tc.want)
				if errors.Is(err, tool.ErrDenied) {
					t.Fatalf("input error %q must not wrap ErrDenied", err)
				}
			}
		})
	}
}

func TestProcTimeoutKills(t *testing.T) {
	call := procFunc(Options{ProcAllow: []string{"sleep"}})
	start := time.Now()
	_, err := call(context.Background(), map[string]any{"argv": []any{"sleep", "30"}, "timeout": 0.2})
	if el := time.Since(start); el > time.Second {
		t.Fatalf("took %v", el)
	}
	wantErr(t, err, "proc timed out after 0.2s")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v does not wrap context.DeadlineExceeded", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = call(ctx, map[string]any{"argv": []any{"sleep", "30"}})
	if el := time.Since(start); el > time.Second {
		t.Fatalf("took %v", el)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

// TestProcKillsGrandchildren starts a shell that backgrounds a sleep and
// reports its pid, cancels the call, and checks the background sleep is dead.
func TestProcKillsGrandchildren(t *testing.T) {
	ws := t.TempDir()
	call := procFunc(Options{Workspace: ws, ProcAllow: []string{"sh", "sleep"}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the shell has written the child's pid (or after 2 s:
		// the call then fails the checks below).
		_ = testutil.Poll(2*time.Second, func() error {
			if b, err := os.ReadFile(filepath.Join(ws, "pid")); err != nil || !strings.HasSuffix(string(b), "\n") {
				return errors.New("no pid yet")
			}
			return nil
		})
		cancel()
	}()
	start := time.Now()
	_, err := call(ctx, map[string]any{"argv": []any{"sh", "-c", "sleep 30 & echo $! > pid.tmp && mv pid.tmp pid; sleep 30"}})
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("took %v", el)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	b, rerr := os.ReadFile(filepath.Join(ws, "pid"))
	if rerr != nil {
		t.Fatalf("the shell never reported its child: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	assertDead(t, pid)
}

// TestProcReturnsDespiteBackgroundChild checks that a program which exits
// while a background child holds its stdout still returns promptly, and that
// the child is killed.
func TestProcReturnsDespiteBackgroundChild(t *testing.T) {
	call := procFunc(Options{ProcAllow: []string{"sh"}})
	start := time.Now()
	out, err := call(context.Background(), map[string]any{"argv": []any{"sh", "-c", "sleep 30 & echo $!"}})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Fatalf("took %v", el)
	}
	m := out.(map[string]any)
	if m["exit_code"] != 0.0 {
		t.Fatalf("out = %#v", m)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(m["stdout"].(string)))
	if err != nil {
		t.Fatalf("stdout = %q", m["stdout"])
	}
	assertDead(t, pid)
}

// assertDead waits briefly for pid to disappear (or become a zombie whose
// parent has not reaped it yet).
func assertDead(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("bad pid %d", pid)
	}
	testutil.Eventually(t, time.Second, func() error {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			// Field 3 is the state; Z means it is dead and only awaiting reaping.
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
				return nil
			}
		}
		return fmt.Errorf("process %d is still alive", pid)
	})
}

// TestProcLoaderPreloadRefused is the attack end to end: a library written
// into the workspace is named in LD_PRELOAD for an allowed program. The call
// is refused before anything runs, so the library's constructor never runs
// (the marker file it would create stays absent).
func TestProcLoaderPreloadRefused(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "evil.so"), []byte("not really a library"), 0o644))
	call := procFunc(Options{Workspace: ws, ProcAllow: []string{"/bin/echo"}, ProcAllowEnv: []string{"LD_PRELOAD"}})
	_, err := call(context.Background(), map[string]any{"argv": []any{"/bin/echo", "hi"}, "env": map[string]any{"LD_PRELOAD": "./evil.so"}})
	wantDenied(t, err, `variable "LD_PRELOAD" is always refused`)
	for _, name := range []string{"LD_LIBRARY_PATH", "ld_preload", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "DYLD_LIBRARY_PATH"} {
		if LoaderEnv(name) == "" {
			t.Errorf("LoaderEnv(%q) = \"\", want a reason", name)
		}
	}
	for _, name := range []string{"HOME", "LANG", "FOO", "PATH", "OLD_PRELOAD"} {
		if r := LoaderEnv(name); r != "" {
			t.Errorf("LoaderEnv(%q) = %q, want \"\"", name, r)
		}
	}
}
