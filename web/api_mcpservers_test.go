package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/seal"
	"github.com/chainstudio/studio/store/sqlite"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/ops"
)

// newMCPServer is a studio with a vault and an MCP host over its store, as
// cmd/studio wires them; its HTTP client may reach loopback (the Go SDK
// server of these tests).
func newMCPServer(t *testing.T) (*Server, *httptest.Server) {
	t.Helper()
	return newMCPServerPrivate(t, true)
}

// newMCPServerPrivate is newMCPServer with --mcp-allow-private as given.
func newMCPServerPrivate(t *testing.T, allowPrivate bool) (*Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, _ := seal.Generate()
	v, err := vault.Open(ctx, db, key, vault.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host, err := mcphost.New(ctx, mcphost.Options{Store: db, Credentials: v.ForChain(""), AllowPrivate: allowPrivate,
		RefuseEnv: builtin.LoaderEnv, Poll: -1, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(host.Close)
	reg := testRegistry()
	reg.AddSource(mcp.IDPrefix, host)
	deps := testDeps(t, db, reg, func(o *runs.Options) { o.Credentials = v })
	deps.Vault, deps.MCP = v, host
	srv, err := New(Config{Logger: testLogger()}, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	ts := httptest.NewServer(checkAPI(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return srv, ts
}

// mcpStub is a Go SDK MCP server on loopback that wants a bearer token.
func mcpStub(t *testing.T, token string) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "stub", Version: "0.1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "says it back",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if args["message"] == "fail" {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "asked to fail"}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Echo: " + fmt.Sprint(args["message"])}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	// The client's event stream stays open until the studio closes it,
	// which happens after this cleanup: cut it here.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return ts
}

func createChainAs(t *testing.T, ts *httptest.Server, doc string, h []string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/chains", doc, h...)
	wantStatus(t, r, http.StatusCreated)
	return r.json(t)["id"].(string)
}

func TestMCPServersRegisterListRunAndRemove(t *testing.T) {
	t.Parallel()
	srv, ts := newMCPServer(t)
	h := roleTokens(t, srv)
	stub := mcpStub(t, "mcp-token-123456")
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"stub-token","type":"bearer","fields":{"token":"mcp-token-123456"},"hosts":["127.0.0.1"]}`, h["admin"]...), http.StatusCreated)
	wantStatus(t, do(t, ts, "POST", "/v1/credentials", `{"name":"narrow","type":"bearer","fields":{"token":"x"},"chains":["some-chain"]}`, h["admin"]...), http.StatusCreated)

	body := fmt.Sprintf(`{"name":"stub","transport":"http","url":%q,"credential":"stub-token","headers":{"X-Tenant":"acme"}}`, stub.URL+"/mcp")
	wantStatus(t, do(t, ts, "POST", "/v1/mcp-servers", body, h["editor"]...), http.StatusForbidden)
	r := do(t, ts, "POST", "/v1/mcp-servers", body, h["admin"]...)
	wantStatus(t, r, http.StatusCreated)
	if m := r.json(t); m["credential"] != "stub-token" || m["enabled"] != true || m["created_by"] != "admin1" {
		t.Fatalf("created %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/mcp-servers", body, h["admin"]...), http.StatusConflict)

	// Refusals name the server and the field.
	for name, tc := range map[string]struct{ body, want string }{
		"secret header":      {`{"name":"x","transport":"http","url":"https://h/","headers":{"Authorization":"Bearer t"}}`, "headers.Authorization"},
		"no such credential": {`{"name":"x","transport":"http","url":"https://h/","credential":"ghost"}`, `"ghost" does not exist`},
		"narrow credential":  {`{"name":"x","transport":"http","url":"https://h/","credential":"narrow"}`, "open to every chain"},
		"not allowed":        {`{"name":"x","transport":"stdio","command":"sh"}`, mcp.AllowCommandFlag},
		"bad transport":      {`{"name":"x","transport":"ws","url":"ws://h"}`, "transport"},
		"bad name":           {`{"name":"a/b","transport":"stdio","command":"sh"}`, "name"},
	} {
		r := do(t, ts, "POST", "/v1/mcp-servers", tc.body, h["admin"]...)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if r.errCode(t) != "invalid_mcp_server" || !strings.Contains(fmt.Sprint(r.json(t)["error"]), tc.want) {
			t.Errorf("%s: %s", name, r.body)
		}
	}

	// Viewers see the name and the live status, not the configuration.
	testutil.Eventually(t, 10*time.Second, func() error {
		r := do(t, ts, "GET", "/v1/mcp-servers/stub", nil, h["viewer"]...)
		st, _ := r.json(t)["status"].(map[string]any)
		if st["state"] != "available" || st["tools"] != 1.0 {
			return fmt.Errorf("status %s", r.body)
		}
		if strings.Contains(string(r.body), "stub-token") || strings.Contains(string(r.body), stub.URL) {
			return fmt.Errorf("a viewer sees the configuration: %s", r.body)
		}
		return nil
	})

	// Its tools are in the catalog with their schemas, and run as nodes.
	r = do(t, ts, "GET", "/v1/tools", nil, h["viewer"]...)
	var cat struct {
		Tools []ops.ToolJSON `json:"tools"`
	}
	_ = json.Unmarshal(r.body, &cat)
	var echo *ops.ToolJSON
	for i := range cat.Tools {
		if cat.Tools[i].Name == "mcp:stub/echo" {
			echo = &cat.Tools[i]
		}
	}
	if echo == nil || !echo.Enabled || echo.Description != "says it back" || echo.InputSchema["required"] == nil {
		t.Fatalf("catalog: %+v", echo)
	}
	id := createChainAs(t, ts, `{"name":"mcp-run","nodes":[{"node_id":"say","kind":"tool","name":"mcp:stub/echo","input":{"message":"hi"}}]}`, h["editor"])
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run := waitRunAs(t, ts, r.json(t)["run_id"].(string), h["viewer"])
	out, _ := json.Marshal(run["final_output"])
	if run["status"] != "completed" || !strings.Contains(string(out), `"text":"Echo: hi"`) {
		t.Fatalf("run %v: %s", run["status"], out)
	}
	// A static input the tool's schema refuses is refused before the run.
	bad := createChainAs(t, ts, `{"name":"mcp-bad","nodes":[{"node_id":"say","kind":"tool","name":"mcp:stub/echo","input":{"message":3}}]}`, h["editor"])
	wantStatus(t, do(t, ts, "POST", "/v1/chains/"+bad+"/runs", `{"input":{},"version":"draft"}`, h["editor"]...), http.StatusUnprocessableEntity)
	// The server's isError is the node's error, with its message.
	failing := createChainAs(t, ts, `{"name":"mcp-fail","nodes":[{"node_id":"say","kind":"tool","name":"mcp:stub/echo","input":{"message":"fail"}}]}`, h["editor"])
	r = do(t, ts, "POST", "/v1/chains/"+failing+"/runs", `{"input":{}}`, h["editor"]...)
	run = waitRunAs(t, ts, r.json(t)["run_id"].(string), h["viewer"])
	if run["status"] != "failed" || !strings.Contains(fmt.Sprint(run["error"]), "asked to fail") {
		t.Fatalf("failing run %v %v", run["status"], run["error"])
	}

	// Disabled: the tools are unavailable with the reason; a chain naming
	// one still validates (a warning), and its run fails at the node.
	wantStatus(t, do(t, ts, "PUT", "/v1/mcp-servers/stub", strings.Replace(body, `"name":"stub",`, `"enabled":false,`, 1), h["admin"]...), http.StatusOK)
	r = do(t, ts, "POST", "/v1/validate", `{"name":"v","nodes":[{"node_id":"say","kind":"tool","name":"mcp:stub/echo","input":{"message":"hi"}}]}`, h["viewer"]...)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"tool_unavailable"`) || !strings.Contains(string(r.body), "disabled") || r.json(t)["valid"] != true {
		t.Fatalf("validate: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/chains/"+id+"/runs", `{"input":{}}`, h["editor"]...)
	wantStatus(t, r, http.StatusAccepted)
	run = waitRunAs(t, ts, r.json(t)["run_id"].(string), h["viewer"])
	if run["status"] != "failed" || !strings.Contains(fmt.Sprint(run["error"]), "disabled") {
		t.Fatalf("run of a disabled server's tool: %v %v", run["status"], run["error"])
	}
	wantStatus(t, do(t, ts, "PUT", "/v1/mcp-servers/stub", `{"name":"other","transport":"stdio","command":"sh"}`, h["admin"]...), http.StatusUnprocessableEntity)

	// The page lists it for admins only.
	page := do(t, ts, "GET", "/settings/mcp-servers", nil, h["admin"]...)
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(string(page.body), `data-mcp-server="stub"`) || !strings.Contains(string(page.body), "disabled") {
		t.Fatalf("page: %s", page.body)
	}
	// Its status cells are the ones the page's script keeps up to date
	// (static/js/mcpservers.js, from GET /v1/mcp-servers): no reload.
	for _, want := range []string{"/js/mcpservers.js", `class="mcp-state"`, `class="mcp-tools"`} {
		if !strings.Contains(string(page.body), want) {
			t.Fatalf("the page has no %s: the status would stay as rendered", want)
		}
	}
	wantStatus(t, do(t, ts, "GET", "/settings/mcp-servers", nil, h["editor"]...), http.StatusForbidden)

	wantStatus(t, do(t, ts, "DELETE", "/v1/mcp-servers/stub", nil, h["editor"]...), http.StatusForbidden)
	wantStatus(t, do(t, ts, "DELETE", "/v1/mcp-servers/stub", nil, h["admin"]...), http.StatusNoContent)
	wantStatus(t, do(t, ts, "GET", "/v1/mcp-servers/stub", nil, h["admin"]...), http.StatusNotFound)
	r = do(t, ts, "POST", "/v1/validate", `{"name":"v","nodes":[{"node_id":"say","kind":"tool","name":"mcp:stub/echo"}]}`, h["viewer"]...)
	if !strings.Contains(string(r.body), `"unknown_tool"`) {
		t.Fatalf("validate after removal: %s", r.body)
	}
}

func waitRunAs(t *testing.T, ts *httptest.Server, id string, h []string) map[string]any {
	t.Helper()
	var m map[string]any
	testutil.Eventually(t, 20*time.Second, func() error {
		r := do(t, ts, "GET", "/v1/runs/"+id, nil, h...)
		wantStatus(t, r, http.StatusOK)
		m = r.json(t)
		if m["status"] == "running" || m["active"] != false {
			return fmt.Errorf("run %s is still %v (active %v)", id, m["status"], m["active"])
		}
		return nil
	})
	return m
}

// The MCP servers page warns of a URL the studio will refuse to connect to
// (a loopback or private address without --mcp-allow-private) as the admin
// types it and on the server's row, naming the flag; with the flag, or for
// a public name, it says nothing.
func TestMCPServerURLWarnedAsTyped(t *testing.T) {
	t.Parallel()
	for _, allow := range []bool{false, true} {
		srv, ts := newMCPServerPrivate(t, allow)
		h := roleTokens(t, srv)
		check := func(u string) string {
			r := do(t, ts, "GET", "/settings/mcp-servers/url-check?url="+url.QueryEscape(u), nil, h["admin"]...)
			wantStatus(t, r, http.StatusOK)
			return string(r.body)
		}
		for _, u := range []string{"http://127.0.0.1:9/mcp", "http://localhost:3000/mcp", "http://10.1.2.3/mcp", "http://[::1]:8/mcp"} {
			if got := check(u); strings.Contains(got, "--mcp-allow-private") == allow {
				t.Errorf("allow=%v %s: %q", allow, u, got)
			}
		}
		for _, u := range []string{"https://mcp.example.com/mcp", "", "not a url"} {
			if got := check(u); strings.TrimSpace(got) != "" {
				t.Errorf("%q: warned %q", u, got)
			}
		}
		wantStatus(t, do(t, ts, "GET", "/settings/mcp-servers/url-check?url=x", nil, h["editor"]...), http.StatusForbidden)
		wantStatus(t, do(t, ts, "POST", "/v1/mcp-servers", `{"name":"local","transport":"http","url":"http://127.0.0.1:9/mcp","enabled":false}`, h["admin"]...), http.StatusCreated)
		page := do(t, ts, "GET", "/settings/mcp-servers", nil, h["admin"]...)
		if strings.Contains(string(page.body), "refused here") == allow {
			t.Errorf("allow=%v: the row's warning: %s", allow, page.body)
		}
	}
}
