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

	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/internal/testutil"
)

// sdkHTTP is the A2E SDK's HTTP transport against a test studio: POST
// {base}/session, then the stream (GET {base}/stream, SSE, data lines joined)
// and sends (POST {base}/send, text/plain). Every message on the stream is
// checked against the SDK's schema of its type.
type sdkHTTP struct {
	t       *testing.T
	ts      *httptest.Server
	sdk     *enginetest.A2ESDK
	session string
	msgs    chan map[string]any
	ended   chan struct{}
}

func openSDKHTTP(t *testing.T, ts *httptest.Server) *sdkHTTP {
	t.Helper()
	r := do(t, ts, "POST", "/v1/a2e/session", nil)
	wantStatus(t, r, 200)
	id, _ := r.json(t)["session_id"].(string)
	if id == "" {
		t.Fatalf("session: %s", r.body)
	}
	return attachSDKHTTP(t, ts, id)
}

// attachSDKHTTP is openSDKHTTP on a session already open: its stream.
func attachSDKHTTP(t *testing.T, ts *httptest.Server, session string) *sdkHTTP {
	t.Helper()
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	h := &sdkHTTP{t: t, ts: ts, sdk: sdk, session: session,
		msgs: make(chan map[string]any, 256), ended: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/a2e/stream", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(HeaderSessionID, h.session)
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	go func() {
		defer close(h.ended)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 4<<20)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "data:"):
				data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			case line == "" && len(data) > 0:
				msg := []byte(strings.Join(data, "\n"))
				data = nil
				if err := sdk.Check(msg); err != nil {
					t.Error(err)
				}
				var m map[string]any
				_ = json.Unmarshal(msg, &m)
				h.msgs <- m
			}
		}
	}()
	return h
}

// send posts one recorded message (placeholders set) and returns its id.
func (h *sdkHTTP) send(name string, set map[string]any) string {
	h.t.Helper()
	b, err := h.sdk.Message(name, set)
	if err != nil {
		h.t.Fatal(err)
	}
	r := do(h.t, h.ts, "POST", "/v1/a2e/send", b, "Content-Type", "text/plain", HeaderSessionID, h.session)
	wantStatus(h.t, r, http.StatusAccepted)
	var env struct{ ID string }
	_ = json.Unmarshal(b, &env)
	return env.ID
}

func (h *sdkHTTP) next() map[string]any {
	h.t.Helper()
	select {
	case m := <-h.msgs:
		return m
	case <-h.ended:
		h.t.Fatal("the stream ended")
	case <-time.After(20 * time.Second):
		h.t.Fatal("no message within 20s")
	}
	return nil
}

// untilResp collects a request's messages up to its chain/resp.
func (h *sdkHTTP) untilResp(reqID string) (events []map[string]any, resp map[string]any) {
	h.t.Helper()
	for {
		m := h.next()
		if m["req_id"] != reqID {
			h.t.Fatalf("message for another request: %v", m)
		}
		if m["type"] == "chain/resp" {
			return events, m
		}
		events = append(events, m)
	}
}

