package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/web/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"one-shot","version":"1"}}}`

var mcpAccept = []string{"Accept", "application/json, text/event-stream"}

// mcpOpen opens a session with one initialize POST, as a one-shot client
// does, and never closes it nor opens its stream.
func mcpOpen(t *testing.T, ts *httptest.Server, hdr ...string) string {
	t.Helper()
	r := do(t, ts, "POST", "/v1/mcp", mcpInit, append(append([]string{}, mcpAccept...), hdr...)...)
	wantStatus(t, r, http.StatusOK)
	sid := r.header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize answered no session id: %s", r.body)
	}
	return sid
}

// mcpRPCError reads a refusal of /v1/mcp: a JSON-RPC error body.
func mcpRPCError(t *testing.T, r resp) (code float64, dataCode, msg string) {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%d answered %q, not JSON: %s", r.status, ct, r.body)
	}
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    float64 `json:"code"`
			Message string  `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.JSONRPC != "2.0" || body.Error.Message == "" {
		t.Fatalf("%d: not a JSON-RPC error (%v): %s", r.status, err, r.body)
	}
	return body.Error.Code, body.Error.Data.Code, body.Error.Message
}

// The refusals of /v1/mcp are JSON-RPC errors with the status the
// specification gives, and initialize says which build answers.
func TestMCPRefusalsAreJSONRPC(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	// A request other than initialize without a session: 400, not a
	// session opened only to answer "not initialized".
	r := do(t, ts, "POST", "/v1/mcp", list, mcpAccept...)
	wantStatus(t, r, http.StatusBadRequest)
	if code, dc, msg := mcpRPCError(t, r); code != -32600 || dc != "session_required" || !strings.Contains(msg, "Mcp-Session-Id") {
		t.Fatalf("no session: %v %q %q", code, dc, msg)
	}
	r = do(t, ts, "GET", "/v1/mcp", nil, "Accept", "text/event-stream")
	wantStatus(t, r, http.StatusBadRequest)
	if _, dc, _ := mcpRPCError(t, r); dc != "session_required" {
		t.Fatalf("GET without a session: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/mcp", `{"jsonrpc":`, mcpAccept...)
	wantStatus(t, r, http.StatusBadRequest)
	if code, dc, _ := mcpRPCError(t, r); code != -32700 || dc != "parse_error" {
		t.Fatalf("bad JSON: %s", r.body)
	}

	// An unknown session: 404 with the code the SDKs' clients read.
	r = do(t, ts, "POST", "/v1/mcp", list, append([]string{"Mcp-Session-Id", "no-such-session"}, mcpAccept...)...)
	wantStatus(t, r, http.StatusNotFound)
	if code, dc, msg := mcpRPCError(t, r); code != -32001 || dc != "session_not_found" || !strings.Contains(msg, "initialize") {
		t.Fatalf("unknown session: %v %q %q", code, dc, msg)
	}

	// Bodies over 1 MiB, with and without a session.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", mcpserver.BodyLimit) + `"}}`
	r = do(t, ts, "POST", "/v1/mcp", big, mcpAccept...)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if _, dc, _ := mcpRPCError(t, r); dc != "too_large" {
		t.Fatalf("big initialize: %s", r.body)
	}
	sid := mcpOpen(t, ts)
	r = do(t, ts, "POST", "/v1/mcp", big, append([]string{"Mcp-Session-Id", sid}, mcpAccept...)...)
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	if _, dc, msg := mcpRPCError(t, r); dc != "too_large" || !strings.Contains(msg, "1048576") {
		t.Fatalf("big body in a session: %s", r.body)
	}

	// Headers the transport does not take: 400 with the SDK's reason.
	r = do(t, ts, "POST", "/v1/mcp", list, "Mcp-Session-Id", sid, "Accept", "application/json")
	wantStatus(t, r, http.StatusBadRequest)
	if _, _, msg := mcpRPCError(t, r); !strings.Contains(msg, "text/event-stream") {
		t.Fatalf("bad Accept: %s", r.body)
	}
	r = do(t, ts, "POST", "/v1/mcp", list, append([]string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "1999-01-01"}, mcpAccept...)...)
	wantStatus(t, r, http.StatusBadRequest)
	if _, _, msg := mcpRPCError(t, r); !strings.Contains(msg, "protocol version") {
		t.Fatalf("bad protocol version: %s", r.body)
	}

	// serverInfo names the build.
	cs, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if info := cs.InitializeResult().ServerInfo; info.Name != "chain-studio" || info.Version == "" || info.Version != buildVersion() {
		t.Fatalf("serverInfo %+v, want version %q", info, buildVersion())
	}
}

// mcpStream opens the session's stream (GET) and returns once the server
// has it; the stream closes with the test.
func mcpStream(t *testing.T, srv *Server, ts *httptest.Server, sid string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	go func() {
		res, err := ts.Client().Do(req)
		if err != nil {
			return
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
		}
	}()
	testutil.Eventually(t, 5*time.Second, func() error {
		if srv.mcp.Stats().InFlight[sid] == 0 {
			return fmt.Errorf("session %s has no stream yet", sid)
		}
		return nil
	})
}

