package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// mcpConnect opens an MCP session on /v1/mcp with the Go SDK's client.
func mcpConnect(t *testing.T, ts *httptest.Server, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/v1/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := c.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func exposeChain(t *testing.T, ts *httptest.Server, id string, on bool, hdr ...string) resp {
	t.Helper()
	return do(t, ts, "PUT", "/v1/chains/"+id+"/mcp", map[string]any{"exposed": on}, hdr...)
}

// An exposed chain is a tool: listed with its description and the schema
// inferred from its sample; a call is a run started by MCP whose output
// comes back with the run's id and page; unexposing takes it off the list
// and the session hears list_changed.
func TestMCPCallIsARun(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"Greet people","description":"Says hello.","sample_input":{"x":"Ada"},"nodes":[
		{"node_id":"a","kind":"tool","name":"echo","input_map":{"x":"input.x"}}]}`)
	other := createChain(t, ts, fmt.Sprintf(linearDoc, "not exposed"))
	_ = other
	r := exposeChain(t, ts, id, true)
	wantStatus(t, r, http.StatusOK)
	if r.json(t)["mcp_exposed"] != true {
		t.Fatalf("PUT answered %s", r.body)
	}
	if g := do(t, ts, "GET", "/v1/chains/"+id, nil).json(t); g["mcp_exposed"] != true {
		t.Fatalf("GET says %v", g["mcp_exposed"])
	}

	var mu sync.Mutex
	changed := 0
	cs, err := mcpConnect(t, ts, "", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		mu.Lock()
		changed++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "Greet_people" || list.Tools[0].Description != "Says hello." {
		t.Fatalf("tools: %+v", list.Tools)
	}
	schema, _ := json.Marshal(list.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"x":{"type":"string"}`) {
		t.Fatalf("schema %s", schema)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Greet_people", Arguments: map[string]any{"x": "Grace"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("call: %+v", res.Content[0])
	}
	sc := res.StructuredContent.(map[string]any)
	runID, _ := sc["run_id"].(string)
	out, _ := json.Marshal(sc["output"])
	if sc["status"] != "completed" || !strings.Contains(string(out), `"x":"Grace"`) || sc["run_url"] != ts.URL+"/runs/"+runID {
		t.Fatalf("structured content %v", sc)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "Grace") || !strings.Contains(text, "/runs/"+runID) {
		t.Fatalf("text %q", text)
	}
	run := do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)
	if run["started_by"] != "mcp" || run["trigger_id"] != "local" || run["status"] != "completed" {
		t.Fatalf("run %v %v %v", run["started_by"], run["trigger_id"], run["status"])
	}

	wantStatus(t, exposeChain(t, ts, id, false), http.StatusOK)
	testutil.Eventually(t, 5*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if changed == 0 {
			return fmt.Errorf("no tools/list_changed yet")
		}
		return nil
	})
	if list, err := cs.ListTools(ctx, nil); err != nil || len(list.Tools) != 0 {
		t.Fatalf("after unexposing: %+v %v", list, err)
	}
	// A call of a tool no longer listed is refused (the SDK: unknown tool).
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "Greet_people"}); err == nil && !res.IsError {
		t.Fatalf("a call of an unexposed chain ran: %+v", res)
	}
	_ = srv
}

// An exposure changed by another process of a cluster (here: straight in
// the store, which this process's hub does not hear of) reaches clients
// within mcpserver.SyncEvery, through the next list.
func TestMCPSeesOtherProcessesChanges(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServer(t)
	id := createChain(t, ts, fmt.Sprintf(linearDoc, "elsewhere"))
	cs, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if list, err := cs.ListTools(ctx, nil); err != nil || len(list.Tools) != 0 {
		t.Fatalf("before: %+v %v", list, err)
	}
	if err := srv.DB.SetChainMCP(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*mcpserver.SyncEvery, func() error {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			return err
		}
		if len(list.Tools) != 1 {
			return fmt.Errorf("%d tools", len(list.Tools))
		}
		return nil
	})
}

