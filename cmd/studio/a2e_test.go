package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func a2eExchange(t *testing.T, input string, args ...string) []map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runA2E(context.Background(), args, strings.NewReader(input), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var msgs []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestA2EStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := `{"name":"text_summarizer","nodes":[{"node_id":"s","kind":"tool","name":"echo","input_map":{"summary":"input.text"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "text_summarizer.json"), []byte(sub), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := strings.Join([]string{
		`{"type":"chain/req","id":"r1","chain_id":"two","initial_input":{"v":1},"nodes":[{"node_id":"a","kind":"tool","name":"echo","input_map":{"v":"input.v"},"next_node":"b"},{"node_id":"b","kind":"skill","name":"text_summarizer","input_map":{"text":"a.output"}}]}`,
		``,
		`{"type":"chain/req","id":"r2","nodes":[{"node_id":"a","kind":"tool","bogus":1}]}`,
		`{"type":"chain/req","id":"r3","streaming":false,"nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`,
		`not json`,
	}, "\n")
	msgs := a2eExchange(t, lines, "--chains", dir)
	// Requests run concurrently: each one's messages keep their order, and
	// its chain/resp comes last.
	byReq := map[string][]map[string]any{}
	for _, m := range msgs {
		id := m["req_id"].(string)
		byReq[id] = append(byReq[id], m)
	}
	var kinds []string
	for _, id := range []string{"r1", "r2", "r3", ""} {
		for _, m := range byReq[id] {
			kinds = append(kinds, m["type"].(string)+":"+id)
		}
	}
	want := "chain/event:r1 chain/event:r1 chain/event:r1 chain/event:r1 chain/resp:r1 chain/resp:r2 chain/resp:r3 chain/resp:"
	if len(msgs) != 8 || strings.Join(kinds, " ") != want {
		t.Fatalf("messages:\n%s\nwant\n%s", strings.Join(kinds, " "), want)
	}
	if r := byReq["r1"][4]; r["success"] != true || r["chain_id"] != "two" || r["nodes_run"].(float64) != 2 {
		t.Fatalf("r1 resp: %v", r)
	}
	r2 := byReq["r2"][0]
	if e := r2["error"].(map[string]any); r2["success"] != false || e["code"] != "chain_decode" || !strings.Contains(e["message"].(string), "bogus") {
		t.Fatalf("r2 resp: %v", r2)
	}
	if byReq["r3"][0]["success"] != true {
		t.Fatalf("r3 resp: %v", byReq["r3"][0])
	}
	if byReq[""][0]["error"].(map[string]any)["code"] != "chain_decode" {
		t.Fatalf("not json: %v", byReq[""][0])
	}
}

// The A2E protocol's "Simple Linear Chain" wire example, verbatim: the host refuses read_file's absolute
// path, so the run fails at node "read" and says so.
func TestA2EStdioSeedExample(t *testing.T) {
	t.Parallel()
	seed := `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`
	msgs := a2eExchange(t, seed+"\n", "--workspace", t.TempDir())
	resp := msgs[len(msgs)-1]
	e, _ := resp["error"].(map[string]any)
	if resp["type"] != "chain/resp" || resp["req_id"] != "c1" || resp["chain_id"] != "abc123" || resp["success"] != false || e["node_id"] != "read" {
		t.Fatalf("resp: %v", resp)
	}
	if msgs[0]["phase"] != "start" || msgs[1]["phase"] != "error" || msgs[1]["error"] == "" {
		t.Fatalf("events: %v", msgs[:len(msgs)-1])
	}
}
