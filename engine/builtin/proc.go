package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// maxProcOutput caps stdout and stderr of proc, each.
const maxProcOutput = 1 << 20

// procTool runs allowed programs directly (never through a shell).
type procTool struct {
	allow     []string
	allowEnv  []string // variable names the operator let chains set (--allow-proc-env)
	workspace string
}

// loaderEnvPrefixes and loaderEnv are the variables that make the dynamic
// loader or the C library load, run or read files of the caller's choosing.
// A chain that can write a file (write_file) could otherwise turn any allowed
// program into its own code. They are refused even when the operator allows
// them by name. The set is glibc's "unsecure" list (the variables it drops
// for set-user-ID programs, elf/unsecvars.h), every LD_* name (other loaders,
// musl, Solaris, future glibc) and macOS's DYLD_*.
var (
	loaderEnvPrefixes = []string{"LD_", "DYLD_"}
	loaderEnv         = map[string]string{
		"GCONV_PATH":       "loads iconv modules (shared libraries) from the folder it names",
		"GETCONF_DIR":      "makes getconf run programs from the folder it names",
		"GLIBC_TUNABLES":   "tunes the C library's loader and allocator at start-up",
		"HOSTALIASES":      "makes the resolver read a file of the caller's choosing",
		"LOCALDOMAIN":      "changes how the resolver completes names",
		"LOCPATH":          "loads locale data files from the folder it names",
		"MALLOC_TRACE":     "makes the allocator write a trace to the file it names",
		"NIS_PATH":         "changes where NIS+ lookups go",
		"NLSPATH":          "loads message catalogs from the path it names",
		"RESOLV_HOST_CONF": "makes the resolver read a file of the caller's choosing",
		"RES_OPTIONS":      "changes the resolver's options",
		"TZDIR":            "loads time-zone files from the folder it names",
	}
)

// LoaderEnv reports whether name is a dynamic-loader or C-library variable
// that proc always refuses, with the reason ("" when it is not).
func LoaderEnv(name string) string {
	up := strings.ToUpper(name) // Windows names are case-insensitive; refusing both spellings costs nothing
	for _, p := range loaderEnvPrefixes {
		if strings.HasPrefix(up, p) {
			return "it is a dynamic-loader variable (it can make the program load code of the chain's choosing)"
		}
	}
	if why, ok := loaderEnv[up]; ok {
		return "it is a C-library variable that " + why
	}
	return ""
}

// procRequest is the validated input of one proc call.
type procRequest struct {
	argv       []string
	path       string // resolved absolute executable
	env        []string
	dir        string
	timeout    time.Duration
	timeoutSec float64
	stdin      *string
}

// parseArgv reads the required `argv` field.
func parseArgv(in map[string]any) ([]string, error) {
	v, present := in["argv"]
	if !present || v == nil {
		return nil, fmt.Errorf(`proc: field "argv" is required (an array of strings; argv[0] is the program)`)
	}
	var argv []string
	switch l := v.(type) {
	case []string:
		argv = append(argv, l...)
	case []any:
		for i, e := range l {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf(`proc: field "argv": element %d must be a string, got %s`, i, typeName(e))
			}
			argv = append(argv, s)
		}
	default:
		return nil, fmt.Errorf(`proc: field "argv" must be an array of strings, got %s`, typeName(v))
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf(`proc: field "argv" must not be empty`)
	}
	if argv[0] == "" {
		return nil, fmt.Errorf(`proc: field "argv": argv[0] (the program) must not be empty`)
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf(`proc: field "argv": element %d contains a NUL byte`, i)
		}
	}
	return argv, nil
}

// resolveExecutable turns a bare name (looked up in PATH) or an absolute
// path into a cleaned absolute path whose folder has its symbolic links
// resolved (so /bin/echo and /usr/bin/echo match on merged-/usr systems,
// while a file symlink such as busybox's applets is not collapsed).
func resolveExecutable(name string) (string, error) {
	var p string
	switch {
	case filepath.IsAbs(name):
		p = filepath.Clean(name)
	case strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/'):
		return "", fmt.Errorf("a relative path is not allowed; give a bare name or an absolute path")
	default:
		lp, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("not found in PATH")
		}
		if p, err = filepath.Abs(lp); err != nil {
			return "", err
		}
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	return p, nil
}

