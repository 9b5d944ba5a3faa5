package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
)

// studioProc is a studio binary running as a child process.
type studioProc struct {
	cmd *exec.Cmd
	url string
	mu  sync.Mutex
	log bytes.Buffer
}

var runningRE = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)`)

// startStudio starts bin on a free loopback port with the database db (and
// extra flags) and waits until it listens.
func startStudio(t *testing.T, bin, db string, extra ...string) *studioProc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--no-examples", "--agents", filepath.Join(filepath.Dir(db), "no-agents")}, extra...)
	p := &studioProc{cmd: exec.Command(bin, args...)}
	p.cmd.Env = append(os.Environ(), "STUDIO_TOKEN=")
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
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if m := runningRE.FindStringSubmatch(line); m != nil {
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

func (p *studioProc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *studioProc) do(t *testing.T, method, path string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return res.StatusCode, m
}

// events replays a stopped run's stored events through the event stream.
func (p *studioProc) events(t *testing.T, runID string) []map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+"/v1/runs/"+runID+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, frame := range strings.Split(string(b), "\n\n") {
		var event, data string
		for _, line := range strings.Split(frame, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			}
		}
		if data == "" || event == "run" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

func (p *studioProc) waitStatus(t *testing.T, runID string, want ...string) map[string]any {
	t.Helper()
	var m map[string]any
	err := testutil.Poll(60*time.Second, func() error {
		_, m = p.do(t, "GET", "/v1/runs/"+runID, nil)
		if m["active"] == false && slices.Contains(want, fmt.Sprint(m["status"])) {
			return nil
		}
		return fmt.Errorf("status %v (active %v), want %v", m["status"], m["active"], want)
	})
	if err != nil {
		t.Fatalf("run %s: %v\n%s", runID, err, p.logs())
	}
	return m
}

// committed reads, from the database file itself, every saved chain version
// and every stored event (run id → seq → phase/node), while the studio runs.
func committed(t *testing.T, db string) (versions map[string]string, events map[string]map[int64]string) {
	t.Helper()
	raw, err := sql.Open("sqlite", db+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	versions = map[string]string{}
	rows, err := raw.Query(`SELECT chain_id, version, doc FROM chain_versions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, doc string
		var v int
		if err := rows.Scan(&id, &v, &doc); err != nil {
			t.Fatal(err)
		}
		versions[fmt.Sprintf("%s@%d", id, v)] = doc
	}
	rows.Close()
	events = map[string]map[int64]string{}
	// Events are stored in batches (a JSON array per row): SQLite's json_each
	// spreads them out again, straight from the file.
	rows, err = raw.Query(`SELECT b.run_id, json_extract(e.value, '$.seq'), json_extract(e.value, '$.phase'), json_extract(e.value, '$.node_id')
FROM event_batches b, json_each(b.body) e`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var run, phase, node string
		var seq int64
		if err := rows.Scan(&run, &seq, &phase, &node); err != nil {
			t.Fatal(err)
		}
		if events[run] == nil {
			events[run] = map[int64]string{}
		}
		events[run][seq] = phase + "/" + node
	}
	rows.Close()
	return versions, events
}

