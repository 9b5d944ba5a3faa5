package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
)

// everythingServer is the reference MCP server from npm
// (@modelcontextprotocol/server-everything, a devDependency: `make test`
// installs it with npm ci before the Go tests).
func everythingServer(t *testing.T) (node, script string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the studio binary and node")
	}
	script, _ = filepath.Abs(filepath.Join("..", "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"))
	if _, err := os.Stat(script); err != nil {
		t.Skip("node_modules/@modelcontextprotocol/server-everything is not installed: run `npm ci` at the repository's root (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not in PATH; the MCP reference server needs it")
	}
	return node, script
}

// freeLoopbackPort is a port nothing listens on now, for a program that
// only takes its port from the environment.
func freeLoopbackPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mcpServersCLI(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, append([]string{"mcp-servers"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("studio mcp-servers %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// The studio as an MCP client of software nobody here wrote: the reference
// server, registered with the CLI over stdio (node on the allow-list) and
// over streamable HTTP (on loopback, with --mcp-allow-private), lists its
// tools in GET /v1/tools, and a chain calls echo over one and get-sum over
// the other through a real `studio serve`.
func TestServerEverythingOverStdioAndHTTP(t *testing.T) {
	node, script := everythingServer(t)
	bin := builtStudio(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "studio.db")

	port := freeLoopbackPort(t)
	httpSrv := exec.Command(node, script, "streamableHttp")
	httpSrv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	httpSrv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := httpSrv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-httpSrv.Process.Pid, syscall.SIGKILL)
		_ = httpSrv.Wait()
	})
	testutil.Eventually(t, 30*time.Second, func() error {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err
	})

	mcpServersCLI(t, bin, "add", "local", "--db", db, "--transport", "stdio", "--command", "node", "--arg", script, "--arg", "stdio")
	mcpServersCLI(t, bin, "add", "remote", "--db", db, "--transport", "http", "--url", fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
	if list := mcpServersCLI(t, bin, "list", "--db", db); !strings.Contains(list, "local") || !strings.Contains(list, "node "+script+" stdio") || !strings.Contains(list, "remote") {
		t.Fatalf("list:\n%s", list)
	}
	// A secret in a header is refused, naming the field (exit 2).
	out, err := exec.Command(bin, "mcp-servers", "add", "leaky", "--db", db, "--transport", "http", "--url", "http://127.0.0.1:1/mcp", "--header", "Authorization=Bearer x").CombinedOutput()
	if code := exitCode(err); code != exitUsage || !strings.Contains(string(out), "headers.Authorization") {
		t.Fatalf("a secret header: exit %d\n%s", code, out)
	}

	p := startStudio(t, bin, db, "--allow-mcp-command", "node", "--mcp-allow-private")
	t.Cleanup(func() {
		// A stop, not a kill: the studio ends its stdio server's process group.
		_ = p.cmd.Process.Signal(os.Interrupt)
		_ = p.cmd.Wait()
	})
	testutil.Eventually(t, 60*time.Second, func() error {
		_, m := p.do(t, "GET", "/v1/mcp-servers", nil)
		servers, _ := m["servers"].([]any)
		if len(servers) != 2 {
			return fmt.Errorf("servers %v", m)
		}
		for _, s := range servers {
			st := s.(map[string]any)["status"].(map[string]any)
			if st["state"] != "available" || st["tools"].(float64) < 2 {
				return fmt.Errorf("server %v", s)
			}
		}
		return nil
	})

	_, cat := p.do(t, "GET", "/v1/tools", nil)
	found := map[string]map[string]any{}
	for _, raw := range cat["tools"].([]any) {
		tl := raw.(map[string]any)
		if name := tl["name"].(string); strings.HasPrefix(name, "mcp:") {
			found[name] = tl
		}
	}
	for _, id := range []string{"mcp:local/echo", "mcp:local/get-sum", "mcp:remote/echo", "mcp:remote/get-sum"} {
		tl := found[id]
		if tl == nil || tl["enabled"] != true {
			t.Fatalf("%s is not in the catalog: %v", id, found[id])
		}
		if props, _ := tl["input_schema"].(map[string]any)["properties"].(map[string]any); len(props) == 0 {
			t.Fatalf("%s has no input schema: %v", id, tl)
		}
	}

	doc := map[string]any{"name": "everything", "nodes": []any{
		map[string]any{"node_id": "say", "kind": "tool", "name": "mcp:local/echo", "input": map[string]any{"message": "hello from a chain"}},
		map[string]any{"node_id": "sum", "kind": "tool", "name": "mcp:remote/get-sum", "input": map[string]any{"a": 2, "b": 3}},
	}, "edges": []any{map[string]any{"source": "say", "target": "sum"}}}
	code, ch := p.do(t, "POST", "/v1/chains", doc)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, ch)
	}
	code, run := p.do(t, "POST", "/v1/chains/"+ch["id"].(string)+"/runs", map[string]any{"input": map[string]any{}})
	if code != http.StatusAccepted {
		t.Fatalf("run: %d %v", code, run)
	}
	done := p.waitStatus(t, run["run_id"].(string), "completed", "failed")
	if done["status"] != "completed" {
		t.Fatalf("run %v: %v\n%s", done["status"], done["error"], p.logs())
	}
	outputs := done["outputs"].(map[string]any)
	if text := outputs["say"].(map[string]any)["text"]; text != "Echo: hello from a chain" {
		t.Errorf("echo over stdio: %v", outputs["say"])
	}
	if text, _ := outputs["sum"].(map[string]any)["text"].(string); !strings.Contains(text, "5") {
		t.Errorf("get-sum over HTTP: %v", outputs["sum"])
	}

	// Registering a program that is not on the allow-list is refused with
	// the flag to use.
	code, refused := p.do(t, "POST", "/v1/mcp-servers", map[string]any{"name": "shell", "transport": "stdio", "command": "sh"})
	if code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(refused), "--allow-mcp-command") {
		t.Fatalf("a program not allowed: %d %v", code, refused)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
