package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
)

// kill -9 with a queue full of accepted runs: after the restart every run
// the API accepted either completes (the saved chain's runs that were
// waiting are queued again at start-up, with their input) or says what to
// do and that works: the one that was executing is interrupted_by_restart
// and resumes to completion; a re-run that was waiting is
// interrupted_before_start and says to start it again. No run promises a
// resume that answers 404.
//
//	go test ./cmd/studio -run TestKillNineWithQueuedRuns -v
func TestKillNineWithQueuedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio and kills it with runs queued (make test runs it)")
	}
	dir := t.TempDir()
	bin := builtStudio(t)
	db := filepath.Join(dir, "studio.db")
	// One slot: the first run executes, every other one waits.
	p := startStudio(t, bin, db, "--max-running-runs", "1", "--max-queued-runs", "100")
	killed := false
	defer func() {
		if !killed {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}()
	doc := map[string]any{"name": "slow", "nodes": []any{
		map[string]any{"node_id": "a", "kind": "tool", "name": "echo", "input_map": map[string]any{"n": "input.n"}},
		map[string]any{"node_id": "wait", "kind": "tool", "name": "delay", "input": map[string]any{"ms": 1500}},
		map[string]any{"node_id": "c", "kind": "tool", "name": "echo", "input_map": map[string]any{"n": "a.output.n"}},
	}, "edges": []any{
		map[string]any{"source": "a", "target": "wait"},
		map[string]any{"source": "wait", "target": "c"},
	}}
	code, m := p.do(t, "POST", "/v1/chains", doc)
	if code != 201 {
		t.Fatalf("create: %d %v", code, m)
	}
	chainID := m["id"].(string)
	const queued = 40
	var ids []string
	for n := range queued + 1 {
		code, m := p.do(t, "POST", "/v1/chains/"+chainID+"/runs", map[string]any{"input": map[string]any{"n": n}})
		if code != 202 {
			t.Fatalf("start run %d: %d %v", n, code, m)
		}
		ids = append(ids, m["run_id"].(string))
	}
	first := ids[0]
	code, m = p.do(t, "POST", "/v1/runs/"+first+"/rerun", map[string]any{"from_node": "wait"})
	if code != 202 {
		t.Fatalf("rerun: %d %v", code, m)
	}
	rerun := m["run_id"].(string)
	// Kill once the first run is inside its delay (its start is committed)
	// and every other one is waiting.
	testutil.Eventually(t, 30*time.Second, func() error {
		_, evs := committed(t, db)
		for _, what := range evs[first] {
			if what == string(engine.PhaseStart)+"/wait" {
				return nil
			}
		}
		return fmt.Errorf("the first run has not committed the start of its delay")
	})
	for _, id := range append(ids[1:], rerun) {
		if _, m := p.do(t, "GET", "/v1/runs/"+id, nil); m["status"] != "queued" {
			t.Fatalf("run %s is %v before the kill, want queued", id, m["status"])
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	killed = true

	p = startStudio(t, bin, db)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()
	// The run that was executing: failed, resumable, and the resume works.
	_, m = p.do(t, "GET", "/v1/runs/"+first, nil)
	if e, _ := m["error"].(map[string]any); m["status"] != "failed" || e == nil || e["code"] != store.CodeInterruptedByRestart {
		t.Fatalf("the executing run after restart: %v %v", m["status"], m["error"])
	}
	t.Logf("the executing run after restart: %v %v", m["status"], m["error"])
	if code, m := p.do(t, "POST", "/v1/runs/"+first+"/resume", map[string]any{}); code != 200 {
		t.Fatalf("resume the interrupted run: %d %v", code, m)
	}
	// The queued re-run: failed before it started, saying to start it
	// again; nothing promises a resume.
	m = p.waitStatus(t, rerun, "failed")
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != store.CodeInterruptedBeforeStart || strings.Contains(fmt.Sprint(e["message"]), "resume it") {
		t.Fatalf("the queued re-run after restart: %v", m["error"])
	}
	t.Logf("the queued re-run after restart: %v %v", m["status"], m["error"])
	// Every queued run of the saved chain ran again, with its own input.
	for n, id := range ids {
		m := p.waitStatus(t, id, "completed", "failed", "cancelled", "partial")
		if m["status"] != "completed" {
			t.Fatalf("run %d (%s) after restart: %v %v", n, id, m["status"], m["error"])
		}
		if c := m["outputs"].(map[string]any)["c"].(map[string]any); c["n"] != float64(n) {
			t.Fatalf("run %d ran with %v", n, c)
		}
	}
	if !strings.Contains(p.logs(), fmt.Sprintf("runs=%d", queued)) {
		t.Errorf("the start-up log does not say %d runs were queued again:\n%s", queued, p.logs())
	}
}
