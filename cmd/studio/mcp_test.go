package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPBridgeUsage(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://x", "127.0.0.1:8080", "http://", "http://h/?q=1"} {
		if code, _, errs := studio(t, "mcp", "--url", u); code != exitUsage || !strings.Contains(errs, "--url must be") {
			t.Errorf("--url %s: exit %d: %s", u, code, errs)
		}
	}
}

// `studio mcp` bridges stdio to a running studio's /v1/mcp: the Go SDK's
// client, starting the command, lists the exposed chain, calls it (the run
// is that studio's, started by mcp), hears progress, and a cancelled call
// cancels its run.
func TestMCPBridgeStdio(t *testing.T) {
	t.Parallel()
	bin := builtStudio(t)
	dir := t.TempDir()
	p := startStudio(t, bin, filepath.Join(dir, "studio.db"))
	defer p.cmd.Process.Kill()
	code, ch := p.do(t, "POST", "/v1/chains", json.RawMessage(`{"name":"slow greet","description":"Greets, slowly when asked.","sample_input":{"name":"Ada","ms":0},"nodes":[
		{"node_id":"hi","kind":"tool","name":"echo","input_map":{"name":"input.name"}},
		{"node_id":"wait","kind":"tool","name":"delay","input_map":{"ms":"input.ms"}}],"edges":[{"source":"hi","target":"wait"}]}`))
	if code != 201 {
		t.Fatalf("create: %d %v", code, ch)
	}
	id := ch["id"].(string)
	if code, r := p.do(t, "PUT", "/v1/chains/"+id+"/mcp", map[string]any{"exposed": true}); code != 200 || r["mcp_exposed"] != true {
		t.Fatalf("expose: %d %v", code, r)
	}

	progress := make(chan string, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	ctx := context.Background()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp", "--url", p.url)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "slow_greet" {
		t.Fatalf("tools: %+v %v", list, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow_greet", Arguments: map[string]any{"name": "Grace", "ms": 1}})
	if err != nil || res.IsError {
		t.Fatalf("call: %+v %v", res, err)
	}
	sc := res.StructuredContent.(map[string]any)
	runID := sc["run_id"].(string)
	if sc["status"] != "completed" || sc["run_url"] != p.url+"/runs/"+runID {
		t.Fatalf("result %v", sc)
	}
	if _, run := p.do(t, "GET", "/v1/runs/"+runID, nil); run["started_by"] != "mcp" || run["trigger_id"] != "local" {
		t.Fatalf("run %v", run)
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "slow_greet", Arguments: map[string]any{"name": "Slow", "ms": 60000}}
		params.SetProgressToken("p1")
		_, err := cs.CallTool(cctx, params)
		done <- err
	}()
	select {
	case m := <-progress:
		if m != "node hi: done" {
			t.Fatalf("progress %q", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no progress through the bridge")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled call answered")
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		_, runs := p.do(t, "GET", "/v1/runs?chain_id="+id, nil)
		for _, r := range runs["runs"].([]any) {
			if m := r.(map[string]any); m["id"] != runID {
				if m["status"] != "cancelled" {
					return fmt.Errorf("run %v", m["status"])
				}
				return nil
			}
		}
		return fmt.Errorf("no run of the cancelled call")
	})
}
