package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the stdio server of the stdio tests: re-executed
// with stdioServerEnv set, it serves instead of testing.
const stdioServerEnv = "CS_MCP_TEST_STDIO_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(stdioServerEnv) == "hang" { // a server that never answers and ignores stdin's end
		_ = os.WriteFile(os.Getenv("PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		// Wait for a signal nobody sends: the client kills the process
		// group (a waiting signal.Notify also keeps the runtime from
		// calling this a deadlock).
		never := make(chan os.Signal, 1)
		signal.Notify(never, os.Interrupt)
		<-never
		os.Exit(0)
	}
	if os.Getenv(stdioServerEnv) == "1" {
		srv := sdk.NewServer(&sdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
		srv.AddTool(&sdk.Tool{Name: "env", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(strings.Join(os.Environ(), "\n")), nil
		})
		srv.AddTool(&sdk.Tool{Name: "pid", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(strconv.Itoa(os.Getpid())), nil
		})
		srv.AddTool(&sdk.Tool{Name: "big", InputSchema: objectSchema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Bytes int }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return textResult(strings.Repeat("b", args.Bytes)), nil
		})
		addBurst(srv)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// testOptions are quick limits for loopback servers.
func testOptions() Options {
	return Options{HTTPClient: &http.Client{}, ConnectTimeout: 5 * time.Second, ListTimeout: 5 * time.Second, RetryDelay: 20 * time.Millisecond}
}

func newManager(t *testing.T, opts Options, servers ...Server) *Manager {
	t.Helper()
	m, err := NewManager(servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// waitFor waits on the Manager's change channel until cond holds for the
// catalog, failing with cond's last complaint.
func waitFor(t *testing.T, m *Manager, cond func(Catalog) error) Catalog {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		ch := m.Changed()
		c := m.Tools()
		err := cond(c)
		if err == nil {
			return c
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("catalog never got there: %v\n%+v", err, c.Servers)
		}
	}
}

func available(name string, tools ...string) func(Catalog) error {
	return func(c Catalog) error {
		for _, s := range c.Servers {
			if s.Name == name && s.State != StateAvailable {
				return fmt.Errorf("server %s is %s (%s)", name, s.State, s.Reason)
			}
		}
		for _, want := range tools {
			if !hasTool(c, ToolID(name, want)) {
				return fmt.Errorf("no tool %s", ToolID(name, want))
			}
		}
		return nil
	}
}

func unavailable(name, reasonPart string) func(Catalog) error {
	return func(c Catalog) error {
		for _, s := range c.Servers {
			if s.Name == name {
				if s.State != StateUnavailable || !strings.Contains(s.Reason, reasonPart) {
					return fmt.Errorf("server %s is %s (%q), want unavailable with %q", name, s.State, s.Reason, reasonPart)
				}
				return nil
			}
		}
		return fmt.Errorf("no server %s", name)
	}
}

func hasTool(c Catalog, id string) bool {
	for _, tl := range c.Tools {
		if tl.ID == id {
			return true
		}
	}
	return false
}

func status(c Catalog, name string) ServerStatus {
	for _, s := range c.Servers {
		if s.Name == name {
			return s
		}
	}
	return ServerStatus{}
}

// goServer is an SDK server with the tools most tests call. block's handler
// sends its context's error on cancelled once the client gives up.
type goServer struct {
	srv       *sdk.Server
	cancelled chan error
	started   chan struct{}
	notified  chan string   // notifications/cancelled's request ids, as the server received them
	release   chan struct{} // lets progress return once its notification arrived
}

func newGoServer() *goServer {
	g := &goServer{srv: sdk.NewServer(&sdk.Implementation{Name: "go-test", Version: "1.2"}, nil), cancelled: make(chan error, 1), started: make(chan struct{}, 1), notified: make(chan string, 4), release: make(chan struct{})}
	g.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/cancelled" {
				if p, ok := req.GetParams().(*sdk.CancelledParams); ok {
					g.notified <- fmt.Sprint(p.RequestID)
				}
			}
			return next(ctx, method, req)
		}
	})
	g.srv.AddTool(&sdk.Tool{Name: "echo", Description: "echoes", InputSchema: objectSchema}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &sdk.CallToolResult{
			Content: []sdk.Content{
				&sdk.TextContent{Text: fmt.Sprint(args["say"])},
				&sdk.TextContent{Text: "second"},
				&sdk.ImageContent{Data: []byte("12345"), MIMEType: "image/png"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "body"}},
			},
			StructuredContent: map[string]any{"said": args["say"]},
		}, nil
	})
	g.srv.AddTool(&sdk.Tool{Name: "fail", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk on fire"}}}, nil
	})
	g.srv.AddTool(&sdk.Tool{Name: "block", InputSchema: objectSchema}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		g.started <- struct{}{}
		<-ctx.Done()
		g.cancelled <- ctx.Err()
		return nil, ctx.Err()
	})
	g.srv.AddTool(&sdk.Tool{Name: "progress", InputSchema: objectSchema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half way"})
			<-g.release
		}
		return textResult("done"), nil
	})
	return g
}

