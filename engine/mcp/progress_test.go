package mcp

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// burstNotes is how many progress notifications the burst tool sends, all
// at once, right before its result.
const burstNotes = 5

// addBurst adds the tool "burst" to a test server.
func addBurst(srv *sdk.Server) {
	srv.AddTool(&sdk.Tool{Name: "burst", InputSchema: objectSchema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			for i := 1; i <= burstNotes; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: burstNotes, Message: fmt.Sprintf("step %d", i)})
			}
		}
		return textResult("burst done"), nil
	})
}

// checkEveryProgressBeforeResult calls burst a few times with a caller
// that takes its time over each notification (as a run writing an event
// does): each call returns only once it has handed over all of them.
func checkEveryProgressBeforeResult(t *testing.T, m *Manager, server string) {
	t.Helper()
	for call := range 4 {
		var mu sync.Mutex
		var got []string
		ctx := WithProgress(context.Background(), func(p Progress) {
			time.Sleep(5 * time.Millisecond) // a slow consumer, not a wait for something
			mu.Lock()
			got = append(got, p.Message)
			mu.Unlock()
		})
		res, err := m.Call(ctx, ToolID(server, "burst"), nil)
		if err != nil || res.Text != "burst done" {
			t.Fatalf("call %d: %+v %v", call, res, err)
		}
		mu.Lock()
		n, last := len(got), strings.Join(got, ",")
		mu.Unlock()
		if n != burstNotes {
			t.Fatalf("call %d returned having delivered %d of %d progress notifications: %s", call, n, burstNotes, last)
		}
	}
}

func TestEveryProgressBeforeTheResultHTTP(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	addBurst(g.srv)
	ts := g.streamable(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportHTTP, URL: ts.URL})
	waitFor(t, m, available("go", "burst"))
	checkEveryProgressBeforeResult(t, m, "go")
}

func TestEveryProgressBeforeTheResultSSE(t *testing.T) {
	t.Parallel()
	g := newGoServer()
	addBurst(g.srv)
	ts := g.sse(t)
	m := newManager(t, testOptions(), Server{Name: "go", Transport: TransportSSE, URL: ts.URL})
	waitFor(t, m, available("go", "burst"))
	checkEveryProgressBeforeResult(t, m, "go")
}

func TestEveryProgressBeforeTheResultStdio(t *testing.T) {
	t.Parallel()
	srv, opts := selfServer(t)
	m := newManager(t, opts, srv)
	waitFor(t, m, available("self", "burst"))
	checkEveryProgressBeforeResult(t, m, "self")
}

// The sniffer counts progress notifications split across reads, in SSE
// data lines and bare frames, and only for tokens a call holds.
func TestProgressSnifferCounts(t *testing.T) {
	t.Parallel()
	var tb progressTable
	tok := tb.add(func(Progress) {})
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"" + tok + "\",\"progress\":1}}\n\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"" + tok + "\",\"progress\":2}}\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"other\",\"progress\":2}}\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"notifications/progress\"}]}}\n"
	s := &progressSniffer{r: nopCloser{strings.NewReader(stream)}, table: &tb}
	buf := make([]byte, 7) // lines split across reads
	for {
		if _, err := s.Read(buf); err != nil {
			break
		}
	}
	tb.mu.Lock()
	n := tb.pending[tok]
	tb.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d notifications pending, want 2", n)
	}
	tb.report(&sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1})
	tb.report(&sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	tb.drain(ctx, tok) // returns at once: both delivered
	if ctx.Err() != nil {
		t.Fatal("drain waited for delivered notifications")
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
