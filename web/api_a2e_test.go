package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/google/uuid"
)

// seedSimpleLinearChain is the A2E protocol's "Simple Linear Chain" wire example, verbatim.
const seedSimpleLinearChain = `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`

// newA2EServer is a studio whose registry maps that example's tool names to
// echo-like tools: read_file returns {"content": "contents of <path>"},
// text_summarizer returns {"summary": <its input>}. The example's summarize node
// is a skill (a saved chain called by name), so a chain text_summarizer that
// calls the text_summarizer tool is saved too.
func newA2EServer(t testing.TB) (*Server, *httptest.Server) {
	reg := testRegistry()
	reg.Register("read_file", func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
		return map[string]any{"content": fmt.Sprintf("contents of %v", in["path"])}, nil
	})
	reg.Register("text_summarizer", func(_ context.Context, in map[string]any, _ tool.Emitter) (any, error) {
		return map[string]any{"summary": in}, nil
	})
	srv, ts := newTestServerWith(t, Config{}, reg)
	createChain(t, ts, `{"name":"text_summarizer","nodes":[{"node_id":"sum","kind":"tool","name":"text_summarizer","input_map":{"text":"input.text"}}]}`)
	return srv, ts
}

func postA2E(t testing.TB, ts *httptest.Server, body, accept string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/v1/a2e", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

const (
	eventKeys = "data,error,id,node_id,output,phase,req_id,seq,ts,type,version"
	respKeys  = "chain_id,duration_ms,error,final_output,id,nodes_run,outputs,req_id,success,ts,type,version"
)

func checkEnvelope(t testing.TB, m map[string]any, typ string, start time.Time) {
	t.Helper()
	if m["type"] != typ || m["version"] != "1.0" || m["req_id"] != "c1" {
		t.Fatalf("envelope: %v", m)
	}
	if _, err := uuid.Parse(m["id"].(string)); err != nil {
		t.Fatalf("id %v is not a UUID", m["id"])
	}
	ts, ok := m["ts"].(float64)
	now := float64(time.Now().UnixNano()) / 1e9
	if !ok || ts < float64(start.Unix())-1 || ts > now+1 {
		t.Fatalf("ts %v is not the unix time in seconds", m["ts"])
	}
}

func checkSeedExchange(t testing.TB, msgs []map[string]any, start time.Time) {
	t.Helper()
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want 4 events and a resp: %v", len(msgs), msgs)
	}
	want := []struct{ node, phase string }{{"read", "start"}, {"read", "done"}, {"summarize", "start"}, {"summarize", "done"}}
	for i, w := range want {
		m := msgs[i]
		checkEnvelope(t, m, "chain/event", start)
		if keysOf(m) != eventKeys {
			t.Fatalf("event fields %s, want %s", keysOf(m), eventKeys)
		}
		if m["node_id"] != w.node || m["phase"] != w.phase || m["seq"].(float64) != float64(i+1) || m["error"] != "" {
			t.Fatalf("event %d: %v", i, m)
		}
		if w.phase == "start" && m["output"] != nil {
			t.Fatalf("start event with output: %v", m)
		}
	}
	readOut := map[string]any{"content": "contents of /data/input.txt"}
	sumOut := map[string]any{"summary": map[string]any{"text": readOut}}
	if !jsonEqual(msgs[1]["output"], readOut) || !jsonEqual(msgs[3]["output"], sumOut) {
		t.Fatalf("outputs: %v / %v", msgs[1]["output"], msgs[3]["output"])
	}
	resp := msgs[4]
	checkEnvelope(t, resp, "chain/resp", start)
	if keysOf(resp) != respKeys {
		t.Fatalf("resp fields %s, want %s", keysOf(resp), respKeys)
	}
	if resp["chain_id"] != "abc123" || resp["success"] != true || resp["error"] != nil || resp["nodes_run"].(float64) != 2 {
		t.Fatalf("resp: %v", resp)
	}
	if d, ok := resp["duration_ms"].(float64); !ok || d < 0 || d != math.Trunc(d) {
		t.Fatalf("duration_ms %v", resp["duration_ms"])
	}
	if !jsonEqual(resp["outputs"], map[string]any{"read": readOut, "summarize": sumOut}) || !jsonEqual(resp["final_output"], sumOut) {
		t.Fatalf("resp outputs: %v final %v", resp["outputs"], resp["final_output"])
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestA2ESeedExampleSSE(t *testing.T) {
	t.Parallel()
	_, ts := newA2EServer(t)
	start := time.Now()
	res := postA2E(t, ts, seedSimpleLinearChain, "")
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	rd := newSSEReader(res.Body)
	var msgs []map[string]any
	for {
		f, err := rd.next()
		if err != nil {
			break
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
			t.Fatal(err)
		}
		if f.Event != m["type"] {
			t.Fatalf("SSE event %q carries a %v", f.Event, m["type"])
		}
		msgs = append(msgs, m)
	}
	checkSeedExchange(t, msgs, start)

	// The exchange is recorded as an a2e run.
	r := do(t, ts, "GET", "/v1/runs", nil)
	if !strings.Contains(string(r.body), `"kind":"a2e"`) || !strings.Contains(string(r.body), `"chain_name":"abc123"`) {
		t.Fatalf("no a2e run: %s", r.body)
	}
}

func TestA2ESeedExampleNDJSON(t *testing.T) {
	t.Parallel()
	_, ts := newA2EServer(t)
	start := time.Now()
	res := postA2E(t, ts, seedSimpleLinearChain, "application/x-ndjson")
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != MIMENDJSON {
		t.Fatalf("status %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		msgs = append(msgs, m)
	}
	checkSeedExchange(t, msgs, start)
}

func TestA2ENotStreaming(t *testing.T) {
	t.Parallel()
	_, ts := newA2EServer(t)
	body := strings.Replace(seedSimpleLinearChain, `"streaming":true`, `"streaming":false`, 1)
	r := do(t, ts, "POST", "/v1/a2e", body)
	wantStatus(t, r, 200)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("content type %s", r.header.Get("Content-Type"))
	}
	m := r.json(t)
	if keysOf(m) != respKeys || m["type"] != "chain/resp" || m["success"] != true || m["req_id"] != "c1" {
		t.Fatalf("resp: %s", r.body)
	}
}

func TestA2EErrors(t *testing.T) {
	t.Parallel()
	_, ts := newA2EServer(t)
	// Not decodable: 400 with the path.
	r := do(t, ts, "POST", "/v1/a2e", `{"type":"chain/req","nodes":[{"node_id":"a","kind":"tool","bogus":1}]}`)
	wantStatus(t, r, 400)
	if r.errCode(t) != chain.CodeDecode || r.errDetails(t)["path"] != `nodes[0] "a".bogus` {
		t.Fatalf("decode: %s", r.body)
	}
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", `{"type":"chain/resp"}`), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", fmt.Sprintf(linearDoc, "studio")), 400)
	wantStatus(t, do(t, ts, "POST", "/v1/a2e", `{"type":"chain/req","version":"2.0","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`), 400)

	// Decodes but invalid: a chain/resp with success false, chain_invalid.
	r = do(t, ts, "POST", "/v1/a2e", `{"type":"chain/req","id":"bad","streaming":false,"nodes":[{"node_id":"a","kind":"tool","name":"echo","next_node":"ghost"}]}`)
	wantStatus(t, r, 200)
	m := r.json(t)
	e, _ := m["error"].(map[string]any)
	if m["success"] != false || e == nil || e["code"] != chain.CodeInvalid || keysOf(e) != "code,message,node_id" {
		t.Fatalf("invalid: %s", r.body)
	}
	// Streamed the same way.
	res := postA2E(t, ts, `{"type":"chain/req","id":"bad2","nodes":[{"node_id":"a","kind":"tool","name":"echo","next_node":"ghost"}]}`, "application/x-ndjson")
	defer res.Body.Close()
	var last map[string]any
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		last = nil
		_ = json.Unmarshal(sc.Bytes(), &last)
	}
	if last["type"] != "chain/resp" || last["success"] != false || last["error"].(map[string]any)["code"] != chain.CodeInvalid {
		t.Fatalf("streamed invalid: %v", last)
	}

	// A failing node: success false, chain_node_error naming the node; the
	// error event carries the message.
	res2 := postA2E(t, ts, `{"type":"chain/req","id":"f","nodes":[{"node_id":"boom","kind":"tool","name":"fail","input":{"message":"nope"}}]}`, "application/x-ndjson")
	defer res2.Body.Close()
	var msgs []map[string]any
	sc = bufio.NewScanner(res2.Body)
	for sc.Scan() {
		var m map[string]any
		_ = json.Unmarshal(sc.Bytes(), &m)
		msgs = append(msgs, m)
	}
	if len(msgs) < 3 || msgs[1]["phase"] != "error" || msgs[1]["error"] != "nope" {
		t.Fatalf("error event: %v", msgs)
	}
	resp := msgs[len(msgs)-1]
	if e := resp["error"].(map[string]any); resp["success"] != false || e["code"] != engine.CodeNodeError || e["node_id"] != "boom" {
		t.Fatalf("failed resp: %v", resp)
	}
}
