package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stub is an MCP server written by hand over plain net/http, answering each
// POST with one JSON body, so that tests can make it misbehave in ways the
// SDK's server never would.
type stub struct {
	initialize func(w http.ResponseWriter, id json.RawMessage) // nil: a proper answer
	list       func(cursor string) any                         // the tools/list result
	call       func(w http.ResponseWriter, id json.RawMessage)
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func result(id json.RawMessage, res any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": res}
}

func (s *stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "no stream here", http.StatusMethodNotAllowed)
		return
	}
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == nil { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch req.Method {
	case "initialize":
		if s.initialize != nil {
			s.initialize(w, req.ID)
			return
		}
		writeJSON(w, result(req.ID, map[string]any{
			"protocolVersion": protocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "stub", "version": "0"},
		}))
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &p)
		list := s.list
		if list == nil {
			list = func(string) any { return map[string]any{"tools": []any{tool("big")}} }
		}
		writeJSON(w, result(req.ID, list(p.Cursor)))
	case "tools/call":
		s.call(w, req.ID)
	default:
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no such method"}})
	}
}

func tool(name string) map[string]any {
	return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
}

func startStub(t *testing.T, s http.Handler) string {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestHugeResultFailsNamingTheLimit(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1<<20 + 10<<10, 8 << 20} { // within the transport's slack, and far past it
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			url := startStub(t, &stub{call: func(w http.ResponseWriter, id json.RawMessage) {
				writeJSON(w, result(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", size)}}}))
			}})
			m := newManager(t, testOptions(), Server{Name: "huge", Transport: TransportHTTP, URL: url})
			waitFor(t, m, available("huge", "big"))
			_, err := m.Call(context.Background(), ToolID("huge", "big"), nil)
			var le *LimitError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), "MaxResultBytes") || le.Max != DefaultMaxResultBytes {
				t.Fatalf("err = %v, want a LimitError naming MaxResultBytes", err)
			}
			// A result past the transport's bound breaks the connection; the
			// server comes back.
			waitFor(t, m, available("huge", "big"))
		})
	}
}