// The SDK's client over HTTP, pointed at http://host/v1/a2e: session, stream,
// then handshake, ping, the recorded chain/req (SDK-shaped nodes, $. paths,
// correlation_id) and shutdown, each answered on the stream; the stream
// ends after shutdown and the session is gone.
func TestA2EHTTPSDKSession(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	h := openSDKHTTP(t, ts)

	hsID := h.send("handshake_req", nil)
	hs := h.next()
	caps, _ := hs["accepted_caps"].([]any)
	if hs["type"] != "handshake/resp" || hs["ok"] != true || hs["req_id"] != hsID || hs["session_id"] != h.session || len(caps) != 1 {
		t.Fatalf("handshake/resp: %v", hs)
	}
	pingID := h.send("ping", nil)
	if p := h.next(); p["type"] != "pong" || p["req_id"] != pingID {
		t.Fatalf("pong: %v", p)
	}
	reqID := h.send("chain_req", map[string]any{"session_id": h.session})
	events, resp := h.untilResp(reqID)
	if resp["success"] != true || resp["chain_id"] != "pipeline" || len(events) != 7 {
		t.Fatalf("chain/resp: %v after %d events", resp, len(events))
	}
	// A resent message (the SDK retries a failed send) does not run twice.
	h.send("chain_req", map[string]any{"session_id": h.session})
	pingID = h.send("ping", nil)
	if p := h.next(); p["type"] != "pong" || p["req_id"] != pingID {
		t.Fatalf("after a resent chain/req: %v", p)
	}

	h.send("shutdown", nil)
	select {
	case <-h.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after shutdown")
	}
	r := do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`, HeaderSessionID, h.session)
	wantStatus(t, r, 404)
	if m := r.json(t); m["type"] != "chain/resp" || m["error"].(map[string]any)["code"] != "unknown_session" {
		t.Fatalf("after shutdown: %s", r.body)
	}
}

// Several chains in flight on one HTTP session, answered by id: the fast
// ones do not wait for the slow one.
func TestA2EHTTPConcurrentRequests(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	h := openSDKHTTP(t, ts)
	doc := func(id, tool string, input map[string]any) map[string]any {
		return map[string]any{"id": id, "session_id": h.session, "entry_node": "n", "nodes": []any{map[string]any{
			"node_id": "n", "kind": "tool", "name": tool, "input": input, "input_map": map[string]any{},
			"condition": "", "true_node": "", "false_node": "", "items_path": "", "map_node": "", "next_node": "", "on_error": "abort"}}}
	}
	start := time.Now()
	h.send("chain_req", doc("slow", "delay", map[string]any{"ms": 1500}))
	for i := range 3 {
		h.send("chain_req", doc(fmt.Sprintf("fast%d", i), "echo", map[string]any{"i": i}))
	}
	var order []string
	for len(order) < 4 {
		if m := h.next(); m["type"] == "chain/resp" {
			if m["success"] != true {
				t.Fatalf("resp: %v", m)
			}
			if m["req_id"] != "slow" && time.Since(start) > time.Second {
				t.Fatalf("%s answered after %v", m["req_id"], time.Since(start))
			}
			order = append(order, m["req_id"].(string))
		}
	}
	if order[3] != "slow" {
		t.Fatalf("answers in order %v, want the slow one last", order)
	}
}

// Errors are messages on the A2E door: an undecodable POST /v1/a2e answers a
// chain/resp (its type set, the request's id echoed, success false,
// chain_decode) with the status kept; so do the session routes' refusals;
// and a message the session cannot decode is a chain/resp on the stream.
func TestA2EHTTPErrorsAreMessages(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	check := func(r resp, status int, code, reqID string) {
		t.Helper()
		wantStatus(t, r, status)
		if err := sdk.Check(r.body); err != nil {
			t.Fatal(err)
		}
		m := r.json(t)
		e, _ := m["error"].(map[string]any)
		if m["type"] != "chain/resp" || m["success"] != false || e["code"] != code || m["req_id"] != reqID {
			t.Fatalf("%s", r.body)
		}
	}
	check(do(t, ts, "POST", "/v1/a2e", `{"type":"chain/req","id":"r9","nodes":[{"node_id":"a","kind":"tool","bogus":1}]}`), 400, "chain_decode", "r9")
	check(do(t, ts, "POST", "/v1/a2e", `not json`), 400, "chain_decode", "")
	check(do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`), 400, "session_required", "p")
	check(do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`, HeaderSessionID, "nope"), 404, "unknown_session", "p")
	check(do(t, ts, "GET", "/v1/a2e/stream", nil, HeaderSessionID, "nope"), 404, "unknown_session", "")

	h := openSDKHTTP(t, ts)
	r := do(t, ts, "POST", "/v1/a2e/send", `{"type":"chain/req","id":"bad","nodes":[]}`, "Content-Type", "text/plain", HeaderSessionID, h.session)
	wantStatus(t, r, 202)
	if m := h.next(); m["type"] != "chain/resp" || m["req_id"] != "bad" || m["error"].(map[string]any)["code"] != "chain_decode" {
		t.Fatalf("on the stream: %v", m)
	}
}

// A tool the host lacks is refused before running (unknown_tool in a
// chain_invalid naming the node), on POST /v1/a2e and on a session, and no
// run is recorded.
func TestA2EUnknownToolRefusedBeforeRunning(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	req := `{"type":"chain/req","id":"u1","streaming":false,"nodes":[{"node_id":"a","kind":"tool","name":"echo","next_node":"b"},{"node_id":"b","kind":"tool","name":"no_such_tool"}]}`
	wantRefused := func(m map[string]any) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if m["success"] != false || e["code"] != "chain_invalid" || e["node_id"] != "b" || !strings.Contains(e["message"].(string), "unknown_tool") || m["nodes_run"].(float64) != 0 {
			t.Fatalf("refusal: %v", m)
		}
	}
	r := do(t, ts, "POST", "/v1/a2e", req)
	wantStatus(t, r, 200)
	wantRefused(r.json(t))

	h := openSDKHTTP(t, ts)
	do(t, ts, "POST", "/v1/a2e/send", strings.Replace(req, `"u1"`, `"u2"`, 1), HeaderSessionID, h.session)
	wantRefused(h.next())

	runs := do(t, ts, "GET", "/v1/runs", nil).json(t)
	if n := len(runs["runs"].([]any)); n != 0 {
		t.Fatalf("%d runs recorded for refused requests", n)
	}
}

// The sessions are bounded: a configured number open at once, and one
// unused for the idle time is gone.
func TestA2EHTTPSessionBounds(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{A2EMaxSessions: 2, A2ESessionIdle: 200 * time.Millisecond}, testRegistry())
	a := do(t, ts, "POST", "/v1/a2e/session", nil).json(t)["session_id"].(string)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/session", nil), 200)
	r := do(t, ts, "POST", "/v1/a2e/session", nil)
	wantStatus(t, r, 429)
	if r.json(t)["error"].(map[string]any)["code"] != "too_many_sessions" {
		t.Fatalf("third session: %s", r.body)
	}
	// Polled without using the session: a send would be activity.
	testutil.Eventually(t, 10*time.Second, func() error {
		srv.a2e.ExpireIdle(time.Now())
		if _, _, _, open := srv.a2e.Holding(a); open {
			return fmt.Errorf("the idle session is still open")
		}
		return nil
	})
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`, HeaderSessionID, a), 404)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/session", nil), 200) // the expired ones made room
}
