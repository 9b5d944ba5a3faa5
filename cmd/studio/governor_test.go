package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// studio run takes the run budgets: a loop over --max-node-executions ends
// budget_exceeded with the budget named, and a chain over a ceiling is
// refused naming the flag.
func TestRunAppliesRunBudgetsAndCeilings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc := filepath.Join(dir, "loop.json")
	os.WriteFile(doc, []byte(`{"name":"loop","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"a","max_iterations":2000000000}]}`), 0o644)
	var out, errb bytes.Buffer
	code := cmdRun(context.Background(), []string{"--max-node-executions", "10", doc}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String()+errb.String(), "over this server's ceiling of 1000000 (ceiling max_iterations, flag --max-iterations)") {
		t.Fatalf("loop over the max_iterations ceiling: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = cmdRun(context.Background(), []string{"--max-node-executions", "10", "--max-iterations", "2000000000", doc}, &out, &errb)
	if code == exitOK || !strings.Contains(out.String(), "error [budget_exceeded]") || !strings.Contains(out.String(), "budget: node_executions (limit 10)") {
		t.Fatalf("loop over --max-node-executions 10: exit %d\n%s%s", code, out.String(), errb.String())
	}
	for _, flag := range []string{"--max-node-executions", "--max-stored-bytes", "--max-chain-timeout", "--max-running-runs", "--max-watchers",
		"--a2e-max-sessions", "--a2e-max-sessions-per-user", "--a2e-session-idle"} {
		errb.Reset()
		if code := cmdServe(context.Background(), []string{flag, "0", "--db", filepath.Join(dir, "x.db")}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "must be positive") {
			t.Errorf("serve %s 0: exit %d %q", flag, code, errb.String())
		}
	}
	errb.Reset()
	if code := cmdServe(context.Background(), []string{"--a2e-session-bytes", "4096", "--db", filepath.Join(dir, "x.db")}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "between 1 MiB and 1 TiB") {
		t.Errorf("serve --a2e-session-bytes 4096: exit %d %q", code, errb.String())
	}
}

// The A2E session flags reach the server: with --a2e-max-sessions-per-user 1
// a second session of the same user is refused with 429.
func TestServeA2ESessionFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cmdServe(ctx, []string{"--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "s.db"), "--no-examples",
			"--agents", filepath.Join(dir, "none"), "--a2e-max-sessions-per-user", "1"}, io.Discard, pw)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := runningRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	var url string
	select {
	case url = <-urls:
	case code := <-done:
		t.Fatalf("serve exited %d", code)
	case <-time.After(30 * time.Second):
		t.Fatal("the studio did not start")
	}
	post := func() int {
		res, err := http.Post(url+"/v1/a2e/session", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := post(); s != 200 {
		t.Fatalf("first session: %d", s)
	}
	if s := post(); s != http.StatusTooManyRequests {
		t.Fatalf("second session of the same user: %d, want 429", s)
	}
}