func (g *goServer) streamable(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func (g *goServer) sse(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return g.srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func checkEchoAndFail(t *testing.T, m *Manager, name string) {
	t.Helper()
	res, err := m.Call(context.Background(), ToolID(name, "echo"), map[string]any{"say": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "hi\nsecond" {
		t.Errorf("text = %q", res.Text)
	}
	if got, _ := json.Marshal(res.Structured); string(got) != `{"said":"hi"}` {
		t.Errorf("structured = %s", got)
	}
	got, _ := json.Marshal(res.Content)
	want := `[{"type":"text","text":"hi"},{"type":"text","text":"second"},{"type":"image","mime_type":"image/png","bytes":5},{"type":"resource","text":"body","mime_type":"text/plain","uri":"file:///a.txt"}]`
	if string(got) != want {
		t.Errorf("content = %s\nwant      %s", got, want)
	}
	if v := res.Value(); v["text"] != "hi\nsecond" {
		t.Errorf("Value() = %v", v)
	}
	_, err = m.Call(context.Background(), ToolID(name, "fail"), nil)
	var te *ToolError
	if !errors.As(err, &te) || te.Text != "disk on fire" {
		t.Errorf("fail: err = %v, want a ToolError with the server's text", err)
	}
	if _, err := m.Call(context.Background(), ToolID(name, "nope"), nil); err == nil || !strings.Contains(err.Error(), "lists no tool") {
		t.Errorf("unknown tool: err = %v", err)
	}
}

func TestStreamableHTTPServer(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	c := waitFor(t, m, available("go", "echo", "fail", "block"))
	st := status(c, "go")
	if st.Transport != TransportHTTP || st.ServerInfo != "go-test 1.2" || st.Tools != 4 {
		t.Errorf("status = %+v", st)
	}
	checkEchoAndFail(t, m, "go")
}

func TestSSEServer(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.sse(t)
	m := newManager(t, testOptions(), Server{Name: "old", Transport: TransportSSE, URL: ts.URL})
	waitFor(t, m, available("old", "echo"))
	checkEchoAndFail(t, m, "old")
}

func TestHTTPFallsBackToSSE(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.sse(t)
	m := newManager(t, testOptions(), Server{Name: "old", Transport: TransportHTTP, URL: ts.URL})
	c := waitFor(t, m, available("old", "echo"))
	if tr := status(c, "old").Transport; tr != TransportSSE {
		t.Errorf("transport = %q, want sse after the fallback", tr)
	}
	checkEchoAndFail(t, m, "old")
}

func TestHeadersReachTheServer(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return g.srv }, nil)
	var mu sync.Mutex
	var bad []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			mu.Lock()
			bad = append(bad, r.Method)
			mu.Unlock()
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	m := newManager(t, testOptions(), Server{Name: "auth", Transport: TransportHTTP, URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	waitFor(t, m, available("auth", "echo"))
	if _, err := m.Call(context.Background(), ToolID("auth", "echo"), nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("requests without the header: %v", bad)
	}
}

func TestToolListChangedRelists(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "echo"))
	g.srv.AddTool(&sdk.Tool{Name: "later", InputSchema: objectSchema}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("late"), nil
	})
	waitFor(t, m, available("go", "later"))
	g.srv.RemoveTools("echo")
	waitFor(t, m, func(c Catalog) error {
		if hasTool(c, ToolID("go", "echo")) {
			return errors.New("echo is still listed")
		}
		return nil
	})
}

func TestCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "block"))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.Call(ctx, ToolID("go", "block"), nil)
		errc <- err
	}()
	<-g.started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Call: err = %v, want context.Canceled", err)
	}
	select {
	case err := <-g.cancelled:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("server's ctx ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler never saw its context end")
	}
	select {
	case id := <-g.notified:
		t.Logf("notifications/cancelled for request %s", id)
	case <-time.After(10 * time.Second):
		t.Fatal("the server never received notifications/cancelled")
	}
}

func TestDeadlineReachesTheServer(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "block"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := m.Call(ctx, ToolID("go", "block"), nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call: err = %v, want context.DeadlineExceeded", err)
	}
	select {
	case <-g.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler never saw its context end")
	}
	select {
	case <-g.notified:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never received notifications/cancelled")
	}
}

func TestProgressReachesTheCaller(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "progress"))
	got := make(chan Progress, 1)
	ctx := WithProgress(context.Background(), func(p Progress) { got <- p })
	errc := make(chan error, 1)
	go func() {
		res, err := m.Call(ctx, ToolID("go", "progress"), nil)
		if err == nil && res.Text != "done" {
			err = fmt.Errorf("text = %q", res.Text)
		}
		errc <- err
	}()
	select {
	case p := <-got:
		if p != (Progress{Progress: 1, Total: 2, Message: "half way"}) {
			t.Errorf("progress = %+v", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress arrived")
	}
	close(g.release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	// Without WithProgress the call asks for none.
	if res, err := m.Call(context.Background(), ToolID("go", "progress"), nil); err != nil || res.Text != "done" {
		t.Fatalf("%+v, %v", res, err)
	}
}
