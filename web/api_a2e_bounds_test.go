package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/internal/testutil"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/a2ehttp"
)

// a2eSession is one of the server's HTTP sessions, read through its door.
type a2eSession struct {
	t  testing.TB
	h  *a2ehttp.Handler
	id string
}

// a2eSessionOf is the server's record of an HTTP session.
func a2eSessionOf(t testing.TB, srv *Server, id string) a2eSession {
	t.Helper()
	if _, _, _, ok := srv.a2e.Holding(id); !ok {
		t.Fatalf("no session %s", id)
	}
	return a2eSession{t: t, h: srv.a2e, id: id}
}

// heldOf reads a session's counters: bytes held now, the most ever held,
// messages in flight.
func heldOf(s a2eSession) (held, peak, inFlight int) {
	held, peak, inFlight, ok := s.h.Holding(s.id)
	if !ok {
		s.t.Errorf("session %s is no longer open", s.id)
	}
	return held, peak, inFlight
}

// bigChainReq is a chain/req whose answer holds a map of items template
// outputs of size bytes each (in outputs and in final_output).
func bigChainReq(id string, items, size int, streaming bool) string {
	xs := make([]int, items)
	b, _ := json.Marshal(map[string]any{"type": "chain/req", "id": id, "streaming": streaming, "initial_input": map[string]any{"xs": xs},
		"nodes": []any{
			map[string]any{"node_id": "m", "kind": "map", "items_path": "input.xs", "map_node": "t"},
			map[string]any{"node_id": "t", "kind": "tool", "name": "template", "input": map[string]any{"template": fmt.Sprintf(`{{printf "%%0%dd" 0}}`, size)}},
		}})
	return string(b)
}

