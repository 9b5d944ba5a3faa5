package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

// approveDoc: an expense approval whose answer must fit a schema, with a
// "rejected" edge and a timeout policy chosen per test.
func approveDoc(extra string, edges string) string {
	return `{"name":"exp","nodes":[
{"node_id":"ask","kind":"interrupt","config":{"prompt":"pay?","proposed":{"amount":10,"to":"bob"},
 "schema":{"type":"object","required":["amount"],"properties":{"amount":{"type":"number","maximum":100},"to":{"type":"string"}}}` + extra + `}},
{"node_id":"pay","kind":"tool","name":"echo"},
{"node_id":"no","kind":"tool","name":"echo"}],
"edges":[` + edges + `]}`
}

const edgesBoth = `{"source":"ask","target":"pay"},{"source":"ask","target":"no","label":"rejected"}`

func answer(action string, v any, comment string) *engine.ResumeValue {
	return &engine.ResumeValue{Value: v, Action: action, Comment: comment, By: "token", Address: "127.0.0.1"}
}

func TestApprovalAnswers(t *testing.T) {
	t.Parallel()
	t.Run("approve_without_value_outputs_the_proposed_value", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		wantStatus(t, res, chain.StatusPaused)
		res2, err := h.resume(res.RunID, answer("approve", nil, "fine"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if js(res2.Outputs["pay"]) != `{"amount":10,"to":"bob"}` {
			t.Errorf("pay = %s", js(res2.Outputs["pay"]))
		}
		wantNodes(t, res2, map[string]string{"pay": "done", "no": "skip/condition_false"})
	})
	t.Run("modify_then_approve_outputs_the_modified_value", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		res2, err := h.resume(res.RunID, answer("approve", map[string]any{"amount": 42}, ""), nil)
		if err != nil {
			t.Fatal(err)
		}
		if js(res2.Outputs["pay"]) != `{"amount":42}` {
			t.Errorf("pay = %s", js(res2.Outputs["pay"]))
		}
	})
	t.Run("a_value_failing_the_schema_is_refused_naming_the_field_and_the_pause_stays", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		_, err := h.resume(res.RunID, answer("approve", map[string]any{"amount": 500}, ""), nil)
		var ae *engine.AnswerError
		if !errors.As(err, &ae) || ae.Field != "/amount" || ae.NodeID != "ask" {
			t.Fatalf("err = %v (%#v)", err, ae)
		}
		if !strings.Contains(ae.Error(), "100") {
			t.Errorf("message = %q", ae.Error())
		}
		// not claimed: a good answer still goes through
		if _, err := h.resume(res.RunID, answer("respond", map[string]any{"amount": 5}, ""), nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reject_routes_along_the_rejected_edge_with_the_comment", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		res2, err := h.resume(res.RunID, answer("reject", nil, "too much"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		wantNodes(t, res2, map[string]string{"pay": "skip/condition_false", "no": "done"})
		if got := js(res2.Outputs["no"]); !strings.Contains(got, `"action":"reject"`) || !strings.Contains(got, `"comment":"too much"`) {
			t.Errorf("no = %s", got)
		}
	})
	t.Run("reject_without_a_rejected_edge_fails_the_node_with_code_rejected", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", `{"source":"ask","target":"pay"},{"source":"pay","target":"no"}`), nil)
		wantStatus(t, res, chain.StatusPaused)
		res2, err := h.resume(res.RunID, answer("reject", nil, "no way"), nil)
		if err != nil || res2.Status != chain.StatusFailed {
			t.Fatalf("result %+v err %v", res2, err)
		}
		if !strings.Contains(res2.Error.Message, "rejected by token: no way") {
			t.Errorf("error = %+v", res2.Error)
		}
		if res2.Nodes["ask"].Error == "" {
			t.Errorf("ask = %+v", res2.Nodes["ask"])
		}
	})
	t.Run("legacy_resume_without_action_outputs_the_value", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		res2, err := h.resume(res.RunID, val(map[string]any{"amount": 1}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if js(res2.Outputs["pay"]) != `{"amount":1}` {
			t.Errorf("pay = %s", js(res2.Outputs["pay"]))
		}
	})
	t.Run("unknown_action_is_refused", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		_, err := h.resume(res.RunID, answer("maybe", 1, ""), nil)
		var ae *engine.AnswerError
		if !errors.As(err, &ae) || ae.Field != "" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("the_answer_is_audited_in_the_resume_entry", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		if _, err := h.resume(res.RunID, answer("reject", nil, "nope"), nil); err != nil {
			t.Fatal(err)
		}
		log, _ := h.e.Checkpointer().Load(t.Context(), res.RunID)
		var rec *engine.ResumeRecord
		for _, cp := range log {
			if cp.Kind == engine.CheckpointResume {
				rec = cp.Resume
			}
		}
		if rec == nil || rec.Action != "reject" || rec.Comment != "nope" || rec.By != "token" || rec.Address != "127.0.0.1" || rec.At.IsZero() || rec.NodeID != "ask" {
			t.Errorf("resume entry = %+v", rec)
		}
	})
}

