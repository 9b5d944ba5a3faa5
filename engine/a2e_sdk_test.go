package engine_test

import (
	"strings"
	"testing"

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
