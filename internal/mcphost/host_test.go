package mcphost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
)

// memStore is the part of a backend the host reads, in memory (the real
// backends pass the same contract in store/storetest).
type memStore struct {
	mu   sync.Mutex
	recs map[string]store.MCPServer
}

func (m *memStore) AddMCPServer(_ context.Context, s *store.MCPServer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[s.Name] = *s
	return nil
}
func (m *memStore) UpdateMCPServer(ctx context.Context, s *store.MCPServer) error {
	return m.AddMCPServer(ctx, s)
}
func (m *memStore) GetMCPServer(_ context.Context, name string) (*store.MCPServer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.recs[name]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &s, nil
}
func (m *memStore) ListMCPServers(context.Context) ([]store.MCPServer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.MCPServer
	for _, s := range m.recs {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b store.MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
func (m *memStore) RemoveMCPServer(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, name)
	return nil
}

type creds map[string]*tool.Secret

func (c creds) Credential(_ context.Context, name string) (*tool.Secret, error) {
	if s, ok := c[name]; ok {
		return s, nil
	}
	return nil, store.Errorf(store.ENOTFOUND, "credential %q does not exist", name)
}

// authServer is a Go SDK server behind a bearer check, on loopback.
func authServer(t *testing.T, token string) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "auth-test", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"say":{"type":"string"}},"required":["say"]}`)
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "says it back", InputSchema: schema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(args["say"])}}}, nil
	})
	srv.AddTool(&sdk.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-Tenant") != "acme" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// An MCP server's credential goes only to its allowed hosts: a server whose
// URL is elsewhere is unavailable with a reason that names the credential
// and the host, and a server that redirects to another host gets no
// request there.
func TestMCPCredentialOnlyToAllowedHosts(t *testing.T) {
	t.Parallel()
	var stolen atomic.Int32
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(attacker.Close)
	attackerURL := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1)
	bouncer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, attackerURL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(bouncer.Close)
	db := &memStore{recs: map[string]store.MCPServer{
		"direct":  {Name: "direct", Transport: "http", URL: attackerURL + "/mcp", Credential: "tok", Enabled: true},
		"bounced": {Name: "bounced", Transport: "http", URL: bouncer.URL + "/mcp", Credential: "tok", Enabled: true},
	}}
	c := creds{"tok": {Name: "tok", Type: credential.Bearer, Hosts: []string{"127.0.0.1"}, Values: map[string]any{"token": "s3cret-mcp"}}}
	h := newHost(t, db, c)
	st := waitState(t, h, "direct", mcp.StateUnavailable)
	if !strings.Contains(st.Reason, `credential "tok" may not be sent to localhost:`) {
		t.Fatalf("reason %q", st.Reason)
	}
	st = waitState(t, h, "bounced", mcp.StateUnavailable)
	if !strings.Contains(st.Reason, `credential "tok"`) {
		t.Fatalf("reason %q", st.Reason)
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the host not on the list got %d requests", n)
	}
}

func newHost(t *testing.T, db *memStore, c tool.Credentials, allow ...string) *Host {
	t.Helper()
	h, err := New(context.Background(), Options{Store: db, Credentials: c, AllowPrivate: true,
		AllowCommand: allow, RefuseEnv: builtin.LoaderEnv, Poll: -1, Limits: mcp.Options{RetryDelay: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func waitState(t *testing.T, h *Host, name, state string) Status {
	t.Helper()
	var st Status
	testutil.Eventually(t, 10*time.Second, func() error {
		var ok bool
		if st, ok = h.StatusOf(name); !ok || st.State != state {
			return fmt.Errorf("server %s: %+v, want %s", name, st, state)
		}
		return nil
	})
	return st
}

func TestHTTPServerWithACredentialServesItsToolsToTheEngine(t *testing.T) {
	t.Parallel()
	ts := authServer(t, "s3cret")
	db := &memStore{recs: map[string]store.MCPServer{
		"docs": {Name: "docs", Transport: "http", URL: ts.URL, Headers: map[string]string{"X-Tenant": "acme"}, Credential: "docs-token", Enabled: true},
	}}
	c := creds{"docs-token": {Name: "docs-token", Type: credential.Bearer, Hosts: []string{"127.0.0.1"}, Values: map[string]any{"token": "s3cret"}}}
	h := newHost(t, db, c)
	st := waitState(t, h, "docs", mcp.StateAvailable)
	if st.Tools != 2 || st.ServerInfo == "" {
		t.Fatalf("status %+v", st)
	}

	reg := engine.NewRegistry()
	reg.AddSource(mcp.IDPrefix, h)
	if in, ok := reg.InputSchema("mcp:docs/echo"); !ok || in["required"] == nil {
		t.Fatalf("input schema %v", in)
	}
	if reg.Description("mcp:docs/echo") != "says it back" || reg.Has("mcp:docs/nope") || reg.Has("mcp:other/echo") {
		t.Fatal("the registry does not follow the catalog")
	}
	e := engine.New(engine.Options{Registry: reg})
	doc, _ := chain.Decode([]byte(`{"name":"c","nodes":[{"node_id":"a","kind":"tool","name":"mcp:docs/echo","input":{"say":"hello"}},{"node_id":"b","kind":"tool","name":"mcp:docs/fail","input":{}}],"edges":[{"source":"a","target":"b"}]}`), chain.Limits{})
	res, err := e.Run(context.Background(), enginetest.PlanOf(e, doc), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res.Outputs["a"])
	if string(out) != `{"content":[{"text":"hello","type":"text"}],"structured":null,"text":"hello"}` {
		t.Errorf("a's output %s", out)
	}
	if res.Status != chain.StatusFailed || res.Error == nil || !strings.Contains(res.Error.Message, "disk on fire") {
		t.Errorf("run %s %+v", res.Status, res.Error)
	}

	// A wrong credential makes the server unavailable (after a reload:
	// the credential's values are part of what the host connected with).
	c["docs-token"] = &tool.Secret{Name: "docs-token", Type: credential.Bearer, Hosts: []string{"127.0.0.1"}, Values: map[string]any{"token": "wrong"}}
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = waitState(t, h, "docs", mcp.StateUnavailable)
	if tt, ok := reg.Sourced("mcp:docs/echo"); !ok || !strings.Contains(tt.Unavailable, "unavailable") {
		t.Fatalf("a tool of a down server: %+v %v", tt, ok)
	}
	if _, err := h.Call(context.Background(), "mcp:docs/echo", map[string]any{"say": "x"}, nil); err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("call to a down server: %v", err)
	}
}

func TestStdioCommandsComeFromTheAllowList(t *testing.T) {
	t.Parallel()
	db := &memStore{recs: map[string]store.MCPServer{}}
	h := newHost(t, db, nil)
	rec := store.MCPServer{Name: "sh", Transport: "stdio", Command: "sh", Args: []string{"-c", "exit 1"}, Enabled: true}
	err := h.Check(&rec)
	if store.ErrorCode(err) != store.EINVALID || !strings.Contains(err.Error(), mcp.AllowCommandFlag) {
		t.Fatalf("check: %v", err)
	}
	// Registered by a process that allows it, read by one that does not:
	// refused when connecting too, with the same reason.
	db.recs["sh"] = rec
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, _ := h.StatusOf("sh")
	if st.State != mcp.StateUnavailable || !strings.Contains(st.Reason, mcp.AllowCommandFlag) {
		t.Fatalf("status %+v", st)
	}
	if tt, ok := h.Tool("mcp:sh/anything"); !ok || !strings.Contains(tt.Unavailable, mcp.AllowCommandFlag) {
		t.Fatalf("tool %+v %v", tt, ok)
	}
}

func TestDisabledMissingAndRemovedServers(t *testing.T) {
	t.Parallel()
	ts := authServer(t, "t")
	db := &memStore{recs: map[string]store.MCPServer{
		"off":  {Name: "off", Transport: "http", URL: ts.URL, Enabled: false},
		"nocr": {Name: "nocr", Transport: "http", URL: ts.URL, Credential: "absent", Enabled: true},
	}}
	h := newHost(t, db, creds{})
	if st, _ := h.StatusOf("off"); st.State != StateDisabled {
		t.Fatalf("off: %+v", st)
	}
	if tt, ok := h.Tool("mcp:off/echo"); !ok || !strings.Contains(tt.Unavailable, "disabled") {
		t.Fatalf("tool of a disabled server: %+v", tt)
	}
	if st, _ := h.StatusOf("nocr"); st.State != mcp.StateUnavailable || !strings.Contains(st.Reason, `"absent" does not exist`) {
		t.Fatalf("nocr: %+v", st)
	}
	if _, ok := h.Tool("mcp:ghost/echo"); ok {
		t.Fatal("a server nobody registered is known")
	}
	delete(db.recs, "off")
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Tool("mcp:off/echo"); ok {
		t.Fatal("a removed server is still known")
	}
	if got := len(h.Statuses()); got != 1 {
		t.Fatalf("%d statuses", got)
	}
	// A bad credential type is named.
	db.recs["model"] = store.MCPServer{Name: "model", Transport: "http", URL: ts.URL, Credential: "oa", Enabled: true}
	h.opts.Credentials = creds{"oa": {Name: "oa", Type: credential.OpenAI, Values: map[string]any{"api_key": "k"}}}
	if err := h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.StatusOf("model"); !strings.Contains(st.Reason, "cannot carry") {
		t.Fatalf("model: %+v", st)
	}
}
