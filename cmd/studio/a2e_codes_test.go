package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// wireCodeCases reads the table of A2E error codes every host answers the
// same way (engine/testdata/a2e_wire_codes.json), each request once as
// written (streaming false) and once streaming.
func wireCodeCases(t *testing.T) []struct {
	Name    string          `json:"name"`
	Request json.RawMessage `json:"request"`
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	NodeID  string          `json:"node_id"`
	Message string          `json:"message"`
} {
	b, err := os.ReadFile("../../engine/testdata/a2e_wire_codes.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name    string          `json:"name"`
			Request json.RawMessage `json:"request"`
			Success bool            `json:"success"`
			Code    string          `json:"code"`
			NodeID  string          `json:"node_id"`
			Message string          `json:"message"`
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	return file.Cases
}

func TestA2EStdioErrorCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCodeCases(t) {
		for _, streaming := range []bool{false, true} {
			name := tc.Name
			var buf bytes.Buffer
			if err := json.Compact(&buf, tc.Request); err != nil {
				t.Fatal(err)
			}
			req := buf.String() // one line: the stdio host reads a request per line
			if streaming {
				name += "/streaming"
				req = strings.Replace(req, `"streaming":false`, `"streaming":true`, 1)
			}
			t.Run(name, func(t *testing.T) {
				msgs := a2eExchange(t, req+"\n")
				resp := msgs[len(msgs)-1]
				if resp["type"] != "chain/resp" || resp["success"] != tc.Success {
					t.Fatalf("resp: %v, want success %v", resp, tc.Success)
				}
				// a refused chain never starts, so it has no events to stream
				if streaming != (len(msgs) > 1) && tc.Code != "chain_cycle" {
					t.Errorf("%d messages with streaming %v", len(msgs), streaming)
				}
				e, _ := resp["error"].(map[string]any)
				if tc.Code == "" {
					if e != nil {
						t.Fatalf("error = %v, want none", e)
					}
					return
				}
				if e == nil || e["code"] != tc.Code || !strings.Contains(e["message"].(string), tc.Message) || (tc.NodeID != "" && e["node_id"] != tc.NodeID) {
					t.Fatalf("error = %v, want code %s, node %q, message containing %q", e, tc.Code, tc.NodeID, tc.Message)
				}
			})
		}
	}
}

// `studio run` on a map whose item fails (no on_error, so
// parallel_failure_mode continue) collects the failure as an {"error": …}
// entry: the run ends partial (exit 0) and says so.
func TestRunMapItemFailureIsCollected(t *testing.T) {
	t.Parallel()
	f := t.TempDir() + "/mapfail.json"
	doc := `{"name":"mapfail","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},{"node_id":"body","kind":"tool","name":"delay","input_map":{"ms":"item"}}]}`
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := studio(t, "run", "--json", "--input", `{"xs":[1,-5,2]}`, f)
	if code != exitOK || !strings.Contains(out, `"status":"partial"`) || !strings.Contains(out, `"final_output":[{"ms":1},{"error":"delay: field \"ms\" must be \u003e= 0, got -5"},{"ms":2}]`) {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
}