func TestApprovalTimeoutPolicies(t *testing.T) {
	t.Parallel()
	timeout := func(h *harness, doc string) *engine.Result {
		h.t.Helper()
		res := h.start(doc, nil)
		wantStatus(h.t, res, chain.StatusPaused)
		res2, err := h.resume(res.RunID, &engine.ResumeValue{Action: engine.ActionTimeout, By: "deadline"}, nil)
		if err != nil && res2 == nil {
			h.t.Fatal(err)
		}
		return res2
	}
	t.Run("reject_policy_takes_the_rejected_edge", func(t *testing.T) {
		res := timeout(newHarness(t), approveDoc(`,"timeout":"1h","on_timeout":"reject"`, edgesBoth))
		wantNodes(t, res, map[string]string{"pay": "skip/condition_false", "no": "done"})
	})
	t.Run("default_policy_answers_the_default_value", func(t *testing.T) {
		res := timeout(newHarness(t), approveDoc(`,"timeout":60,"on_timeout":"default","default_value":{"amount":0}`, edgesBoth))
		if js(res.Outputs["pay"]) != `{"amount":0}` {
			t.Errorf("pay = %s", js(res.Outputs["pay"]))
		}
	})
	t.Run("edge_policy_takes_the_timeout_edge", func(t *testing.T) {
		res := timeout(newHarness(t), approveDoc(`,"timeout":"30m","on_timeout":"edge"`,
			`{"source":"ask","target":"pay"},{"source":"ask","target":"no","label":"timeout"}`))
		wantNodes(t, res, map[string]string{"pay": "skip/condition_false", "no": "done"})
		if js(res.Outputs["no"]) != `{"action":"timeout"}` {
			t.Errorf("no = %s", js(res.Outputs["no"]))
		}
	})
	t.Run("the_pause_records_its_deadline", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc(`,"timeout":"30m"`, edgesBoth), nil)
		log, _ := h.e.Checkpointer().Load(t.Context(), res.RunID)
		for _, cp := range log {
			if cp.Kind == engine.CheckpointPause {
				a := cp.Pause.Approval
				if a == nil || a.OnTimeout != "reject" || a.Deadline.IsZero() || js(a.Proposed) != `{"amount":10,"to":"bob"}` {
					t.Errorf("approval = %+v", a)
				}
				return
			}
		}
		t.Fatal("no pause entry")
	})
	t.Run("a_timeout_answer_to_a_node_without_deadline_is_refused", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approveDoc("", edgesBoth), nil)
		_, err := h.resume(res.RunID, &engine.ResumeValue{Action: engine.ActionTimeout}, nil)
		var ae *engine.AnswerError
		if !errors.As(err, &ae) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestInterruptConfigValidation(t *testing.T) {
	t.Parallel()
	cases := []struct{ extra, edges, field, phrase string }{
		{`,"timeout":"soon"`, edgesBoth, "config.timeout", "duration"},
		{`,"deadline":"tomorrow"`, edgesBoth, "config.deadline", "RFC 3339"},
		{`,"timeout":60,"on_timeout":"explode"`, edgesBoth, "config.on_timeout", "reject, default or edge"},
		{`,"on_timeout":"reject"`, edgesBoth, "config.on_timeout", "without a deadline"},
		{`,"timeout":60,"on_timeout":"default"`, edgesBoth, "config.default_value", "required"},
		{`,"timeout":60,"on_timeout":"default","default_value":{"amount":1000}`, edgesBoth, "config.default_value", "/amount"},
		{`,"timeout":60,"on_timeout":"edge"`, edgesBoth, "config.on_timeout", `labelled "timeout"`},
		{`,"escalation":"ftp://x"`, edgesBoth, "config.escalation", "http or https"},
		{`,"escalation":"http://127.0.0.1:1/h","notify_before":60`, edgesBoth, "config.notify_before", "deadline"},
		{`,"approvers":["ok",""]`, edgesBoth, "config.approvers[1]", "non-empty"},
	}
	for _, tc := range cases {
		c, err := chain.Decode([]byte(approveDoc(tc.extra, tc.edges)), chain.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, is := range chain.Validate(c) {
			if is.Rule == chain.RuleInterruptConfig && is.Field == tc.field && strings.Contains(is.Message, tc.phrase) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no %s issue with %q in %v", tc.extra, tc.field, tc.phrase, chain.Validate(c))
		}
	}
	bad := `{"name":"x","nodes":[{"node_id":"a","kind":"interrupt","config":{"schema":{"type":"nope"}}}],"edges":[]}`
	c, _ := chain.Decode([]byte(bad), chain.Limits{})
	if is := chain.Validate(c); len(is) == 0 || is[0].Field != "config.schema" {
		t.Errorf("bad schema: %v", is)
	}
	ok, _ := chain.Decode([]byte(approveDoc(`,"timeout":"1h","on_timeout":"default","default_value":{"amount":1},"escalation":"http://127.0.0.1:9/x","notify_before":"10m","approvers":["finance"]`, edgesBoth)), chain.Limits{})
	if is := chain.Validate(ok); chain.HasErrors(is) {
		t.Errorf("valid config has issues: %v", is)
	}
}

// A chain test's mock of an approval node answers as approve: the
// approved path runs, the rejected one is pruned.
func TestApprovalMockRoutesApproved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	c, err := chain.Decode([]byte(approveDoc("", edgesBoth)), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Run(t.Context(), enginetest.PlanOf(h.e, c), nil, engine.RunOptions{Mocks: map[string]any{"ask": map[string]any{"amount": 3}}})
	if err != nil {
		t.Fatal(err)
	}
	wantNodes(t, res, map[string]string{"pay": "done", "no": "skip/condition_false"})
}

// An answer only answers: one that carries a state patch is refused before
// anything is claimed (the approved step must do what the person saw), and
// the same answer without it then goes in with the state untouched.
func TestAnswerWithStatePatchIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"patch","nodes":[
{"node_id":"ask","kind":"interrupt","config":{"prompt":"pay?","proposed":{"amount":10}}},
{"node_id":"pay","kind":"tool","name":"echo","input_map":{"amount":"ask.output.amount","payee":"state.payee"}}],
"edges":[{"source":"ask","target":"pay"}]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusPaused)
	_, err := h.resume(res.RunID, answer("approve", nil, ""), map[string]any{"payee": "mallory"})
	var re *engine.ChainResumeError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "modified_state") {
		t.Fatalf("answer with a state patch: err = %v", err)
	}
	res2, err := h.resume(res.RunID, answer("approve", nil, ""), nil)
	if err != nil {
		t.Fatal(err)
	}
	if js(res2.Outputs["pay"]) != `{"amount":10,"payee":null}` {
		t.Errorf("pay = %s", js(res2.Outputs["pay"]))
	}
}

