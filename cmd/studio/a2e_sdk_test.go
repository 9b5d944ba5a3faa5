package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/enginetest"
)

// sdkStdio drives `studio a2e` the way the SDK's SubprocessTransport does:
// one message per line in, one per line out, every line checked against the
// SDK's schema of its type.
type sdkStdio struct {
	t    *testing.T
	sdk  *enginetest.A2ESDK
	in   *io.PipeWriter
	msgs chan map[string]any
	exit chan int
}

func startSDKStdio(t *testing.T, args ...string) *sdkStdio {
	t.Helper()
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &sdkStdio{t: t, sdk: sdk, in: inW, msgs: make(chan map[string]any, 256), exit: make(chan int, 1)}
	go func() {
		code := runA2E(context.Background(), args, inR, outW, io.Discard)
		outW.Close()
		h.exit <- code
	}()
	go func() {
		defer close(h.msgs)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if err := sdk.Check(sc.Bytes()); err != nil {
				t.Error(err)
			}
			var m map[string]any
			_ = json.Unmarshal(sc.Bytes(), &m)
			h.msgs <- m
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return h
}

func (h *sdkStdio) send(name string, set map[string]any) string {
	h.t.Helper()
	b, err := h.sdk.Message(name, set)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		h.t.Fatal(err)
	}
	var env struct{ ID string }
	_ = json.Unmarshal(b, &env)
	return env.ID
}

func (h *sdkStdio) next() map[string]any {
	h.t.Helper()
	select {
	case m, ok := <-h.msgs:
		if !ok {
			h.t.Fatal("studio a2e closed its output")
		}
		return m
	case <-time.After(20 * time.Second):
		h.t.Fatal("no message within 20s")
	}
	return nil
}

// The SDK's client over stdio: connect() (handshake/req → handshake/resp
// with ok, the session id and the chains capability), ping → pong, the
// recorded chain/req (SDK-shaped nodes with empty-string fields, $. paths,
// correlation_id) run to success, then disconnect() (shutdown) and the host
// exits. Every line the host writes validates against the SDK's schemas.
func TestA2EStdioSDKSession(t *testing.T) {
	t.Parallel()
	h := startSDKStdio(t)
	hsID := h.send("handshake_req", nil)
	hs := h.next()
	caps, _ := hs["accepted_caps"].([]any)
	if hs["type"] != "handshake/resp" || hs["ok"] != true || hs["req_id"] != hsID || hs["session_id"] == "" || len(caps) != 1 ||
		caps[0].(map[string]any)["capability"] != "chains" || caps[0].(map[string]any)["enabled"] != true {
		t.Fatalf("handshake/resp: %v", hs)
	}
	session := hs["session_id"].(string)

	pingID := h.send("ping", nil)
	if p := h.next(); p["type"] != "pong" || p["req_id"] != pingID {
		t.Fatalf("pong: %v", p)
	}

	reqID := h.send("chain_req", map[string]any{"session_id": session})
	var resp map[string]any
	phases := map[string]string{}
	for resp == nil {
		m := h.next()
		if m["req_id"] != reqID {
			t.Fatalf("message for another request: %v", m)
		}
		switch m["type"] {
		case "chain/event":
			phases[m["node_id"].(string)] += m["phase"].(string) + " "
		case "chain/resp":
			resp = m
		}
	}
	if resp["success"] != true || resp["chain_id"] != "pipeline" || resp["error"] != nil {
		t.Fatalf("chain/resp: %v", resp)
	}
	// $.input.n > `0` with n = 5 takes the true branch: pos runs, neg is skipped.
	if phases["read"] != "start done " || phases["check"] != "start done " || phases["pos"] != "start done " || phases["neg"] != "skip " {
		t.Fatalf("phases: %v", phases)
	}

	// A chain/req naming another session is refused, as a chain/resp.
	otherID := h.send("chain_req", map[string]any{"session_id": "not-this-one", "id": "other"})
	if m := h.next(); m["type"] != "chain/resp" || m["req_id"] != otherID || m["success"] != false ||
		!strings.Contains(fmt.Sprint(m["error"]), "session_id") {
		t.Fatalf("other session: %v", m)
	}

	h.send("shutdown", nil)
	select {
	case code := <-h.exit:
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("studio a2e did not exit after shutdown")
	}
}