// Faults (a): kill -9 the studio in the middle of runs (parallel branches,
// a map, a linear chain, and a paused approval). After the restart every
// saved chain version and every committed event is there, the interrupted
// runs are marked interrupted_by_restart and resume to completion, and the
// paused approval still resumes.
//
//	go test ./cmd/studio -run TestKillNineAndRestart -v
func TestKillNineAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio and kills it mid-run (make test runs it)")
	}
	dir := t.TempDir()
	bin := builtStudio(t)
	db := filepath.Join(dir, "studio.db")
	p := startStudio(t, bin, db)
	killed := false
	defer func() {
		if !killed {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}()

	const ms = 2500
	docs := map[string]map[string]any{
		"parallel": {"name": "parallel", "nodes": []any{
			map[string]any{"node_id": "fan", "kind": "parallel", "branches": []any{"b1", "b2", "b3"}},
			map[string]any{"node_id": "b1", "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}},
			map[string]any{"node_id": "b2", "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}},
			map[string]any{"node_id": "b3", "kind": "tool", "name": "echo", "input": map[string]any{"quick": true}},
			map[string]any{"node_id": "after", "kind": "tool", "name": "echo"},
		}, "edges": []any{map[string]any{"source": "fan", "target": "after"}}},
		"map": {"name": "map", "nodes": []any{
			map[string]any{"node_id": "first", "kind": "tool", "name": "echo", "input_map": map[string]any{"items": "input.items"}},
			map[string]any{"node_id": "each", "kind": "map", "items_path": "first.output.items", "map_node": "body"},
			map[string]any{"node_id": "body", "kind": "tool", "name": "delay", "input_map": map[string]any{"ms": "item"}},
			map[string]any{"node_id": "after", "kind": "tool", "name": "echo"},
		}, "edges": []any{
			map[string]any{"source": "first", "target": "each"},
			map[string]any{"source": "each", "target": "after"},
		}},
		"linear": {"name": "linear", "nodes": []any{
			map[string]any{"node_id": "a", "kind": "tool", "name": "echo", "input_map": map[string]any{"n": "input.n"}},
			map[string]any{"node_id": "wait", "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}},
			map[string]any{"node_id": "c", "kind": "tool", "name": "echo"},
		}, "edges": []any{
			map[string]any{"source": "a", "target": "wait"},
			map[string]any{"source": "wait", "target": "c"},
		}},
		"approval": {"name": "approval", "nodes": []any{
			map[string]any{"node_id": "a", "kind": "tool", "name": "echo"},
			map[string]any{"node_id": "ask", "kind": "interrupt", "config": map[string]any{"prompt": "ok?"}},
			map[string]any{"node_id": "c", "kind": "tool", "name": "echo"},
		}, "edges": []any{
			map[string]any{"source": "a", "target": "ask"},
			map[string]any{"source": "ask", "target": "c"},
		}},
	}
	ids := map[string]string{}
	for _, name := range []string{"parallel", "map", "linear", "approval"} {
		code, m := p.do(t, "POST", "/v1/chains", docs[name])
		if code != 201 {
			t.Fatalf("create %s: %d %v", name, code, m)
		}
		ids[name] = m["id"].(string)
		// Two more versions of each.
		for v := 1; v <= 2; v++ {
			docs[name]["description"] = fmt.Sprintf("version %d", v+1)
			code, m := p.do(t, "PUT", "/v1/chains/"+ids[name], docs[name], "If-Match", fmt.Sprintf(`"v%d"`, v))
			if code != 200 {
				t.Fatalf("update %s: %d %v", name, code, m)
			}
		}
	}
	start := func(name string, input map[string]any) string {
		code, m := p.do(t, "POST", "/v1/chains/"+ids[name]+"/runs", map[string]any{"input": input})
		if code != 202 {
			t.Fatalf("start %s: %d %v", name, code, m)
		}
		return m["run_id"].(string)
	}
	approval := start("approval", nil)
	p.waitStatus(t, approval, "paused")
	interrupted := map[string]string{
		start("parallel", nil): "parallel",
		start("map", map[string]any{"items": []any{ms, ms, ms, 10, 10}}): "map",
		start("linear", map[string]any{"n": 1}):                          "linear",
		start("linear", map[string]any{"n": 2}):                          "linear",
	}
	// Kill once every run is inside its delay: its delay node's start
	// event is committed to the file (the delays outlast this by far).
	delayNodes := map[string]bool{"b1": true, "b2": true, "body": true, "wait": true}
	testutil.Eventually(t, 30*time.Second, func() error {
		_, evs := committed(t, db)
		for id, name := range interrupted {
			started := false
			for _, what := range evs[id] {
				phase, node, _ := strings.Cut(what, "/")
				started = started || (phase == string(engine.PhaseStart) && delayNodes[node])
			}
			if !started {
				return fmt.Errorf("the %s run %s has not committed the start of a delay node", name, id)
			}
		}
		return nil
	})
	for id := range interrupted {
		if _, m := p.do(t, "GET", "/v1/runs/"+id, nil); m["status"] != "running" {
			t.Fatalf("run %s is %v before the kill", id, m["status"])
		}
	}
	versions, events := committed(t, db)

	// kill -9.
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
	killed = true
	if len(versions) != 12 {
		t.Fatalf("%d chain versions committed before the kill, want 12", len(versions))
	}
	nEvents := 0
	for _, es := range events {
		nEvents += len(es)
	}
	t.Logf("before the kill: %d chain versions, %d committed events in %d runs", len(versions), nEvents, len(events))

	p = startStudio(t, bin, db)
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()
	// Every chain version is there, unchanged.
	after, afterEvents := committed(t, db)
	for k, doc := range versions {
		if after[k] != doc {
			t.Errorf("chain version %s lost or changed by the kill", k)
		}
	}
	for name, id := range ids {
		code, m := p.do(t, "GET", "/v1/chains/"+id+"/versions", nil)
		if vs, _ := m["versions"].([]any); code != 200 || len(vs) != 3 {
			t.Errorf("%s: versions after restart: %d %v", name, code, m)
		}
	}
	// Every committed event is there.
	for run, es := range events {
		for seq, what := range es {
			if afterEvents[run][seq] != what {
				t.Errorf("run %s event %d (%s) lost", run, seq, what)
			}
		}
	}
	// The interrupted runs are marked; the approval is still paused.
	for id, name := range interrupted {
		_, m := p.do(t, "GET", "/v1/runs/"+id, nil)
		e, _ := m["error"].(map[string]any)
		if m["status"] != "failed" || e == nil || e["code"] != store.CodeInterruptedByRestart {
			t.Errorf("%s run %s after restart: %v %v", name, id, m["status"], m["error"])
		}
	}
	if _, m := p.do(t, "GET", "/v1/runs/"+approval, nil); m["status"] != "paused" {
		t.Fatalf("approval after restart: %v", m["status"])
	}
	// Resume everything.
	for id, name := range interrupted {
		if code, m := p.do(t, "POST", "/v1/runs/"+id+"/resume", map[string]any{}); code != 200 {
			t.Fatalf("resume %s: %d %v", name, code, m)
		}
	}
	if code, m := p.do(t, "POST", "/v1/runs/"+approval+"/resume", map[string]any{"resume_value": map[string]any{"approved": true}}); code != 200 {
		t.Fatalf("resume approval: %d %v", code, m)
	}
	check := func(id, name string) {
		m := p.waitStatus(t, id, "completed", "failed", "partial")
		if m["status"] != "completed" {
			t.Errorf("%s run %s after resume: %v %v", name, id, m["status"], m["error"])
			return
		}
		// The whole history: seq 1..n, no gap, no duplicate, everything
		// committed before the kill unchanged.
		evs := p.events(t, id)
		seqs := make([]int, 0, len(evs))
		for _, ev := range evs {
			seqs = append(seqs, int(ev["seq"].(float64)))
			if want, ok := events[id][int64(ev["seq"].(float64))]; ok && want != fmt.Sprintf("%s/%s", ev["phase"], ev["node_id"]) {
				t.Errorf("%s: event %v changed: was %s", name, ev["seq"], want)
			}
		}
		if !sort.IntsAreSorted(seqs) {
			t.Errorf("%s: events out of order: %v", name, seqs)
		}
		for i, s := range seqs {
			if s != i+1 {
				t.Errorf("%s: event seqs %v: want 1..%d without gaps", name, seqs, len(seqs))
				break
			}
		}
		switch name {
		case "map":
			out := m["outputs"].(map[string]any)["each"]
			if l, _ := out.([]any); len(l) != 5 {
				t.Errorf("map output after resume: %v", out)
			}
		case "approval":
			if fo, _ := m["final_output"].(map[string]any); fo["approved"] != true {
				t.Errorf("approval final output: %v", m["final_output"])
			}
		}
	}
	for id, name := range interrupted {
		check(id, name)
	}
	check(approval, "approval")
	if t.Failed() {
		t.Logf("studio log:\n%s", p.logs())
	}
	// A clean stop, then the file passes integrity_check.
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var res string
	if err := raw.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q %v", res, err)
	}
}