// NewAnswer is the answer every door sends: on an interrupt node with a
// prompt only, approve outputs the node's input and the run goes on, reject
// fails the node with code rejected (no rejected edge), and a value given
// with reject is not the node's output.
func TestNewAnswerMeansOneThing(t *testing.T) {
	t.Parallel()
	doc := `{"name":"plain","nodes":[{"node_id":"r","kind":"tool","name":"echo","input":{"amount":7}},
{"node_id":"ask","kind":"interrupt","config":{"prompt":"ok?"}},
{"node_id":"after","kind":"tool","name":"echo","input_map":{"answer":"ask.output"}}],
"edges":[{"source":"r","target":"ask"},{"source":"ask","target":"after"}]}`
	h := newHarness(t)
	res := h.start(doc, nil)
	res2, err := h.resume(res.RunID, engine.NewAnswer(engine.ActionApprove, nil, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	if js(res2.Outputs["after"]) != `{"answer":{"amount":7}}` {
		t.Errorf("approve: after = %s", js(res2.Outputs["after"]))
	}
	res = h.start(doc, nil)
	res2, err = h.resume(res.RunID, engine.NewAnswer(engine.ActionReject, map[string]any{"approved": true}, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusFailed)
	if _, ran := res2.Outputs["after"]; ran || res2.Error == nil || !strings.Contains(res2.Error.Message, "rejected") {
		t.Errorf("reject: outputs %v, error %+v", res2.Outputs, res2.Error)
	}
}