// A failed run is an error result with the run's message.
func TestMCPFailedRunIsAnError(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"fails","nodes":[{"node_id":"f","kind":"tool","name":"fail","input":{"message":"boom here"}}]}`)
	wantStatus(t, exposeChain(t, ts, id, true), http.StatusOK)
	cs, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fails"})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "failed") || !strings.Contains(text, "/runs/") {
		t.Fatalf("result %v %q", res.IsError, text)
	}
}

// Only an admin exposes; a viewer may not use /v1/mcp (403, a JSON-RPC
// error naming the roles); an editor may; a session is its opener's.
func TestMCPRoles(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: "admin-token-0123456789"}, testRegistry())
	toks := roleTokens(t, srv)
	admin := []string{"Authorization", "Bearer admin-token-0123456789"}
	cr := do(t, ts, "POST", "/v1/chains", fmt.Sprintf(linearDoc, "roles"), admin...)
	wantStatus(t, cr, http.StatusCreated)
	id := cr.json(t)["id"].(string)
	r := exposeChain(t, ts, id, true, toks[store.RoleEditor]...)
	wantStatus(t, r, http.StatusForbidden)
	wantStatus(t, exposeChain(t, ts, id, true, admin...), http.StatusOK)
	wantStatus(t, exposeChain(t, ts, "nope", true, admin...), http.StatusNotFound)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"/mcp", `{}`, admin...), http.StatusBadRequest)
	wantStatus(t, do(t, ts, "PUT", "/v1/chains/"+id+"/mcp", `{"exposed":"yes"}`, admin...), http.StatusBadRequest)

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	v := do(t, ts, "POST", "/v1/mcp", init, append([]string{"Accept", "application/json, text/event-stream"}, toks[store.RoleViewer]...)...)
	wantStatus(t, v, http.StatusForbidden)
	var e struct {
		JSONRPC string `json:"jsonrpc"`
		Error   struct {
			Code    int                   `json:"code"`
			Message string                `json:"message"`
			Data    struct{ Code string } `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(v.body, &e); err != nil || e.JSONRPC != "2.0" || e.Error.Data.Code != "role_required" || !strings.Contains(e.Error.Message, "editor or publisher or admin") {
		t.Fatalf("viewer refused with %s", v.body)
	}
	if _, err := mcpConnect(t, ts, "tok-viewer-0123456789abcdef", nil); err == nil {
		t.Fatal("a viewer connected")
	}
	if _, err := mcpConnect(t, ts, "", nil); err == nil {
		t.Fatal("no token connected")
	}
	cs, err := mcpConnect(t, ts, "tok-editor-0123456789abcdef", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "roles", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError {
		t.Fatalf("editor's call: %+v %v", res, err)
	}
	runID := res.StructuredContent.(map[string]any)["run_id"].(string)
	if run := do(t, ts, "GET", "/v1/runs/"+runID, nil, admin...).json(t); run["trigger_id"] != "editor1" || run["started_by"] != "mcp" {
		t.Fatalf("run started by %v %v", run["started_by"], run["trigger_id"])
	}
	// Someone else presenting the editor's session id is refused.
	other := do(t, ts, "POST", "/v1/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		append([]string{"Accept", "application/json, text/event-stream", "Mcp-Session-Id", cs.ID(), "Mcp-Protocol-Version", "2025-06-18"}, toks[store.RoleAdmin]...)...)
	wantStatus(t, other, http.StatusForbidden)
	if !strings.Contains(string(other.body), "mcp_session_owner") {
		t.Fatalf("hijack refused with %s", other.body)
	}
}

// Sessions are bounded in all and per caller; a closed one frees its room.
func TestMCPSessionBounds(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: "admin-token-0123456789", MCPMaxSessions: 3, MCPMaxSessionsPerUser: 2}, testRegistry())
	toks := roleTokens(t, srv)
	_ = toks
	// settled waits until no session is being opened (a client has its
	// session's id while the server may still be answering its initialize)
	// and each client's stream is open: a session with nothing in flight
	// would be given up for its caller's next one.
	settled := func() {
		testutil.Eventually(t, 5*time.Second, func() error {
			st := srv.mcp.Stats()
			if st.Opening > 0 {
				return fmt.Errorf("sessions still opening: %d", st.Opening)
			}
			for sid, busy := range st.InFlight {
				if busy == 0 {
					return fmt.Errorf("session %s has no stream yet", sid)
				}
			}
			return nil
		})
	}
	a1, err := mcpConnect(t, ts, "tok-editor-0123456789abcdef", nil)
	if err != nil {
		t.Fatal(err)
	}
	settled()
	if _, err := mcpConnect(t, ts, "tok-editor-0123456789abcdef", nil); err != nil {
		t.Fatal(err)
	}
	settled()
	if _, err := mcpConnect(t, ts, "tok-editor-0123456789abcdef", nil); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Fatalf("third session of one caller: %v", err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	r := do(t, ts, "POST", "/v1/mcp", init, "Accept", "application/json, text/event-stream", "Authorization", "Bearer tok-editor-0123456789abcdef")
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "limit per caller") || !strings.Contains(string(r.body), `"per":"user"`) {
		t.Fatalf("third session of one caller: %d %s", r.status, r.body)
	}
	if _, err := mcpConnect(t, ts, "tok-admin-0123456789abcdef", nil); err != nil {
		t.Fatal(err)
	}
	r = do(t, ts, "POST", "/v1/mcp", init, "Accept", "application/json, text/event-stream", "Authorization", "Bearer admin-token-0123456789")
	if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), "3 MCP sessions are open") {
		t.Fatalf("fourth session: %d %s", r.status, r.body)
	}
	if err := a1.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := srv.mcp.Stats().Open; n != 2 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	})
	if _, err := mcpConnect(t, ts, "admin-token-0123456789", nil); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	// A body over the bound is refused before it is read whole.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", mcpserver.BodyLimit) + `"}}`
	r = do(t, ts, "POST", "/v1/mcp", big, "Accept", "application/json, text/event-stream", "Authorization", "Bearer admin-token-0123456789")
	if r.status != http.StatusRequestEntityTooLarge && r.status != http.StatusTooManyRequests {
		t.Fatalf("big body: %d %.200s", r.status, r.body)
	}
}

