package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procCPU is the CPU time (user + system) process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// procPeakRSS is the process's peak resident set (VmHWM) in bytes.
func procPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// The runaway chains of the issue, against a real `studio serve`: each run
// ends with the budget or the timeout, a cancelled one stops, and the server
// stays alive, small, and idle afterwards.
//
//	go test ./cmd/studio -run TestServerSurvivesRunawayWork -v
func TestServerSurvivesRunawayWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio binary")
	}
	dir := t.TempDir()
	bin := builtStudio(t)
	p := startStudio(t, bin, filepath.Join(dir, "studio.db"))
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()
	pid := p.cmd.Process.Pid
	doubling := "@" + strings.Repeat(" | [@,@]", 27)
	never := "{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}"
	chains := []struct {
		name, status, message string
		node                  map[string]any
		cancel                bool
	}{
		{name: "memory-bomb", status: "failed", message: "budget template_value", node: map[string]any{
			"node_id": "t", "kind": "tool", "name": "template", "timeout": 5,
			"input": map[string]any{"template": `{{$x := "aaaaaaaaaaaaaaaa"}}{{range 40}}{{$x = printf "%s%s" $x $x}}{{end}}done`}}},
		{name: "never-yields", status: "failed", message: "timed out after 1s", node: map[string]any{
			"node_id": "t", "kind": "tool", "name": "template", "timeout": 1, "input": map[string]any{"template": never}}},
		{name: "never-yields-cancelled", status: "cancelled", cancel: true, node: map[string]any{
			"node_id": "t", "kind": "tool", "name": "template", "input": map[string]any{"template": never}}},
		{name: "transform", status: "failed", message: "budget expr_elements", node: map[string]any{
			"node_id": "t", "kind": "tool", "name": "transform", "timeout": 5, "input": map[string]any{"expression": doubling, "data": "x"}}},
		{name: "input-map", status: "failed", message: "budget expr_elements", node: map[string]any{
			"node_id": "e", "kind": "tool", "name": "echo", "timeout": 5,
			"input_map": map[string]any{"v": "input" + strings.Repeat(" | [@,@]", 40)}}},
	}
	for _, c := range chains {
		code, m := p.do(t, "POST", "/v1/chains", map[string]any{"name": c.name, "nodes": []any{c.node}})
		if code != 201 {
			t.Fatalf("create %s: %d %v", c.name, code, m)
		}
		code, m = p.do(t, "POST", "/v1/chains/"+m["id"].(string)+"/runs", map[string]any{"input": map[string]any{"x": 1}})
		if code != 202 {
			t.Fatalf("start %s: %d %v", c.name, code, m)
		}
		runID := m["run_id"].(string)
		if c.cancel {
			time.Sleep(300 * time.Millisecond)
			if code, m := p.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil); code != 202 {
				t.Fatalf("cancel: %d %v", code, m)
			}
		}
		m = p.waitStatus(t, runID, "completed", "failed", "cancelled", "timed_out")
		if m["status"] != c.status {
			t.Fatalf("%s ended %v, want %s: %v", c.name, m["status"], c.status, m["error"])
		}
		if c.message != "" && !strings.Contains(strings.ToLower(toJSON(m["error"])), strings.ToLower(c.message)) {
			t.Errorf("%s: error %v does not say %q", c.name, m["error"], c.message)
		}
		// Idle within a second of the run's end: under 100 ms of CPU in the next second.
		time.Sleep(100 * time.Millisecond)
		c0 := procCPU(t, pid)
		time.Sleep(time.Second)
		used := procCPU(t, pid) - c0
		t.Logf("%s: %v, CPU in the following second %v", c.name, m["status"], used)
		if used > 100*time.Millisecond {
			t.Errorf("%s: the studio used %v of CPU in the second after the run ended", c.name, used)
		}
	}
	if code, _ := p.do(t, "GET", "/healthz", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	rss := procPeakRSS(t, pid)
	t.Logf("peak RSS %d MiB", rss>>20)
	if rss > 400<<20 {
		t.Errorf("peak RSS %d MiB", rss>>20)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
