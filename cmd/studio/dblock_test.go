package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// One process owns a SQLite database. A second `studio serve` on the same
// file refuses to start, naming the holder, and leaves the first one's live
// run alone (its start-up recovery used to mark it failed); `studio backup`
// works meanwhile; once the first stops, the second starts.
//
//	go test ./cmd/studio -run TestSecondServerRefused -v
func TestSecondServerRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio binary")
	}
	dir := t.TempDir()
	bin := builtStudio(t)
	db := filepath.Join(dir, "studio.db")
	first := startStudio(t, bin, db)
	stopped := false
	defer func() {
		if !stopped {
			first.cmd.Process.Kill()
			first.cmd.Wait()
		}
	}()
	code, m := first.do(t, "POST", "/v1/chains", map[string]any{"name": "slow", "nodes": []any{
		map[string]any{"node_id": "wait", "kind": "tool", "name": "delay", "input": map[string]any{"ms": 2000}},
	}})
	if code != 201 {
		t.Fatalf("create: %d %v", code, m)
	}
	code, m = first.do(t, "POST", "/v1/chains/"+m["id"].(string)+"/runs", map[string]any{})
	if code != 202 {
		t.Fatalf("start: %d %v", code, m)
	}
	runID := m["run_id"].(string)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--no-examples", "--agents", filepath.Join(dir, "no-agents"))
	second.Env = append(os.Environ(), "STUDIO_TOKEN=")
	out, err := second.CombinedOutput()
	if err == nil {
		t.Fatalf("a second serve on the same database started:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || ctx.Err() != nil {
		t.Fatalf("second serve: %v (want a prompt non-zero exit)\n%s", err, out)
	}
	msg := string(out)
	t.Logf("second serve: %s", strings.TrimSpace(msg))
	for _, want := range []string{"is in use by another studio", "pid " + strconv.Itoa(first.cmd.Process.Pid), "serving " + first.url} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}

	// Backup works while the owner runs.
	target := filepath.Join(dir, "copy.db")
	if out, err := exec.Command(bin, "backup", target, "--db", db).CombinedOutput(); err != nil {
		t.Fatalf("backup while serving: %v\n%s", err, out)
	}
	// The first server's run was not touched by the refused start.
	if m := first.waitStatus(t, runID, "completed", "failed"); m["status"] != "completed" {
		t.Fatalf("the live run ended %v", m["status"])
	}

	first.cmd.Process.Signal(syscall.SIGTERM)
	first.cmd.Wait()
	stopped = true
	again := startStudio(t, bin, db)
	again.cmd.Process.Signal(syscall.SIGTERM)
	again.cmd.Wait()
}