// check validates the input against host policy and builds the request.
func (t *procTool) check(in map[string]any) (*procRequest, error) {
	argv, err := parseArgv(in)
	if err != nil {
		return nil, err
	}
	prog := argv[0]
	if len(t.allow) == 0 {
		return nil, denied("proc: running programs is disabled, so %q may not run: start the studio with --allow-proc %s", prog, filepath.Base(prog))
	}
	path, err := resolveExecutable(prog)
	if err != nil {
		return nil, fmt.Errorf("proc: program %q: %v", prog, err)
	}
	allowed := false
	for _, a := range t.allow {
		ap, err := resolveExecutable(a)
		if err == nil && ap == path {
			allowed = true
			break
		}
	}
	if !allowed {
		return nil, denied("proc: program %q (%s) is not on the allow-list: start the studio with --allow-proc %s", prog, path, filepath.Base(prog))
	}
	req := &procRequest{argv: argv, path: path}

	extra, err := getStringMap("proc", in, "env")
	if err != nil {
		return nil, err
	}
	envMap := map[string]string{"PATH": os.Getenv("PATH")}
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names) // the first offending name is the same on every run
	for _, k := range names {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf(`proc: field "env": %q is not a valid variable name`, k)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf(`proc: field "env": value of %q contains a NUL byte`, k)
		}
		if why := LoaderEnv(k); why != "" {
			return nil, denied("proc: field \"env\": variable %q is always refused: %s", k, why)
		}
		if !slices.Contains(t.allowEnv, k) {
			return nil, denied("proc: field \"env\": variable %q is not allowed: start the studio with --allow-proc-env %s", k, k)
		}
		envMap[k] = v
	}
	for k, v := range envMap {
		req.env = append(req.env, k+"="+v)
	}
	sort.Strings(req.env)

	dir, hasDir, err := getString("proc", in, "dir")
	if err != nil {
		return nil, err
	}
	switch {
	case t.workspace == "" && hasDir && dir != "":
		return nil, denied("proc: field \"dir\" (%q) needs a workspace: start the studio with --workspace DIR", dir)
	case t.workspace != "":
		wsReal, err := filepath.EvalSymlinks(t.workspace)
		if err != nil {
			return nil, fmt.Errorf("proc: the workspace %q is not accessible: %v", t.workspace, unwrapPathError(err))
		}
		full := wsReal
		if dir != "" {
			if filepath.IsAbs(dir) {
				full = filepath.Clean(dir)
			} else {
				full = filepath.Join(wsReal, dir)
			}
		}
		real, err := filepath.EvalSymlinks(full)
		if err != nil {
			if !within(wsReal, full) {
				return nil, denied("proc: field \"dir\" (%q) is outside the workspace", dir)
			}
			return nil, fmt.Errorf("proc: field \"dir\" (%q) is not accessible: %v", dir, unwrapPathError(err))
		}
		if !within(wsReal, real) {
			return nil, denied("proc: field \"dir\" (%q) is outside the workspace", dir)
		}
		info, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("proc: field \"dir\" (%q) is not accessible: %v", dir, unwrapPathError(err))
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("proc: field \"dir\" (%q) is not a folder", dir)
		}
		req.dir = real
	}

	if sec, ok, err := getNumber("proc", in, "timeout"); err != nil {
		return nil, err
	} else if ok {
		if sec <= 0 {
			return nil, fmt.Errorf("proc: field \"timeout\" must be a positive number of seconds, got %v", sec)
		}
		req.timeoutSec = sec
		req.timeout = time.Duration(sec * float64(time.Second))
	}

	if s, ok, err := getString("proc", in, "stdin"); err != nil {
		return nil, err
	} else if ok {
		req.stdin = &s
	}
	return req, nil
}

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	buf     []byte
	max     int
	dropped int64
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		b.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	if b.dropped == 0 {
		return string(b.buf)
	}
	return string(b.buf) + fmt.Sprintf("\n[truncated: %d more bytes; output is capped at %d bytes]", b.dropped, b.max)
}
