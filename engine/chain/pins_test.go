package chain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const pinsDoc = `{"name":"p","nodes":[
	{"node_id":"fetch","kind":"tool","name":"http"},
	{"node_id":"route","kind":"branch","condition":"output.ok"},
	{"node_id":"yes","kind":"tool","name":"echo"},
	{"node_id":"no","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"route"},{"source":"route","target":"yes","label":"true"},{"source":"route","target":"no","label":"false"}],
	"pinned_outputs":%s}`

func TestPinsRoundTripAndExport(t *testing.T) {
	c, err := Decode([]byte(strings.Replace(pinsDoc, "%s", `{"fetch": {"status": 200, "body": {"ok": true}}}`, 1)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"status": float64(200), "body": map[string]any{"ok": true}}
	if !EqualJSON(c.PinnedOutputs["fetch"], want) {
		t.Fatalf("pin = %#v, want %#v", c.PinnedOutputs["fetch"], want)
	}
	b, err := MarshalExport(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"pinned_outputs": {`) {
		t.Fatalf("export lacks the pins:\n%s", b)
	}
	again, err := Decode(b, Limits{})
	if err != nil || !EqualJSON(again.PinnedOutputs, c.PinnedOutputs) {
		t.Fatalf("re-imported pins = %v, %v", again.PinnedOutputs, err)
	}
	if issues := PinIssues(c); issues != nil {
		t.Errorf("a pin of an existing tool node gave issues %v", issues)
	}
}

// TestPinIssues: a pin of no node and a pin of a router are errors naming
// the pin's field (and the node when there is one); Validate reports them,
// Compile does not (a stale pin never stops a published run).
func TestPinIssues(t *testing.T) {
	c, err := Decode([]byte(strings.Replace(pinsDoc, "%s", `{"gone": 1, "route": {"ok": true}, "yes": "fine"}`, 1)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := PinIssues(c)
	want := []Issue{
		{Rule: RulePinUnknownNode, Severity: SeverityError, Field: "pinned_outputs.gone"},
		{Rule: RulePinRouter, Severity: SeverityError, NodeID: "route", Field: "pinned_outputs.route"},
	}
	if len(got) != len(want) {
		t.Fatalf("issues = %v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Rule != w.Rule || g.Severity != w.Severity || g.NodeID != w.NodeID || g.Field != w.Field {
			t.Errorf("issue %d = %+v, want %+v", i, g, w)
		}
	}
	if !strings.Contains(got[0].Message, `no node "gone"`) || !strings.Contains(got[1].Message, "pin the node before it") {
		t.Errorf("messages: %q, %q", got[0].Message, got[1].Message)
	}
	var seen []string
	for _, is := range Validate(c) {
		if strings.HasPrefix(is.Rule, "pin_") {
			seen = append(seen, is.String())
		}
	}
	if len(seen) != 2 || seen[0] != `pinned_outputs.gone: no node "gone": its node was removed or renamed; unpin it [pin_unknown_node]` {
		t.Errorf("Validate's pin issues = %q", seen)
	}
	p, err := Compile(c, ValidateOptions{})
	if err != nil || !p.Valid() {
		t.Fatalf("Compile refused a chain whose only problems are pins: %v", err)
	}
	for _, is := range p.Issues() {
		if strings.HasPrefix(is.Rule, "pin_") {
			t.Errorf("Compile reported %v", is)
		}
	}
}

func TestDecodePinsErrors(t *testing.T) {
	big := `"` + strings.Repeat("x", 600) + `"`
	cases := []struct {
		pins, path, phrase string
		lim                Limits
	}{
		{`{"fetch": ` + big + `, "yes": ` + big + `}`, "pinned_outputs.fetch", "the pinned outputs together are 1204 bytes, over the limit of 1000: pin a smaller output", Limits{MaxPinnedBytes: 1000}},
		{`{"": 1}`, "pinned_outputs.", "needs the node id", Limits{}},
		{`{"` + strings.Repeat("a", 300) + `": 1}`, "pinned_outputs." + strings.Repeat("a", 64), "over the limit of 256", Limits{}},
		{`{"a\u0001": 1}`, "pinned_outputs.a", "control characters", Limits{}},
		{`[1]`, "pinned_outputs", "wrong type", Limits{}},
	}
	for _, tc := range cases {
		_, err := Decode([]byte(strings.Replace(pinsDoc, "%s", tc.pins, 1)), tc.lim)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%.40s: want a DecodeError, got %v", tc.pins, err)
			continue
		}
		if !strings.HasPrefix(de.Path, tc.path) || !strings.Contains(err.Error(), tc.phrase) {
			t.Errorf("%.40s: got path %q, error %q; want path %q and %q", tc.pins, de.Path, err, tc.path, tc.phrase)
		}
		if tc.lim.MaxPinnedBytes > 0 && de.Rule != DecodeOverLimit {
			t.Errorf("rule = %q, want %q", de.Rule, DecodeOverLimit)
		}
	}
	// the default limit: 2 MiB of pins together
	huge := `{"fetch": "` + strings.Repeat("x", DefaultLimits.MaxPinnedBytes) + `"}`
	if _, err := Decode([]byte(strings.Replace(pinsDoc, "%s", huge, 1)), Limits{}); err == nil || !strings.Contains(err.Error(), "over the limit of 2097152") {
		t.Errorf("a 2 MiB pin: %v", err)
	}
	// DecodeAll lists the problem too, with its place
	_, probs := DecodeAll([]byte(strings.Replace(pinsDoc, "%s", `{"fetch": `+big+`}`, 1)), Limits{MaxPinnedBytes: 100})
	if len(probs) != 1 || probs[0].Path != "pinned_outputs.fetch" || probs[0].Rule != DecodeOverLimit {
		t.Errorf("DecodeAll = %+v", probs)
	}
}

// TestPatchKeepsPins: a patch's chain fields carry the pins (the designer's
// autosave sends them with the other top-level fields).
func TestPatchKeepsPins(t *testing.T) {
	c, err := Decode([]byte(strings.Replace(pinsDoc, "%s", `{"fetch": 1}`, 1)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]any{"name": "p", "pinned_outputs": map[string]any{"fetch": 2, "yes": "y"}}
	b, _ := json.Marshal(map[string]any{"chain": top})
	if err := ApplyPatch(c, b, Limits{}); err != nil {
		t.Fatal(err)
	}
	if !EqualJSON(c.PinnedOutputs, map[string]any{"fetch": 2, "yes": "y"}) || len(c.Nodes) != 4 {
		t.Fatalf("patched pins = %v (%d nodes)", c.PinnedOutputs, len(c.Nodes))
	}
	b, _ = json.Marshal(map[string]any{"chain": map[string]any{"name": "p"}})
	if err := ApplyPatch(c, b, Limits{}); err != nil || c.PinnedOutputs != nil {
		t.Fatalf("a patch without pins left %v (%v)", c.PinnedOutputs, err)
	}
}
