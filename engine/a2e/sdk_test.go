package a2e_test

import (
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// The schema check the A2E door tests rely on refuses what the SDK's client
// refuses: a message without a type, and a message of a known type with a
// field of the wrong type.
func TestA2ESDKCheckRefuses(t *testing.T) {
	t.Parallel()
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	for msg, want := range map[string]string{
		`{"error":{"code":"chain_decode","message":"x"}}`:                                   "missing 'type'",
		`{"type":"chain/resp","id":"a","ts":1,"success":"no"}`:                              "does not validate",
		`{"type":"handshake/resp","id":"a","ts":1,"accepted_caps":[{"capability":"nope"}]}`: "does not validate",
	} {
		if err := sdk.Check([]byte(msg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", msg, err, want)
		}
	}
	if err := sdk.Check([]byte(`{"type":"pong","id":"a","ts":1,"req_id":"p","uptime_seconds":1.5}`)); err != nil {
		t.Fatal(err)
	}
}

// The SDK's recorded chain/req (every ChainNode field, unused ones as empty
// strings, `$.` paths, correlation_id) decodes and validates without
// errors; its `$.read.path` (read holds only its output) is a warning that
// says what to write instead.
func TestA2ESDKChainRequestValidates(t *testing.T) {
	t.Parallel()
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	msg, err := sdk.Message("chain_req", map[string]any{"session_id": "s"})
	if err != nil {
		t.Fatal(err)
	}
	c, req, err := chain.DecodeDocument(msg, chain.Limits{})
	if err != nil || req == nil {
		t.Fatalf("decode: %v", err)
	}
	if req.CorrelationID != "" || c.Nodes[1].Condition != "$.input.n > `0`" {
		t.Fatalf("request: %+v", req)
	}
	issues := chain.ValidateWith(c, chain.ValidateOptions{})
	if chain.HasErrors(issues) || len(issues) != 1 || issues[0].Rule != chain.RuleNodeField || issues[0].NodeID != "pos" ||
		!strings.Contains(issues[0].Message, "read read.output.path") {
		t.Fatalf("issues: %v", issues)
	}
}
