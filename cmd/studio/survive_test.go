package main

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// One studio process takes every hostile input of the governed-execution
// findings in turn, and afterwards is alive, small, idle, and its database
// passes integrity_check. Each finding has its own focused test elsewhere;
// this one proves they hold together in one server.
//
//	go test ./cmd/studio -run TestServerSurvivesEveryFinding -v
func TestServerSurvivesEveryFinding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the studio binary")
	}
	bin := builtStudio(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	db := filepath.Join(dir, "studio.db")
	const token = "survive-test-token-0123456789"
	echoBin, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo executable")
	}
	p := startStudio(t, bin, db, "--token", token, "--workspace", ws, "--allow-proc", echoBin,
		"--max-running-runs", "2", "--max-queued-runs", "10", "--max-watchers-per-run", "3",
		"--max-stored-bytes", "20000000", "--max-output-bytes", "50000000")
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.cmd.Wait()
		}
	}
	defer stop()
	pid := p.cmd.Process.Pid
	auth := []string{"Authorization", "Bearer " + token}
	run := func(name string, doc map[string]any, input map[string]any) (int, map[string]any) {
		t.Helper()
		doc["name"] = name
		code, m := p.do(t, "POST", "/v1/chains", doc, auth...)
		if code != 201 {
			t.Fatalf("create %s: %d %v", name, code, m)
		}
		// The draft: a chain with errors is created unpublished, and its
		// run is refused for them.
		return p.do(t, "POST", "/v1/chains/"+m["id"].(string)+"/runs", map[string]any{"input": input, "version": "draft"}, auth...)
	}
	wait := func(runID string) map[string]any {
		t.Helper()
		var m map[string]any
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			_, m = p.do(t, "GET", "/v1/runs/"+runID, nil, auth...)
			if s, _ := m["status"].(string); s != "running" && s != "queued" && s != "" {
				return m
			}
			time.Sleep(50 * time.Millisecond) // polling the API as a client would
		}
		t.Fatalf("run %s did not stop: %v", runID, m["status"])
		return nil
	}
	expectEndWith := func(name string, doc, input map[string]any, status, says string) {
		t.Helper()
		code, m := run(name, doc, input)
		if code != 202 {
			t.Fatalf("%s: start %d %v", name, code, m)
		}
		end := wait(m["run_id"].(string))
		if end["status"] != status || !strings.Contains(strings.ToLower(toJSON(end["error"])), says) {
			t.Fatalf("%s: ended %v %v, want %s saying %q", name, end["status"], end["error"], status, says)
		}
	}
	expectEnd := func(name string, doc map[string]any, status, says string) {
		t.Helper()
		expectEndWith(name, doc, map[string]any{"x": 1}, status, says)
	}
	one := func(node map[string]any) map[string]any { return map[string]any{"nodes": []any{node}} }

	// 1-3: runaway templates and expressions stop on their budgets.
	expectEnd("memory-bomb", one(map[string]any{"node_id": "t", "kind": "tool", "name": "template", "timeout": 5,
		"input": map[string]any{"template": `{{$x := "aaaaaaaaaaaaaaaa"}}{{range 40}}{{$x = printf "%s%s" $x $x}}{{end}}done`}}), "failed", "template_value")
	expectEnd("never-yields", one(map[string]any{"node_id": "t", "kind": "tool", "name": "template", "timeout": 1,
		"input": map[string]any{"template": "{{range 100000}}{{range 100000}}{{range 100000}}{{end}}{{end}}{{end}}"}}), "failed", "timed out")
	expectEnd("doubling", one(map[string]any{"node_id": "e", "kind": "tool", "name": "echo", "timeout": 5,
		"input_map": map[string]any{"v": "input" + strings.Repeat(" | [@,@]", 40)}}), "failed", "expr_elements")

	// 4: a loop asking for more iterations than the ceiling is refused; one
	// inside it stops on the stored-bytes budget; a map of big items stops
	// on the output budget.
	big := strings.Repeat("x", 100_000)
	loop := func(max int) map[string]any {
		return map[string]any{
			"nodes": []any{
				map[string]any{"node_id": "t", "kind": "tool", "name": "template", "input": map[string]any{"template": big}},
				map[string]any{"node_id": "e", "kind": "tool", "name": "echo", "input_map": map[string]any{"text": "t.output.text"}},
			},
			"edges": []any{map[string]any{"source": "t", "target": "e"}, map[string]any{"source": "e", "target": "t", "max_iterations": max}},
		}
	}
	if code, m := run("loop-over-ceiling", loop(2_000_000_000), nil); code != 422 || !strings.Contains(toJSON(m), "max-iterations") {
		t.Fatalf("a loop over the ceiling: %d %v", code, m)
	}
	expectEnd("loop-db-growth", loop(1_000_000), "failed", "stored_bytes")
	items := make([]any, 2500)
	for i := range items {
		items[i] = i
	}
	expectEndWith("map-of-big-items", map[string]any{
		"nodes": []any{
			map[string]any{"node_id": "m", "kind": "map", "items_path": "input.items", "map_node": "body"},
			map[string]any{"node_id": "body", "kind": "tool", "name": "template", "input": map[string]any{"template": `{{printf "%01000000d" 1}}`}},
		},
	}, map[string]any{"items": items}, "failed", "budget_exceeded") // output_bytes or stored_bytes, whichever is spent first

	// 5: a burst beyond the queue is refused with Retry-After, the rest
	// finish; watchers over the cap are refused.
	slow := map[string]any{"nodes": []any{map[string]any{"node_id": "d", "kind": "tool", "name": "delay", "input": map[string]any{"ms": 300}}}}
	code, m := p.do(t, "POST", "/v1/chains", map[string]any{"name": "slow", "nodes": slow["nodes"]}, auth...)
	if code != 201 {
		t.Fatalf("create slow: %d %v", code, m)
	}
	slowID := m["id"].(string)
	var accepted []string
	refused := 0
	for i := 0; i < 20; i++ {
		code, m := p.do(t, "POST", "/v1/chains/"+slowID+"/runs", map[string]any{"input": map[string]any{}}, auth...)
		switch code {
		case 202:
			accepted = append(accepted, m["run_id"].(string))
		case 429:
			refused++
		default:
			t.Fatalf("burst: %d %v", code, m)
		}
	}
	if refused == 0 || len(accepted) < 2 {
		t.Fatalf("burst of 20 with 2 running and 10 queued: %d accepted, %d refused", len(accepted), refused)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var streams []*http.Response
	watchers := 0
	for i := 0; i < 5; i++ {
		req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/v1/runs/"+accepted[len(accepted)-1]+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode == 200 {
			watchers++
			streams = append(streams, res)
		} else if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Fatalf("watcher %d: %d", i, res.StatusCode)
		} else {
			res.Body.Close()
		}
	}
	if watchers != 3 {
		t.Fatalf("%d watchers streamed, want the cap of 3", watchers)
	}
	for _, id := range accepted {
		if end := wait(id); end["status"] != "completed" {
			t.Fatalf("burst run %s ended %v", id, end["status"])
		}
	}
	cancel()
	for _, s := range streams {
		s.Body.Close()
	}

	// 7: a loader variable is refused even for an allowed program.
	expectEnd("ld-preload", one(map[string]any{"node_id": "p", "kind": "proc", "name": "proc",
		"input": map[string]any{"argv": []any{echoBin, "hi"}, "env": map[string]any{"LD_PRELOAD": "./evil.so"}}}), "failed", "ld_preload")

	// 8: a rebinding Host is misdirected.
	rebind, _ := http.NewRequest("GET", p.url+"/v1/chains", nil)
	rebind.Host = "rebind.attacker.example"
	rebind.Header.Set("Authorization", "Bearer "+token)
	if res, err := http.DefaultClient.Do(rebind); err != nil || res.StatusCode != 421 {
		t.Fatalf("rebinding Host: %v %v, want 421", res, err)
	} else {
		res.Body.Close()
	}
	// 11: next never leaves the site.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.PostForm(p.url+"/login?next=/%09/evil.example", map[string][]string{"token": {token}, "next": {"/\t/evil.example"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); loc != "/" {
		t.Fatalf("login redirect to %q, want /", loc)
	}
	// 12: guessing the token is limited.
	limited := false
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("GET", p.url+"/v1/chains", nil)
			req.Header.Set("Authorization", "Bearer wrong-guess-0123456789")
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
				if res.StatusCode == 429 {
					mu.Lock()
					limited = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if !limited {
		t.Fatal("30 wrong bearer tokens were never limited")
	}

	// 6: a second server on the same file is refused, naming the holder.
	out, err := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--no-examples").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use by another studio") {
		t.Fatalf("a second server on the same database: %v\n%s", err, out)
	}

	// Afterwards: alive, bounded, idle, and the database is sound.
	if code, _ := p.do(t, "GET", "/healthz", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
	rss := procPeakRSS(t, pid)
	time.Sleep(200 * time.Millisecond)
	c0 := procCPU(t, pid)
	time.Sleep(time.Second)
	idle := procCPU(t, pid) - c0
	t.Logf("peak RSS %d MiB; CPU in an idle second %v", rss>>20, idle)
	if rss > 800<<20 {
		t.Errorf("peak RSS %d MiB", rss>>20)
	}
	if idle > 100*time.Millisecond {
		t.Errorf("the studio used %v of CPU in a second with nothing to do", idle)
	}
	stop()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var res2 string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&res2); err != nil || res2 != "ok" {
		t.Fatalf("integrity_check: %q %v", res2, err)
	}
}
