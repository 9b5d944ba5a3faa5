package a2e_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// wireCodeCase is one row of engine/testdata/a2e_wire_codes.json, shared with the
// stdio and HTTP hosts' tests.
type wireCodeCase struct {
	Name    string          `json:"name"`
	Request json.RawMessage `json:"request"`
	Success bool            `json:"success"`
	Code    string          `json:"code"`
	NodeID  string          `json:"node_id"`
	Message string          `json:"message"`
}

func TestA2EWireErrorCodes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../testdata/a2e_wire_codes.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []wireCodeCase }
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	eng := newEngine()
	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			c, req, err := chain.DecodeDocument(tc.Request, chain.Limits{})
			if err != nil || req == nil {
				t.Fatalf("decode: %v", err)
			}
			res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), req.InitialInput, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := a2e.NewResponseMessage(req, res)
			if m.Success != tc.Success {
				t.Fatalf("success = %v, want %v (status %s, error %s)", m.Success, tc.Success, res.Status, enginetest.JSON(m.Error))
			}
			if tc.Code == "" {
				if m.Error != nil {
					t.Fatalf("error = %s, want none", enginetest.JSON(m.Error))
				}
				return
			}
			if m.Error == nil || m.Error.Code != tc.Code || !strings.Contains(m.Error.Message, tc.Message) || (tc.NodeID != "" && m.Error.NodeID != tc.NodeID) {
				t.Fatalf("error = %s, want code %s, node %q, message containing %q", enginetest.JSON(m.Error), tc.Code, tc.NodeID, tc.Message)
			}
		})
	}
}