// Several chains in flight on one stdio session: a short request is not
// held behind a long one; each is answered by its id, and shutdown waits
// for the long one to answer before the host exits.
func TestA2EStdioConcurrentRequests(t *testing.T) {
	t.Parallel()
	h := startSDKStdio(t)
	doc := func(id, node string, input map[string]any) map[string]any {
		return map[string]any{"id": id, "session_id": "", "entry_node": "n", "nodes": []any{map[string]any{
			"node_id": "n", "kind": "tool", "name": node, "input": input, "input_map": map[string]any{},
			"condition": "", "true_node": "", "false_node": "", "items_path": "", "map_node": "", "next_node": "", "on_error": "abort"}}}
	}
	h.send("chain_req", doc("slow", "delay", map[string]any{"ms": 1500}))
	start := time.Now()
	for i := range 3 {
		h.send("chain_req", doc(fmt.Sprintf("fast%d", i), "echo", map[string]any{"i": i}))
	}
	h.send("shutdown", nil)
	var order []string
	for len(order) < 4 {
		if m := h.next(); m["type"] == "chain/resp" {
			if m["success"] != true {
				t.Fatalf("resp: %v", m)
			}
			order = append(order, m["req_id"].(string))
			if m["req_id"] != "slow" && time.Since(start) > time.Second {
				t.Fatalf("%s answered after %v: it waited for the slow request", m["req_id"], time.Since(start))
			}
		}
	}
	if order[3] != "slow" {
		t.Fatalf("answers in order %v, want the slow one last", order)
	}
	if code := <-h.exit; code != exitOK {
		t.Fatalf("exit %d", code)
	}
}

// A tool this host lacks is refused before anything runs, on stdio as on
// HTTP: chain_invalid naming the node and the unknown_tool rule, no events.
func TestA2EStdioUnknownToolRefusedBeforeRunning(t *testing.T) {
	t.Parallel()
	msgs := a2eExchange(t, `{"type":"chain/req","id":"u","nodes":[{"node_id":"a","kind":"tool","name":"echo","next_node":"b"},{"node_id":"b","kind":"tool","name":"no_such_tool"}]}`+"\n")
	if len(msgs) != 1 {
		t.Fatalf("want only the chain/resp, got %v", msgs)
	}
	e, _ := msgs[0]["error"].(map[string]any)
	if msgs[0]["type"] != "chain/resp" || msgs[0]["success"] != false || e["code"] != "chain_invalid" || e["node_id"] != "b" ||
		!strings.Contains(e["message"].(string), "unknown_tool") || msgs[0]["nodes_run"].(float64) != 0 {
		t.Fatalf("resp: %v", msgs[0])
	}
}

// shutdown gives running chains its timeout to answer, then cancels them:
// each still answers (chain_cancelled) before the host exits. A handshake
// in another protocol version is refused (ok false, the reason), one without
// the chains capability accepts none.
func TestA2EStdioShutdownAndHandshakeRefusals(t *testing.T) {
	t.Parallel()
	h := startSDKStdio(t)
	h.send("handshake_req", map[string]any{"id": "v2", "version": "2.0"})
	if m := h.next(); m["ok"] != false || m["req_id"] != "v2" || !strings.Contains(m["reason"].(string), `"2.0"`) {
		t.Fatalf("version 2.0: %v", m)
	}
	h.send("handshake_req", map[string]any{"id": "nocaps", "agent_caps": []string{"streaming"}})
	if m := h.next(); m["ok"] != true || len(m["accepted_caps"].([]any)) != 0 {
		t.Fatalf("no chains capability: %v", m)
	}
	h.send("chain_req", map[string]any{"id": "long", "session_id": "", "streaming": false, "entry_node": "n", "nodes": []any{
		map[string]any{"node_id": "n", "kind": "tool", "name": "delay", "input": map[string]any{"ms": 60000}}}})
	time.Sleep(100 * time.Millisecond) // let it start
	start := time.Now()
	h.send("shutdown", map[string]any{"timeout": 0})
	m := h.next()
	if e, _ := m["error"].(map[string]any); m["type"] != "chain/resp" || m["req_id"] != "long" || e["code"] != "chain_cancelled" {
		t.Fatalf("cancelled at shutdown: %v", m)
	}
	if code := <-h.exit; code != exitOK || time.Since(start) > 5*time.Second {
		t.Fatalf("exit %d after %v", code, time.Since(start))
	}
}

