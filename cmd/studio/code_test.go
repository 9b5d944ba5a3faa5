//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// Code nodes against a real `studio serve`: a script's output and logs, a
// syntax error refused at save with line and column, an endless loop
// stopped at the node's timeout, 4 GiB asked for and refused at the memory
// limit while the server stays small and healthy, 50 runs at once on two
// sandbox processes, and a script that can reach no variable, file or
// socket of the studio.
//
//	go test ./cmd/studio -run TestServerCodeNodes -v
func TestServerCodeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio binary")
	}
	t.Setenv("CODE_TEST_SECRET", "hunter2-secret")
	dir := t.TempDir()
	bin := builtStudio(t)
	p := startStudio(t, bin, filepath.Join(dir, "studio.db"), "--code-workers", "2", "--code-memory-mb", "128", "--code-cpu-seconds", "5")
	defer func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}()
	pid := p.cmd.Process.Pid

	doc := func(t *testing.T, name string, nodes ...map[string]any) string {
		t.Helper()
		code, m := p.do(t, "POST", "/v1/chains", map[string]any{"name": name, "nodes": nodes})
		if code != 201 {
			t.Fatalf("create %s: %d %v", name, code, m)
		}
		return m["id"].(string)
	}
	run := func(t *testing.T, id string, input map[string]any) string {
		t.Helper()
		code, m := p.do(t, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": input})
		if code != 202 {
			t.Fatalf("start: %d %v", code, m)
		}
		return m["run_id"].(string)
	}
	codeNode := func(id, src string, extra ...any) map[string]any {
		n := map[string]any{"node_id": id, "kind": "tool", "name": "code", "input": map[string]any{"code": src}}
		for i := 0; i+1 < len(extra); i += 2 {
			n[extra[i].(string)] = extra[i+1]
		}
		return n
	}

	t.Run("output and logs", func(t *testing.T) {
		id := doc(t, "code-ok", codeNode("js", "console.log('hello', input.name)\nreturn {greeting: 'hi ' + input.name, n: [1, 2, 3].map(x => x * 2)}"))
		runID := run(t, id, map[string]any{"name": "Ada"})
		m := p.waitStatus(t, runID, "completed", "failed")
		if got := toJSON(m["final_output"]); got != `{"greeting":"hi Ada","n":[2,4,6]}` {
			t.Fatalf("%v: %s %v", m["status"], got, m["error"])
		}
		var logged bool
		for _, e := range p.events(t, runID) {
			if e["phase"] == "progress" && strings.Contains(toJSON(e["progress"]), `"lines":["hello Ada"]`) {
				logged = true
			}
		}
		if !logged {
			t.Fatal("no log event")
		}
	})

	t.Run("syntax error at save", func(t *testing.T) {
		code, m := p.do(t, "POST", "/v1/validate", map[string]any{"name": "bad", "nodes": []any{codeNode("js", "let a = 1;\nreturn a +;")}})
		s := toJSON(m)
		if code != 200 || !strings.Contains(s, `"line":2`) || !strings.Contains(s, `"column":11`) || !strings.Contains(s, `"node_id":"js"`) || !strings.Contains(s, "input_check") {
			t.Fatalf("%d %s", code, s)
		}
	})

	t.Run("endless loop stops at the timeout", func(t *testing.T) {
		id := doc(t, "code-loop", codeNode("js", "for (;;) {}", "timeout", 1))
		start := time.Now()
		m := p.waitStatus(t, run(t, id, nil), "failed")
		if !strings.Contains(toJSON(m["error"]), "timed out after 1s") {
			t.Fatalf("%v", m["error"])
		}
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("took %s", d)
		}
	})

	t.Run("4 GiB fails at the memory limit", func(t *testing.T) {
		for i, src := range []string{
			`const a = []; for (;;) a.push(new Array(1 << 16).fill(1.5)); `,
			`return new ArrayBuffer(4 * 1024 * 1024 * 1024).byteLength`,
			`return "x".repeat(4 * 1024 * 1024 * 1024).length`,
		} {
			id := doc(t, "code-memory-"+strconv.Itoa(i), codeNode("js", src))
			m := p.waitStatus(t, run(t, id, nil), "failed")
			if !strings.Contains(toJSON(m["error"]), "memory limit of 128 MiB") {
				t.Errorf("%s: %v", src, m["error"])
			}
			if code, _ := p.do(t, "GET", "/healthz", nil); code != 200 {
				t.Fatalf("healthz: %d", code)
			}
		}
		rss := procPeakRSS(t, pid)
		t.Logf("studio peak RSS %d MiB", rss>>20)
		if rss > 300<<20 {
			t.Errorf("the studio's peak RSS is %d MiB", rss>>20)
		}
	})

	t.Run("50 concurrent scripts share the pool", func(t *testing.T) {
		id := doc(t, "code-many", codeNode("js", "let s = 0; for (let i = 0; i < 1e5; i++) s += i; return {s, n: input.n}"))
		var wg sync.WaitGroup
		var bad atomic.Int32
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				m := p.waitStatus(t, run(t, id, map[string]any{"n": i}), "completed", "failed")
				if toJSON(m["final_output"]) != fmt.Sprintf(`{"n":%d,"s":4999950000}`, i) {
					bad.Add(1)
					t.Errorf("run %d: %v %v", i, m["final_output"], m["error"])
				}
			}(i)
		}
		wg.Wait()
		if kids := sandboxChildren(t, pid); len(kids) > 2 {
			t.Fatalf("%d sandbox processes for --code-workers 2", len(kids))
		}
	})

	t.Run("no variable, file or socket", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		var accepted atomic.Int32
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		addr := ln.Addr().String()
		tries := []string{
			// the environment
			`try { return process.env.CODE_TEST_SECRET } catch (e) { return "refused: " + e.name }`,
			`return JSON.stringify(globalThis).includes("hunter2") ? "leaked" : "refused"`,
			// a file
			`try { return require("fs").readFileSync("/etc/passwd", "utf8") } catch (e) { return "refused: " + e.name }`,
			`try { return load("/etc/passwd") } catch (e) { return "refused: " + e.name }`,
			// a socket, on loopback only
			`try { return fetch("http://` + addr + `/") } catch (e) { return "refused: " + e.name }`,
			`try { const x = new XMLHttpRequest(); x.open("GET", "http://` + addr + `/"); x.send(); return "sent" } catch (e) { return "refused: " + e.name }`,
			`try { return new WebSocket("ws://` + addr + `/") } catch (e) { return "refused: " + e.name }`,
			`try { return import("http://` + addr + `/x.js") } catch (e) { return "refused: " + e.name }`,
		}
		for i, src := range tries {
			id := doc(t, "code-escape-"+strconv.Itoa(i), codeNode("js", src))
			code, m := p.do(t, "POST", "/v1/chains/"+id+"/runs", map[string]any{"input": map[string]any{}, "version": "draft"})
			if code == 422 && strings.Contains(toJSON(m), "input_check") {
				continue // refused before running: import() does not even parse in the sandbox
			}
			if code != 202 {
				t.Fatalf("start: %d %v", code, m)
			}
			m = p.waitStatus(t, m["run_id"].(string), "completed", "failed")
			out := toJSON(m["final_output"]) + toJSON(m["error"])
			if strings.Contains(out, "hunter2") || strings.Contains(out, "root:") || strings.Contains(out, "leaked") || strings.Contains(out, "sent") ||
				(m["status"] == "completed" && !strings.Contains(out, "refused")) {
				t.Errorf("%s: %v %s", src, m["status"], out)
			}
		}
		if n := accepted.Load(); n != 0 {
			t.Fatalf("a script opened %d connections", n)
		}
		// The sandbox processes themselves hold no variable and no
		// descriptor but their three pipes.
		kids := sandboxChildren(t, pid)
		if len(kids) == 0 {
			t.Fatal("no sandbox process")
		}
		for _, k := range kids {
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", k))
			if err != nil {
				t.Fatal(err)
			}
			if len(env) != 0 {
				t.Errorf("sandbox %d has an environment: %q", k, env)
			}
			fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", k))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, fd := range fds {
				target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", k, fd.Name()))
				// The Go runtime's own: its poller (anon inodes), the cgroup
				// files it reads its CPU quota from.
				if n, _ := strconv.Atoi(fd.Name()); n > 2 && !strings.HasPrefix(target, "anon_inode:") && !strings.HasPrefix(target, "/sys/fs/cgroup/") {
					names = append(names, fd.Name()+" → "+target)
				}
			}
			if len(names) > 0 {
				t.Errorf("sandbox %d holds descriptors beyond its pipes: %v", k, names)
			}
		}
	})

	// Afterwards the studio is idle: the children stopped working.
	// The CPU used is measured between polls: a window of at least a
	// second, restarted while the studio is still busy.
	c0, at := procCPU(t, pid), time.Now()
	err := testutil.Poll(10*time.Second, func() error {
		window := time.Since(at)
		if window < time.Second {
			return fmt.Errorf("measuring over %v", window)
		}
		used := procCPU(t, pid) - c0
		if used > window/10 {
			c0, at = procCPU(t, pid), time.Now()
			return fmt.Errorf("the studio used %v of CPU in %v", used, window.Round(time.Millisecond))
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// sandboxChildren lists the studio's sandbox processes (`studio __sandbox`).
func sandboxChildren(t *testing.T, pid int) []int {
	t.Helper()
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", k))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if ppid, _ := strconv.Atoi(f[1]); ppid != pid {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k))
		if strings.Contains(string(cmd), "__sandbox") {
			out = append(out, k)
		}
	}
	return out
}
