package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestA2EHTTPErrorCodes: POST /v1/a2e answers every row of the A2E error
// table (engine/testdata/a2e_wire_codes.json) with that code in
// error.code, as one chain/resp and at the end of an NDJSON stream.
func TestA2EHTTPErrorCodes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../engine/testdata/a2e_wire_codes.json")
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
	_, ts := newTestServer(t)
	for _, tc := range file.Cases {
		for _, streaming := range []bool{false, true} {
			name := tc.Name
			var buf bytes.Buffer
			if err := json.Compact(&buf, tc.Request); err != nil {
				t.Fatal(err)
			}
			req := buf.String() // one line: the stdio host reads a request per line
			if streaming {
				name += "/ndjson"
				req = strings.Replace(req, `"streaming":false`, `"streaming":true`, 1)
			}
			t.Run(name, func(t *testing.T) {
				res := postA2E(t, ts, req, MIMENDJSON)
				defer res.Body.Close()
				if res.StatusCode != 200 {
					t.Fatalf("status %d", res.StatusCode)
				}
				var last map[string]any
				sc := bufio.NewScanner(res.Body)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					last = nil
					if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
						t.Fatalf("line %q: %v", sc.Text(), err)
					}
				}
				if last["type"] != "chain/resp" || last["success"] != tc.Success {
					t.Fatalf("resp: %v, want success %v", last, tc.Success)
				}
				e, _ := last["error"].(map[string]any)
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
