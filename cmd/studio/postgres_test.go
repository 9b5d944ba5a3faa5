package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// startStudioDB starts bin serving the database dsn (a file or a URL) and
// waits until it listens.
func startStudioDB(t *testing.T, bin, dsn string, extra ...string) *studioProc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", dsn, "--no-examples", "--agents", filepath.Join(t.TempDir(), "no-agents")}, extra...)
	p := &studioProc{cmd: exec.Command(bin, args...)}
	p.cmd.Env = append(os.Environ(), "STUDIO_TOKEN=", "STUDIO_DB=")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := runningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case p.url = <-urls:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("the studio did not start:\n%s", p.logs())
	}
	return p
}

// stop sends SIGTERM and wants a clean exit.
func (p *studioProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the studio did not stop cleanly: %v\n%s", err, p.logs())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("the studio did not stop within 30s:\n%s", p.logs())
	}
}

// studio serve --db postgres://…: the real binary on a fresh PostgreSQL
// schema creates a chain, runs it, serves the run and its events back, keeps
// them in PostgreSQL (not in a file), stops cleanly on SIGTERM, and a second
// start on the same database reads the same run.
func TestServeOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio and runs it on PostgreSQL (make test runs it)")
	}
	dsn := pgtest.Schema(t)
	bin := builtStudio(t)
	// A password in the URL (the test server trusts loopback and ignores
	// it) must never reach the log.
	withPassword := strings.Replace(dsn, "://postgres@", "://postgres:hunter2@", 1)
	p := startStudioDB(t, bin, withPassword)
	running := true
	defer func() {
		if running {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}()
	if !strings.Contains(p.logs(), `db="postgres://`) {
		t.Fatalf("the start-up log does not name the PostgreSQL database:\n%s", p.logs())
	}
	if strings.Contains(withPassword, "hunter2") && strings.Contains(p.logs(), "hunter2") {
		t.Fatalf("the log shows the database password:\n%s", p.logs())
	}
	doc := map[string]any{"name": "on-postgres", "nodes": []any{
		map[string]any{"node_id": "a", "kind": "tool", "name": "echo", "input_map": map[string]any{"n": "input.n"}},
		map[string]any{"node_id": "b", "kind": "tool", "name": "echo", "input_map": map[string]any{"from_a": "a.output.n"}},
	}, "edges": []any{map[string]any{"source": "a", "target": "b"}}}
	code, m := p.do(t, "POST", "/v1/chains", doc)
	if code != 201 {
		t.Fatalf("create chain: %d %v", code, m)
	}
	chainID := m["id"].(string)
	code, m = p.do(t, "POST", "/v1/chains/"+chainID+"/runs", map[string]any{"input": map[string]any{"n": 7}})
	if code != 202 {
		t.Fatalf("start run: %d %v", code, m)
	}
	runID := m["run_id"].(string)
	run := p.waitStatus(t, runID, "completed")
	checkRun := func(p *studioProc, run map[string]any) {
		t.Helper()
		nodes, _ := run["nodes"].([]any)
		if len(nodes) != 2 || run["chain_id"] != chainID {
			t.Fatalf("run read back: %v", run)
		}
		evs := p.events(t, runID)
		if len(evs) == 0 {
			t.Fatal("no events served for the run")
		}
		for i, e := range evs {
			if int(e["seq"].(float64)) != i+1 {
				t.Fatalf("event %d has seq %v: %v", i, e["seq"], evs)
			}
		}
	}
	checkRun(p, run)

	// The run is in PostgreSQL.
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var status string
	if err := c.QueryRow(ctx, `SELECT status FROM runs WHERE id = $1`, runID).Scan(&status); err != nil || status != "completed" {
		t.Fatalf("run row in PostgreSQL: %q, %v", status, err)
	}
	// River's schema was migrated at start-up, beside the studio's.
	var riverVersions int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM river_migration`).Scan(&riverVersions); err != nil || riverVersions == 0 {
		t.Fatalf("River's migrations in PostgreSQL: %d, %v", riverVersions, err)
	}
	c.Close(ctx)

	// A second serve on the same database starts beside the first (runs
	// are River jobs) and serves the same run.
	beside := startStudioDB(t, bin, dsn)
	if _, again := beside.do(t, "GET", "/v1/runs/"+runID, nil); again["status"] != "completed" {
		t.Fatalf("a second serve reads the run as %v", again)
	}
	beside.stop(t)

	p.stop(t)
	running = false

	// A second process on the same database serves the same run.
	p2 := startStudioDB(t, bin, dsn)
	defer p2.stop(t)
	_, again := p2.do(t, "GET", "/v1/runs/"+runID, nil)
	if again["status"] != "completed" {
		t.Fatalf("after a restart the run reads %v", again)
	}
	checkRun(p2, again)
}

// studio backup on a PostgreSQL database says to use pg_dump, exits 1, and
// writes nothing.
func TestBackupPostgresSaysPgDump(t *testing.T) {
	target := filepath.Join(t.TempDir(), "copy.db")
	var out, errb bytes.Buffer
	code := cmdBackup(context.Background(), []string{"--db", "postgres://u:secret@127.0.0.1:1/x", target}, &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "pg_dump") || strings.Contains(errb.String(), "secret") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("backup wrote a file")
	}
}

// serve on a PostgreSQL server that cannot be reached exits 1 at once with
// the reason, and never prints the password.
func TestServePostgresUnreachable(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	code := cmdServe(context.Background(), []string{"--addr", "127.0.0.1:0", "--no-examples", "--db", "postgres://studio:hunter2@127.0.0.1:1/studio?sslmode=disable"}, &out, &errb)
	msg := errb.String()
	if code != exitFailed || !strings.Contains(msg, "127.0.0.1:1/studio") || !strings.Contains(msg, "connection refused") || strings.Contains(msg, "hunter2") {
		t.Fatalf("exit %d, stderr %q", code, msg)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("took %v", d)
	}
}
