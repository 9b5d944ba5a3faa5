package agent

import (
	"strings"
	"testing"
)

// The example set in examples/agents loads and runs offline.
func TestExampleAgents(t *testing.T) {
	t.Parallel()
	s, err := LoadDir("../../examples/agents", LoadOptions{Tools: func(n string) bool { _, ok := testRegistry().Get(n); return ok }})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), " "); got != "crm-logger email-composer human-triage sales-qualifier" {
		t.Fatalf("agents: %s", got)
	}
	_, r := runAgent(t, s, "sales-qualifier", "Ana at ACME", map[string]any{"budget": 60000, "timeline_days": 14})
	if d := r.Result["data"].(map[string]any); d["score"] != float64(9) || d["urgent"] != true {
		t.Fatalf("qualifier: %+v", r.Result)
	}
	e := wantLink(t, r, "email-composer", "success", "")
	if !strings.HasPrefix(*e.Answer, "Hi Ana at ACME -- thanks") {
		t.Fatalf("email: %q", *e.Answer)
	}
	c := wantLink(t, r, "crm-logger", "success", "")
	if !strings.Contains(string(c.Data), `"logged":true`) || c.DataError != nil {
		t.Fatalf("crm: %s %v", c.Data, c.DataError)
	}
	wantLink(t, r, "human-triage", "skipped", "condition_false")
	if r.Chain.Status != "completed" {
		t.Fatalf("status %s", r.Chain.Status)
	}

	_, r = runAgent(t, s, "sales-qualifier", "Bob at Tiny", map[string]any{"budget": 500, "timeline_days": 90})
	if d := r.Result["data"].(map[string]any); d["score"] != float64(2) || d["urgent"] != false {
		t.Fatalf("qualifier: %+v", r.Result)
	}
	wantLink(t, r, "email-composer", "skipped", "condition_false")
	wantLink(t, r, "crm-logger", "success", "")
	wantLink(t, r, "human-triage", "success", "")

	// The agent page's form sends a query and an empty context: the lead's
	// facts are unknown, it scores low, and the chain completes all the same.
	for _, ctx := range []map[string]any{{}, nil} {
		_, r = runAgent(t, s, "sales-qualifier", "Carla at Unknown", ctx)
		if d, _ := r.Result["data"].(map[string]any); d == nil || d["score"] != float64(2) || d["urgent"] != false || r.Result["data_error"] != nil {
			t.Fatalf("context %v: qualifier: %+v", ctx, r.Result)
		}
		wantLink(t, r, "email-composer", "skipped", "condition_false")
		wantLink(t, r, "crm-logger", "success", "")
		wantLink(t, r, "human-triage", "success", "")
		if r.Chain.Status != "completed" {
			t.Fatalf("context %v: chain status %s", ctx, r.Chain.Status)
		}
	}
}
