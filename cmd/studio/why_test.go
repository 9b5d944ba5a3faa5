package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// `studio run --json` carries each routing decision in the events: what the
// branch evaluated, the value it read and the rule.
func TestRunJSONCarriesDecisions(t *testing.T) {
	t.Parallel()
	code, out, errs := studio(t, "run", "../../examples/branch.json", "--input", `{"items":[]}`, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, line := range strings.Split(out, "\n") {
		var ev struct {
			Type      string `json:"type"`
			NodeID    string `json:"node_id"`
			Phase     string `json:"phase"`
			Decisions []struct {
				Edge, Kind, Handle, Expr, Result, Rule, Outcome string
				Reads                                           []struct{ Path, Value string }
			} `json:"decisions"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.NodeID != "check" || ev.Phase != "done" {
			continue
		}
		if len(ev.Decisions) < 2 {
			t.Fatalf("decisions of the branch: %s", line)
		}
		d := ev.Decisions[0]
		if d.Kind != "branch_condition" || d.Handle != "false" || d.Result != "false" || d.Rule != "first_match" ||
			len(d.Reads) != 1 || d.Reads[0].Path != "output.items" || d.Reads[0].Value != "[]" {
			t.Errorf("the branch's test: %+v", d)
		}
		for _, e := range ev.Decisions[1:] {
			if e.Edge == "" || e.Outcome == "" {
				t.Errorf("an edge decision without its edge or outcome: %+v", e)
			}
		}
		return
	}
	t.Fatalf("no done event of check:\n%s", out)
}