// A static input the tool's schema refuses is refused before running on
// stdio too (input_schema), as the server refuses it for a saved chain.
func TestA2EStdioInputSchemaRefusedBeforeRunning(t *testing.T) {
	t.Parallel()
	msgs := a2eExchange(t, `{"type":"chain/req","id":"s","nodes":[{"node_id":"d","kind":"tool","name":"delay","input":{"ms":"soon"}}]}`+"\n")
	e, _ := msgs[0]["error"].(map[string]any)
	if len(msgs) != 1 || e["code"] != "chain_invalid" || e["node_id"] != "d" || !strings.Contains(e["message"].(string), "input_schema") {
		t.Fatalf("resp: %v", msgs)
	}
}

// delayReq is a recorded-shape chain/req of one delay node of ms.
func delayReq(id string, ms int) map[string]any {
	return map[string]any{"id": id, "session_id": "", "streaming": false, "entry_node": "n", "nodes": []any{map[string]any{
		"node_id": "n", "kind": "tool", "name": "delay", "input": map[string]any{"ms": ms}, "input_map": map[string]any{},
		"condition": "", "true_node": "", "false_node": "", "items_path": "", "map_node": "", "next_node": "", "on_error": "abort"}}}
}

// answeredThenShutdown waits for n successful chain/resp messages, then
// shuts the host down and wants it to exit cleanly.
func (h *sdkStdio) answeredThenShutdown(n int) {
	h.t.Helper()
	got := map[string]bool{}
	for len(got) < n {
		if m := h.next(); m["type"] == "chain/resp" {
			if m["success"] != true {
				h.t.Fatalf("resp: %v", m)
			}
			got[m["req_id"].(string)] = true
		}
	}
	h.send("shutdown", nil)
	if code := <-h.exit; code != exitOK {
		h.t.Fatalf("exit %d", code)
	}
}

// Control messages never wait behind work: with every run slot taken
// (--max-parallel 2, two long chains) and a third chain/req waiting for a
// slot, a ping is answered at once, before any chain answers; the waiting
// request is accepted and runs when a slot frees.
func TestA2EStdioPingDoesNotWaitForASlot(t *testing.T) {
	t.Parallel()
	h := startSDKStdio(t, "--max-parallel", "2")
	h.send("chain_req", delayReq("long1", 4000))
	h.send("chain_req", delayReq("long2", 4000))
	h.send("chain_req", delayReq("waiting", 10))
	start := time.Now()
	pingID := h.send("ping", nil)
	m := h.next()
	if m["type"] != "pong" || m["req_id"] != pingID {
		t.Fatalf("first answer %v, want the pong: the ping waited behind the chains", m)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("pong after %v", d)
	}
	h.answeredThenShutdown(3)
}

// The requests waiting for a slot are bounded (--max-queued): past the
// bound, reading input waits for room, so every request of a long input
// still runs, and a ping sent once room is free is answered at once.
func TestA2EStdioQueueBounded(t *testing.T) {
	t.Parallel()
	h := startSDKStdio(t, "--max-parallel", "1", "--max-queued", "1")
	start := time.Now()
	h.send("chain_req", delayReq("running", 1000))
	h.send("chain_req", delayReq("waiting", 10))
	h.send("chain_req", delayReq("third", 10))
	pingID := h.send("ping", nil)
	var order []string
	for len(order) < 4 {
		m := h.next()
		if m["type"] == "chain/resp" && m["success"] != true {
			t.Fatalf("resp: %v", m)
		}
		id, _ := m["req_id"].(string)
		order = append(order, id)
	}
	// The third request was read once "waiting" left the queue, when
	// "running" answered, and the ping right after it.
	if order[0] != "running" || time.Since(start) < time.Second {
		t.Fatalf("answers in order %v after %v", order, time.Since(start))
	}
	if !slices.Contains(order, pingID) || !slices.Contains(order, "third") {
		t.Fatalf("answers %v, want every request and the pong", order)
	}
	h.send("shutdown", nil)
	if code := <-h.exit; code != exitOK {
		t.Fatalf("exit %d", code)
	}
}