// One-shot clients that never close their sessions do not lock their
// caller out: at the bound, the caller's session idle the longest is given
// up for the new one; sessions with a stream are not.
func TestMCPIdleSessionsAreGivenUpForNewOnes(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{MCPMaxSessionsPerUser: 2}, testRegistry())
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	s1 := mcpOpen(t, ts)
	s2 := mcpOpen(t, ts)
	s3 := mcpOpen(t, ts) // refused with 429 while idle sessions counted
	r := do(t, ts, "POST", "/v1/mcp", ping, append([]string{"Mcp-Session-Id", s1}, mcpAccept...)...)
	wantStatus(t, r, http.StatusNotFound)
	if _, dc, _ := mcpRPCError(t, r); dc != "session_not_found" {
		t.Fatalf("the given-up session: %s", r.body)
	}
	for _, sid := range []string{s2, s3} {
		wantStatus(t, do(t, ts, "POST", "/v1/mcp", ping, append([]string{"Mcp-Session-Id", sid}, mcpAccept...)...), http.StatusOK)
	}
	// Many one-shot calls in a row all get a session.
	for range 6 {
		mcpOpen(t, ts)
	}
	if n := srv.mcp.Stats().Open; n > 2 {
		t.Fatalf("%d sessions open, the bound is 2", n)
	}

	// Sessions with their stream open are in use: not given up.
	a, b := mcpOpen(t, ts), mcpOpen(t, ts)
	mcpStream(t, srv, ts, a)
	mcpStream(t, srv, ts, b)
	r = do(t, ts, "POST", "/v1/mcp", mcpInit, mcpAccept...)
	wantStatus(t, r, http.StatusTooManyRequests)
	if _, dc, msg := mcpRPCError(t, r); dc != "too_many_sessions" || !strings.Contains(msg, "in progress") {
		t.Fatalf("every session streaming: %s", r.body)
	}
}

// A session with nothing in flight and no stream closes after the short
// idle time; one with its stream open outlives it.
func TestMCPSessionsWithoutAStreamIdleShort(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{MCPSessionIdleNoStream: 3 * time.Second}, testRegistry())
	streamed := mcpOpen(t, ts)
	mcpStream(t, srv, ts, streamed)
	idle := mcpOpen(t, ts)
	testutil.Eventually(t, 10*time.Second, func() error {
		if _, open := srv.mcp.Stats().InFlight[idle]; open {
			return fmt.Errorf("the idle session is still open")
		}
		return nil
	})
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	wantStatus(t, do(t, ts, "POST", "/v1/mcp", ping, append([]string{"Mcp-Session-Id", idle}, mcpAccept...)...), http.StatusNotFound)
	wantStatus(t, do(t, ts, "POST", "/v1/mcp", ping, append([]string{"Mcp-Session-Id", streamed}, mcpAccept...)...), http.StatusOK)
}

// Tool arguments that do not fit the advertised input schema are a tool
// error naming each field, and start no run.
func TestMCPArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"counter","sample_input":{"text":"hi","n":3,"opts":{"loud":true}},"nodes":[
		{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.text"}}]}`)
	wantStatus(t, exposeChain(t, ts, id, true), http.StatusOK)
	cs, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter", Arguments: map[string]any{"text": 42, "n": "three", "opts": map[string]any{"loud": "yes"}}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "arguments.text") || !strings.Contains(text, "arguments.n") || !strings.Contains(text, "arguments.opts.loud") {
		t.Fatalf("bad arguments answered %v %q", res.IsError, text)
	}
	if runs := do(t, ts, "GET", "/v1/runs?chain_id="+id, nil).json(t)["runs"].([]any); len(runs) != 0 {
		t.Fatalf("bad arguments started %d runs", len(runs))
	}
	// Fitting arguments (and keys the sample does not have) run.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "counter", Arguments: map[string]any{"text": "hey", "n": 4, "extra": []any{1}}})
	if err != nil || res.IsError {
		t.Fatalf("good arguments: %+v %v", res, err)
	}
}

// Every exposed chain is offered, a page of tools at a time; an admin
// exposing one past the bound is told so.
func TestMCPToolsArePaged(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	ctx := context.Background()
	ids := make([]string, 0, mcpserver.MaxTools+1)
	for i := range mcpserver.MaxTools + 1 {
		ids = append(ids, createChain(t, ts, fmt.Sprintf(linearDoc, fmt.Sprintf("chain %03d", i))))
	}
	for _, id := range ids[:mcpserver.MaxTools-1] {
		if err := srv.DB.SetChainMCP(ctx, id, true); err != nil {
			t.Fatal(err)
		}
	}
	wantStatus(t, exposeChain(t, ts, ids[mcpserver.MaxTools-1], true), http.StatusOK) // the 200th
	r := exposeChain(t, ts, ids[mcpserver.MaxTools], true)                            // the 201st
	wantStatus(t, r, http.StatusConflict)
	if e := r.json(t)["error"].(map[string]any); e["code"] != "too_many_mcp_tools" || !strings.Contains(e["message"].(string), "200 chains") {
		t.Fatalf("the 201st: %s", r.body)
	}
	wantStatus(t, exposeChain(t, ts, ids[0], true), http.StatusOK) // exposed already

	cs, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != mcpserver.ToolsPage || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, next cursor %q", len(first.Tools), first.NextCursor)
	}
	seen := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		seen[tool.Name] = true
	}
	if len(seen) != mcpserver.MaxTools || !seen["chain_000"] || !seen["chain_199"] || seen["chain_200"] {
		t.Fatalf("%d tools listed across the pages", len(seen))
	}
}