// Not parallel: the catalog is read "at once" while a 300ms connect timeout
// runs, so it runs where no other test competes for the CPU.
func TestServerThatNeverAnswers(t *testing.T) {
	hang := make(chan struct{})
	url := startStub(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	t.Cleanup(func() { close(hang) }) // before the server's Close, which waits for handlers
	opts := testOptions()
	opts.ConnectTimeout = 300 * time.Millisecond
	opts.RetryDelay = time.Hour // one attempt is enough to see
	m := newManager(t, opts, Server{Name: "dead", Transport: TransportHTTP, URL: url})

	c := m.Tools() // at once, while the handshake hangs
	if st := status(c, "dead"); st.State != StateConnecting {
		t.Errorf("state = %q, want connecting", st.State)
	}
	c = waitFor(t, m, unavailable("dead", "timeout"))
	if r := status(c, "dead").Reason; !strings.Contains(r, "within 300ms") {
		t.Errorf("reason = %q", r)
	}
	if _, err := m.Call(context.Background(), ToolID("dead", "x"), nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Call: err = %v, want ErrUnavailable", err)
	}
}

func TestCallThatNeverAnswersEndsWithItsContext(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	url := startStub(t, &stub{call: func(w http.ResponseWriter, id json.RawMessage) { <-hang }})
	t.Cleanup(func() { close(hang) })
	m := newManager(t, testOptions(), Server{Name: "slow", Transport: TransportHTTP, URL: url})
	waitFor(t, m, available("slow", "big"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := m.Call(ctx, ToolID("slow", "big"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
	if st := status(m.Tools(), "slow"); st.State != StateAvailable {
		t.Errorf("a slow call made the server %s", st.State)
	}
}

func TestMalformedJSONRPC(t *testing.T) {
	t.Parallel()
	cases := map[string]*stub{
		"not JSON": {initialize: func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc": "2.0", "id": 1, "result": {`)
		}},
		"wrong shape": {initialize: func(w http.ResponseWriter, id json.RawMessage) {
			writeJSON(w, result(id, map[string]any{"protocolVersion": 7}))
		}},
		"unknown version": {initialize: func(w http.ResponseWriter, id json.RawMessage) {
			writeJSON(w, result(id, map[string]any{"protocolVersion": "1999-01-01", "capabilities": map[string]any{}}))
		}},
		"tools not a list": {list: func(string) any { return map[string]any{"tools": "many"} }},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			opts := testOptions()
			opts.RetryDelay = time.Hour
			m := newManager(t, opts, Server{Name: "bad", Transport: TransportHTTP, URL: startStub(t, s)})
			c := waitFor(t, m, unavailable("bad", ""))
			t.Logf("reason: %s", status(c, "bad").Reason)
			if r := status(c, "bad").Reason; !strings.HasPrefix(r, "protocol error") {
				t.Errorf("reason = %q", r)
			}
		})
	}
}

func TestRPCErrorCarriesTheServersCodeAndMessage(t *testing.T) {
	t.Parallel()
	url := startStub(t, &stub{call: func(w http.ResponseWriter, id json.RawMessage) {
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": "argument q is required"}})
	}})
	m := newManager(t, testOptions(), Server{Name: "strict", Transport: TransportHTTP, URL: url})
	waitFor(t, m, available("strict", "big"))
	_, err := m.Call(context.Background(), ToolID("strict", "big"), nil)
	var re *RPCError
	if !errors.As(err, &re) || re.Code != -32602 || re.Message != "argument q is required" {
		t.Fatalf("err = %v, want an RPCError", err)
	}
}

func TestThousandsOfToolsAndGiantSchemasAreBounded(t *testing.T) {
	t.Parallel()
	giant := map[string]any{"type": "object", "description": strings.Repeat("g", 100<<10)}
	url := startStub(t, &stub{list: func(cursor string) any {
		var tools []any
		page := 0
		fmt.Sscan(cursor, &page)
		for i := range 2000 {
			tl := tool(fmt.Sprintf("t%d_%d", page, i))
			if page == 0 && i < 3 {
				tl["inputSchema"] = giant
			}
			tools = append(tools, tl)
		}
		return map[string]any{"tools": tools, "nextCursor": fmt.Sprint(page + 1)} // without end
	}})
	opts := testOptions()
	opts.MaxTools = 300
	m := newManager(t, opts, Server{Name: "many", Transport: TransportHTTP, URL: url})
	c := waitFor(t, m, available("many"))
	st := status(c, "many")
	if st.Tools != 300 || len(c.Tools) != 300 {
		t.Errorf("kept %d tools (%d in the catalog), want MaxTools = 300", st.Tools, len(c.Tools))
	}
	if len(st.Dropped) > maxDropped+1 {
		t.Errorf("%d dropped entries kept, want at most %d", len(st.Dropped), maxDropped+1)
	}
	var schemaDrops, limitNote int
	for _, d := range st.Dropped {
		if strings.Contains(d.Reason, "MaxSchemaBytes") {
			schemaDrops++
		}
		if strings.Contains(d.Reason, "MaxTools") {
			limitNote++
		}
	}
	if schemaDrops != 3 || limitNote != 1 || st.DroppedMore == 0 {
		t.Errorf("dropped = %+v (more: %d), want the 3 giant schemas and one MaxTools note", st.Dropped, st.DroppedMore)
	}
}

func TestListPageOverTheLimitIsRefused(t *testing.T) {
	t.Parallel()
	url := startStub(t, &stub{list: func(string) any {
		return map[string]any{"tools": []any{map[string]any{"name": "x", "inputSchema": map[string]any{"type": "object", "description": strings.Repeat("y", 3<<20)}}}}
	}})
	opts := testOptions()
	opts.MaxListBytes = 2 << 20
	opts.RetryDelay = time.Hour
	m := newManager(t, opts, Server{Name: "fat", Transport: TransportHTTP, URL: url})
	waitFor(t, m, unavailable("fat", "MaxListBytes"))
}

func TestNamesThatLookLikeOtherToolsAreDropped(t *testing.T) {
	t.Parallel()
	names := []string{"ok", "", "a/b", "mcp:other/x", "MCP:x", "__chain__agent", "bell\a", "rtl\u202e", "new\nline", strings.Repeat("n", 200), "ok", "fine-name.v2"}
	url := startStub(t, &stub{list: func(string) any {
		var tools []any
		for _, n := range names {
			tools = append(tools, tool(n))
		}
		return map[string]any{"tools": tools}
	}})
	m := newManager(t, testOptions(), Server{Name: "odd", Transport: TransportHTTP, URL: url})
	c := waitFor(t, m, available("odd", "ok", "fine-name.v2"))
	if len(c.Tools) != 2 {
		t.Errorf("tools = %+v, want ok and fine-name.v2 only", c.Tools)
	}
	st := status(c, "odd")
	if len(st.Dropped) != len(names)-2 {
		t.Errorf("dropped %d, want %d: %+v", len(st.Dropped), len(names)-2, st.Dropped)
	}
	for _, d := range st.Dropped {
		if d.Reason == "" || len(d.Name) > maxToolName+len("…") {
			t.Errorf("dropped %+v: want a reason and a clipped name", d)
		}
		t.Logf("%q: %s", d.Name, d.Reason)
	}
	if _, err := m.Call(context.Background(), ToolID("odd", "__chain__agent"), nil); err == nil || !strings.Contains(err.Error(), "not in the catalog") {
		t.Errorf("calling a dropped tool: err = %v", err)
	}
}

func TestUnreachableServerIsAConnectError(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close() // nothing listens there now
	opts := testOptions()
	opts.RetryDelay = time.Hour
	m := newManager(t, opts, Server{Name: "gone", Transport: TransportHTTP, URL: url})
	waitFor(t, m, unavailable("gone", "connect error"))
}

// refusingTransport stands in for the host's address guard.
type refusingTransport struct{}

func (refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("address %s refused by the guard", r.URL.Host)
}

func TestEveryRequestGoesThroughTheGivenClient(t *testing.T) {
	t.Parallel()
	reached := make(chan string, 8)
	url := startStub(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached <- r.Method }))
	opts := testOptions()
	opts.HTTPClient = &http.Client{Transport: refusingTransport{}}
	opts.RetryDelay = time.Hour
	for _, tr := range []string{TransportHTTP, TransportSSE} {
		m := newManager(t, opts, Server{Name: "guarded", Transport: tr, URL: url, Headers: map[string]string{"Authorization": "Bearer x"}})
		waitFor(t, m, unavailable("guarded", "refused by the guard"))
	}
	select {
	case method := <-reached:
		t.Errorf("a %s request reached the server past the client", method)
	default:
	}
}

func TestHugeResultOnAnEventStreamFailsNamingTheLimit(t *testing.T) {
	t.Parallel()
	url := startStub(t, &stub{call: func(w http.ResponseWriter, id json.RawMessage) {
		b, _ := json.Marshal(result(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", 4<<20)}}}))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", b)
	}})
	m := newManager(t, testOptions(), Server{Name: "huge", Transport: TransportHTTP, URL: url})
	waitFor(t, m, available("huge", "big"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := m.Call(ctx, ToolID("huge", "big"), nil)
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v after %v, want a LimitError", err, time.Since(start))
	}
	t.Logf("failed after %v: %v", time.Since(start), err)
}

func TestListChangedFloodIsListedAtAPace(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "echo"))
	var lists atomic.Int32
	g.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	start := time.Now()
	for i := range 200 {
		g.srv.AddTool(&sdk.Tool{Name: fmt.Sprintf("flood%d", i), InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(""), nil
		})
	}
	waitFor(t, m, available("go", "flood199"))
	if most := int32(time.Since(start)/minRelist) + 2; lists.Load() > most {
		t.Errorf("%d listings in %v, want at most %d", lists.Load(), time.Since(start), most)
	}
}
