package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// refundDoc: classify, then ask a person with a prompt that reads the run's
// input and classify's output, and the fields the approval names.
func refundDoc(prompt, fields, edges string) string {
	return `{"name":"refund","nodes":[
{"node_id":"classify","kind":"tool","name":"echo","input_map":{"category":"input.kind"}},
{"node_id":"ask","kind":"interrupt","config":{"prompt":` + prompt + fields + `}},
{"node_id":"pay","kind":"tool","name":"echo"},
{"node_id":"no","kind":"tool","name":"echo"}],
"edges":[{"source":"classify","target":"ask"}` + edges + `]}`
}

const refundEdges = `,{"source":"ask","target":"pay","label":"approved"},{"source":"ask","target":"no","label":"rejected"}`

func TestApprovalPromptIsATemplate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := refundDoc(`"Refund {{ input.order }} for {{ classify.output.category }}?"`,
		`,"fields":{"Order":"input.order","Amount":"input.amount","Category":"node_results.classify.category"}`, refundEdges)
	res := h.start(doc, map[string]any{"order": "A-17", "amount": 12.5, "kind": "billing"})
	wantStatus(t, res, chain.StatusPaused)
	if len(res.Pending) != 1 || res.Pending[0].Prompt != "Refund A-17 for billing?" {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	ap := res.Pending[0].Approval()
	if ap == nil || js(ap.Fields) != `[{"label":"Amount","value":12.5},{"label":"Category","value":"billing"},{"label":"Order","value":"A-17"}]` {
		t.Fatalf("fields = %s", js(ap))
	}
	// the event and the node's record carry the rendered prompt
	var evPrompt any
	for _, e := range h.sink.Events() {
		if e.Phase == engine.PhasePaused {
			evPrompt = e.Prompt
		}
	}
	if evPrompt != "Refund A-17 for billing?" || res.Nodes["ask"].Prompt != "Refund A-17 for billing?" {
		t.Errorf("event prompt %v, node prompt %v", evPrompt, res.Nodes["ask"].Prompt)
	}
}

// A prompt that is one placeholder is the value itself; placeholders inside
// an object prompt are rendered in place; plain text stays as it is.
func TestApprovalPromptShapes(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		`"{{ input }}"`: `{"kind":"x","order":"A-1"}`,
		`{"question":"Refund {{ input.order }}?","why":["{{ classify.output.category }}",3]}`: `{"question":"Refund A-1?","why":["x",3]}`,
		`"Approve? {\"approved\": true}"`: `"Approve? {\"approved\": true}"`,
	}
	for prompt, want := range cases {
		h := newHarness(t)
		res := h.start(refundDoc(prompt, "", refundEdges), map[string]any{"order": "A-1", "kind": "x"})
		if got := strings.TrimSpace(js(res.Pending[0].Prompt)); got != want {
			t.Errorf("%s: prompt = %s, want %s", prompt, got, want)
		}
	}
}

// A template that fails at run time fails the node with the field named;
// one that does not parse is refused before the run.
func TestApprovalPromptErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := strings.Replace(refundDoc(`{"q":"Refund {{ input.order.id }}?"}`, "", refundEdges), `"name":"refund"`, `"name":"refund","strict_conditions":true`, 1)
	res := h.start(doc, map[string]any{"kind": "x"})
	wantStatus(t, res, chain.StatusFailed)
	if res.Error == nil || !strings.Contains(res.Error.Message, `node "ask" failed: config.prompt.q: `) || !strings.Contains(res.Error.Message, "input.order") {
		t.Fatalf("error = %+v", res.Error)
	}

	c := mustDecode(t, refundDoc(`"Refund {{ input.order ?"`, `,"fields":{"Order":"input.order ==","":"x","Cat":"steps.classify.output.category","Typo":"clasify.output"}`, refundEdges))
	got := map[string]string{}
	for _, is := range chain.Validate(c) {
		if is.NodeID == "ask" {
			got[is.Field] += is.Rule + ": " + is.Message + "\n"
		}
	}
	want := map[string][]string{
		"config.prompt":       {"invalid_interrupt_config", "interrupt node", "config.prompt is not a valid template", "syntax error"},
		"config.fields.Order": {"invalid_interrupt_config", "config.fields.Order"},
		"config.fields":       {"empty label"},
		"config.fields.Cat":   {"unknown_name", "steps holds only the links a sequential dispatch already ran", "classify.output"},
		"config.fields.Typo":  {"unknown_name", "clasify", "did you mean classify"},
	}
	for field, parts := range want {
		for _, p := range parts {
			if !strings.Contains(got[field], p) {
				t.Errorf("%s: %q lacks %q", field, got[field], p)
			}
		}
	}
}

// The run's outcome tells a "no" from a failure: a reject down the
// rejected edge, a reject without one (the node fails), an answer with
// approved: false; an approve, or a run that broke, has none.
func TestRunOutcomeRejected(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, edges string
		answer      *engine.ResumeValue
		status      chain.RunStatus
		outcome     string
	}{
		{"reject_routed", refundEdges, answer("reject", nil, "no"), chain.StatusCompleted, engine.OutcomeRejected},
		{"reject_without_edge_fails", `,{"source":"ask","target":"pay"},{"source":"pay","target":"no"}`, answer("reject", nil, "no"), chain.StatusFailed, engine.OutcomeRejected},
		{"approved_false", `,{"source":"ask","target":"pay"},{"source":"pay","target":"no"}`, answer("respond", map[string]any{"approved": false}, ""), chain.StatusCompleted, engine.OutcomeRejected},
		{"approve", refundEdges, answer("approve", nil, ""), chain.StatusCompleted, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			res := h.start(refundDoc(`"ok?"`, "", tc.edges), map[string]any{"kind": "x"})
			if res.Outcome != "" {
				t.Fatalf("paused run has outcome %q", res.Outcome)
			}
			res2, err := h.resume(res.RunID, tc.answer, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, res2, tc.status)
			if res2.Outcome != tc.outcome {
				t.Errorf("outcome = %q, want %q", res2.Outcome, tc.outcome)
			}
			end, _ := h.cp.Load(context.Background(), res.RunID)
			if last := end[len(end)-1]; last.End == nil || last.End.Outcome != tc.outcome {
				t.Errorf("end record = %+v", last.End)
			}
		})
	}
	t.Run("broken_run", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(`{"name":"b","nodes":[{"node_id":"f","kind":"tool","name":"fail"}]}`, nil)
		wantStatus(t, res, chain.StatusFailed)
		if res.Outcome != "" {
			t.Errorf("outcome = %q", res.Outcome)
		}
	})
}