// What one session holds stays under its cap however many sends arrive at
// once and whatever their answers weigh: sends are reserved before the
// session takes them, a send past the cap is refused with 503
// stream_not_read, and an answer too large for what is left is answered by
// a chain/resp saying so. Measured by the session's own counter, which
// records the most it ever held.
func TestA2EHTTPSessionHoldsNoMoreThanItsCap(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	srv, ts := newTestServerWith(t, Config{A2ESessionBytes: limit}, testRegistry())
	id := do(t, ts, "POST", "/v1/a2e/session", nil).json(t)["session_id"].(string)
	h := a2eSessionOf(t, srv, id)

	// 24 senders at once, nobody reading the stream. The twelve
	// non-streaming answers are about 2 × 2 × 64 KiB each, so the cap holds
	// about four of them; the twelve streaming ones are small, so their
	// events take room without ever leaving too little for the first big
	// answer, whatever order the runs finish in.
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]bool{}
	refused := 0
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqID := fmt.Sprintf("r%d", i)
			streaming, size := i%2 == 0, 64<<10
			if streaming {
				size = 256
			}
			r := do(t, ts, "POST", "/v1/a2e/send", bigChainReq(reqID, 2, size, streaming), HeaderSessionID, id)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.status == http.StatusAccepted:
				accepted[reqID] = true
			case r.status == http.StatusServiceUnavailable && r.errCode(t) == "stream_not_read":
				refused++
			default:
				t.Errorf("%s: %d %s", reqID, r.status, r.body)
			}
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 30*time.Second, func() error {
		if _, _, n := heldOf(h); n > 0 {
			return fmt.Errorf("%d messages in flight", n)
		}
		return nil
	})
	held, peak, _ := heldOf(h)
	if peak > limit || held > limit {
		t.Fatalf("the session held %d bytes at most (%d now), over its cap of %d", peak, held, limit)
	}
	// Full of unread answers, it refuses a send whose answer could not fit.
	r := do(t, ts, "POST", "/v1/a2e/send", bigChainReq("more", 1, 8, false)+strings.Repeat(" ", limit-held), HeaderSessionID, id)
	wantStatus(t, r, http.StatusServiceUnavailable)
	if r.errCode(t) != "stream_not_read" || r.errDetails(t)["limit_bytes"].(float64) != limit {
		t.Fatalf("full session: %s", r.body)
	}

	// The stream delivers one chain/resp per accepted request: the ones
	// that fit, and the others saying they did not.
	sh := attachSDKHTTP(t, ts, id)
	ok, tooLarge := 0, 0
	for len(accepted) > 0 {
		m := sh.next()
		if m["type"] != "chain/resp" {
			continue
		}
		reqID, _ := m["req_id"].(string)
		if !accepted[reqID] {
			t.Fatalf("chain/resp for %q, not an accepted request (or twice)", reqID)
		}
		delete(accepted, reqID)
		if m["success"] == true {
			ok++
			continue
		}
		e := m["error"].(map[string]any)
		if e["code"] != "response_too_large" || !strings.Contains(e["message"].(string), "bytes, more than the session may hold") {
			t.Fatalf("refused answer: %v", e)
		}
		tooLarge++
	}
	if ok == 0 || tooLarge == 0 {
		t.Fatalf("%d answers kept, %d too large: want both", ok, tooLarge)
	}
	t.Logf("accepted %d (%d kept, %d too large), refused %d sends, held at most %d of %d bytes", ok+tooLarge, ok, tooLarge, refused, peak, limit)
	// Read, the session has room again.
	testutil.Eventually(t, 10*time.Second, func() error {
		if held, _, _ := heldOf(h); held != 0 {
			return fmt.Errorf("%d bytes held after the stream delivered everything", held)
		}
		return nil
	})
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`, HeaderSessionID, id), http.StatusAccepted)
}

// The report's case at a smaller scale: 12 concurrent chain/req with
// answers of about 10 MiB each, on a session whose stream is not read, at
// the default cap (32 MiB). The heap holds the cap, not the answers: it
// grows by less than the cap and 64 MiB of slack (what the run service and
// the store hold of the runs meanwhile), where keeping every answer grows
// it by about 150 MiB. Not parallel, so the heap is this test's.
func TestA2EHTTPSessionHeapStaysBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds about 120 MiB of answers")
	}
	srv, ts := newTestServer(t)
	id := do(t, ts, "POST", "/v1/a2e/session", nil).json(t)["session_id"].(string)
	h := a2eSessionOf(t, srv, id)
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, ts, "POST", "/v1/a2e/send", bigChainReq(fmt.Sprintf("r%d", i), 40, 128<<10, false), HeaderSessionID, id)
			if r.status != http.StatusAccepted && r.status != http.StatusServiceUnavailable {
				t.Errorf("%d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	// Generous: under -race on a shared machine the 480 renderings take
	// over a minute.
	testutil.Eventually(t, 5*time.Minute, func() error {
		if _, _, n := heldOf(h); n > 0 {
			return fmt.Errorf("%d messages in flight", n)
		}
		return nil
	})
	after := heap()
	_, peak, _ := heldOf(h)
	const limit = a2ehttp.DefaultSessionBytes
	grew := int64(after) - int64(before)
	t.Logf("heap %d → %d MiB (+%d MiB); the session held at most %d MiB", before>>20, after>>20, grew>>20, peak>>20)
	if peak > limit {
		t.Fatalf("the session held %d bytes, over its cap of %d", peak, limit)
	}
	if grew > limit+64<<20 {
		t.Fatalf("the heap grew by %d MiB with the answers held, over the %d MiB cap and 64 MiB of slack", grew>>20, limit>>20)
	}
	runtime.KeepAlive(h)
}

// Control messages never wait behind work on the HTTP door: with the four
// run slots taken and a fifth chain/req waiting, the fifth send and a ping
// are answered at once (202), and the pong comes before any chain/resp.
func TestA2EHTTPPingDoesNotWaitForASlot(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	h := openSDKHTTP(t, ts)
	doc := func(id string, ms int) map[string]any {
		return map[string]any{"id": id, "session_id": h.session, "streaming": false, "entry_node": "n", "nodes": []any{map[string]any{
			"node_id": "n", "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}, "input_map": map[string]any{},
			"condition": "", "true_node": "", "false_node": "", "items_path": "", "map_node": "", "next_node": "", "on_error": "abort"}}}
	}
	for i := range 4 {
		h.send("chain_req", doc(fmt.Sprintf("long%d", i), 4000))
	}
	start := time.Now()
	h.send("chain_req", doc("waiting", 10))
	pingID := h.send("ping", nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the fifth chain/req and the ping took %v to be accepted: the door waited for a run slot", d)
	}
	if m := h.next(); m["type"] != "pong" || m["req_id"] != pingID {
		t.Fatalf("first message %v, want the pong", m)
	}
	got := map[string]bool{}
	for len(got) < 5 {
		if m := h.next(); m["type"] == "chain/resp" {
			if m["success"] != true {
				t.Fatalf("resp: %v", m)
			}
			got[m["req_id"].(string)] = true
		}
	}
}

// Sessions belong to the user who opened them: another user's session id
// answers 404 like an unknown one, and each user has a cap of their own, so
// one editor cannot take every session from the admin.
func TestA2EHTTPSessionsPerUser(t *testing.T) {
	t.Parallel()
	srv, ts := newTestServerWith(t, Config{Token: "legacy-token-0123456789", A2EMaxSessionsPerUser: 2, A2EMaxSessions: 3}, testRegistry())
	users := roleTokens(t, srv)
	open := func(who []string) resp { return do(t, ts, "POST", "/v1/a2e/session", nil, who...) }
	r := open(users["editor"])
	wantStatus(t, r, 200)
	mine := r.json(t)["session_id"].(string)
	wantStatus(t, open(users["editor"]), 200)
	r = open(users["editor"])
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.errCode(t) != "too_many_sessions" || r.errDetails(t)["per"] != "user" || r.errDetails(t)["limit"].(float64) != 2 {
		t.Fatalf("the editor's third session: %s", r.body)
	}
	wantStatus(t, open(users["admin"]), 200) // the editor's sessions left room

	ping := `{"type":"ping","id":"p"}`
	r = do(t, ts, "POST", "/v1/a2e/send", ping, append([]string{HeaderSessionID, mine}, users["admin"]...)...)
	wantStatus(t, r, 404)
	if r.errCode(t) != "unknown_session" {
		t.Fatalf("another user's session: %s", r.body)
	}
	wantStatus(t, do(t, ts, "GET", "/v1/a2e/stream", nil, append([]string{HeaderSessionID, mine}, users["admin"]...)...), 404)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/send", ping, append([]string{HeaderSessionID, mine}, users["editor"]...)...), http.StatusAccepted)

	// The server's cap still holds for all users together.
	r = open(users["admin"])
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.errDetails(t)["per"] != "server" {
		t.Fatalf("past the server's cap: %s", r.body)
	}
}

// A session with a stream attached expires when idle (no send, nothing
// delivered): the stream ends with an error message saying why, and the
// session is gone.
func TestA2EHTTPSessionExpiresWithItsStream(t *testing.T) {
	t.Parallel()
	_, ts := newTestServerWith(t, Config{A2ESessionIdle: 300 * time.Millisecond, SSEHeartbeat: 50 * time.Millisecond}, testRegistry())
	h := openSDKHTTP(t, ts)
	pingID := h.send("ping", nil)
	if m := h.next(); m["type"] != "pong" || m["req_id"] != pingID {
		t.Fatalf("pong: %v", m)
	}
	start := time.Now()
	m := h.next()
	if m["type"] != "error" || m["code"] != "session_expired" || !strings.Contains(m["message"].(string), "idle for 300ms") {
		t.Fatalf("last message %v, want the session_expired error", m)
	}
	select {
	case <-h.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after the session expired")
	}
	t.Logf("expired %v after the pong", time.Since(start))
	wantStatus(t, do(t, ts, "POST", "/v1/a2e/send", `{"type":"ping","id":"p"}`, HeaderSessionID, h.session), 404)
}

// A run a session's chain/req started records the session: started_by
// a2e_session and trigger_id the session id.
func TestA2EHTTPRunRecordsItsSession(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	h := openSDKHTTP(t, ts)
	reqID := h.send("chain_req", map[string]any{"session_id": h.session})
	if _, resp := h.untilResp(reqID); resp["success"] != true {
		t.Fatalf("chain/resp: %v", resp)
	}
	runs := do(t, ts, "GET", "/v1/runs", nil).json(t)["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	run := runs[0].(map[string]any)
	if run["started_by"] != store.TriggerA2ESession || run["trigger_id"] != h.session || run["kind"] != store.KindA2E {
		t.Fatalf("run: %v", run)
	}
	one := do(t, ts, "GET", "/v1/runs/"+run["id"].(string), nil).json(t)
	if one["started_by"] != store.TriggerA2ESession || one["trigger_id"] != h.session {
		t.Fatalf("GET /v1/runs/{id}: %v", one)
	}
}