// Idle sessions close after the idle time.
func TestMCPSessionIdle(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{MCPSessionIdle: time.Second}, testRegistry())
	if _, err := mcpConnect(t, ts, "", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() error {
		if n := srv.mcp.Stats().Open; n != 0 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	})
}

// Progress notifications come as nodes finish; cancelling the call cancels
// the run.
func TestMCPProgressAndCancel(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, `{"name":"slowly","nodes":[
		{"node_id":"a","kind":"tool","name":"echo"},
		{"node_id":"wait","kind":"tool","name":"delay","input":{"ms":30000}}],
		"edges":[{"source":"a","target":"wait"}]}`)
	wantStatus(t, exposeChain(t, ts, id, true), http.StatusOK)
	progress := make(chan string, 16)
	cs, err := mcpConnect(t, ts, "", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		progress <- r.Params.Message
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "slowly"}
		p.SetProgressToken("tok-1")
		_, err := cs.CallTool(ctx, p)
		done <- err
	}()
	select {
	case m := <-progress:
		if m != "node a: done" {
			t.Fatalf("progress %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification")
	}
	var runID string
	testutil.Eventually(t, 5*time.Second, func() error {
		runs := do(t, ts, "GET", "/v1/runs?chain_id="+id, nil).json(t)["runs"].([]any)
		if len(runs) != 1 {
			return fmt.Errorf("%d runs", len(runs))
		}
		runID = runs[0].(map[string]any)["id"].(string)
		return nil
	})
	cancel() // the SDK sends notifications/cancelled
	if err := <-done; err == nil {
		t.Fatal("a cancelled call answered")
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := do(t, ts, "GET", "/v1/runs/"+runID, nil).json(t)["status"]; st != string(chain.StatusCancelled) {
			return fmt.Errorf("run %v", st)
		}
		return nil
	})
}

// A pause answers with the pause and its page; an admin's client that can
// be asked (elicitation) answers it and the call ends with the output.
func TestMCPPause(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	id := createChain(t, ts, approvalDoc)
	wantStatus(t, exposeChain(t, ts, id, true), http.StatusOK)
	ctx := context.Background()

	plain, err := mcpConnect(t, ts, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: "approval", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	sc := res.StructuredContent.(map[string]any)
	text := res.Content[0].(*mcp.TextContent).Text
	if sc["status"] != "paused" || !strings.Contains(text, "ok?") || !strings.Contains(text, "/runs/") {
		t.Fatalf("paused answer %v %q", sc, text)
	}

	var asked string
	ask, err := mcpConnect(t, ts, "", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = r.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "approve", "comment": "fine"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = ask.CallTool(ctx, &mcp.CallToolParams{Name: "approval", Arguments: map[string]any{"x": 2}})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	sc = res.StructuredContent.(map[string]any)
	if sc["status"] != "completed" || !strings.Contains(asked, "ok?") {
		t.Fatalf("answered: %v, asked %q", sc, asked)
	}
}
