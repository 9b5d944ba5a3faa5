package a2e_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

func TestNewEventMessage(t *testing.T) {
	t.Parallel()
	at := time.Unix(1716123456, 789000000)
	one := 1
	cases := []struct {
		ev         engine.Event
		output     any
		errMessage string
		data       string
	}{
		{engine.Event{Seq: 1, NodeID: "a", Phase: engine.PhaseStart, Time: at}, nil, "", `{}`},
		{engine.Event{Seq: 2, NodeID: "a", Phase: engine.PhaseDone, Output: "out", Time: at}, "out", "", `{}`},
		{engine.Event{Seq: 3, NodeID: "b", Phase: engine.PhaseError, Error: "boom", Time: at}, nil, "boom", `{}`},
		// A2E: output only on done, error only on error; the rest is data.
		{engine.Event{Seq: 4, NodeID: "c", Phase: engine.PhaseProgress, Progress: 0.5, Time: at}, nil, "", `{"progress":0.5}`},
		{engine.Event{Seq: 5, NodeID: "d", Phase: engine.PhasePaused, Prompt: "ok?", Time: at}, nil, "", `{"prompt":"ok?"}`},
		{engine.Event{Seq: 6, NodeID: "e", Phase: engine.PhaseSkip, Error: "disk", Reason: engine.ReasonOnErrorSkip, Time: at}, nil, "", `{"reason":"on_error_skip"}`},
		{engine.Event{Seq: 7, NodeID: "body", Phase: engine.PhaseDone, Output: "x", Item: &one, Time: at}, "x", "", `{"item":1}`},
		{engine.Event{Seq: 8, NodeID: "body", Phase: engine.PhaseError, Error: "e", Reason: "retrying", Item: &one, Time: at}, nil, "e", `{"item":1,"reason":"retrying"}`},
	}
	for _, c := range cases {
		m := a2e.NewEventMessage("req", c.ev)
		if m.Type != a2e.TypeEvent || m.Version != "1.0" || m.ReqID != "req" || m.ID == "" || m.Seq != c.ev.Seq ||
			m.NodeID != c.ev.NodeID || m.Phase != c.ev.Phase || m.Output != c.output || m.Error != c.errMessage || m.Ts != 1716123456.789 ||
			enginetest.JSON(m.Data) != c.data {
			t.Fatalf("%+v → %+v", c.ev, m)
		}
		b, _ := json.Marshal(m)
		var raw map[string]any
		_ = json.Unmarshal(b, &raw)
		if len(raw) != 11 {
			t.Fatalf("chain/event has %d fields: %s", len(raw), b)
		}
	}
}

func TestNewResponseMessage(t *testing.T) {
	t.Parallel()
	req := &chain.Request{ID: "r", ChainID: "c"}
	for _, c := range []struct {
		res     engine.Result
		success bool
		code    string
	}{
		{engine.Result{Status: chain.StatusCompleted}, true, ""},
		{engine.Result{Status: chain.StatusPartial}, false, engine.CodeNodeError}, // a handled failure is not success
		{engine.Result{Status: chain.StatusPartial, Nodes: map[string]*engine.NodeResult{
			"a": {NodeID: "a", Status: engine.PhaseSkip, Reason: engine.ReasonOnErrorSkip, Error: "disk"}}}, false, engine.CodeNodeError},
		{engine.Result{Status: chain.StatusFailed, Error: &engine.RunError{Code: engine.CodeNodeError, Message: "x", NodeID: "n"}}, false, engine.CodeNodeError},
		{engine.Result{Status: chain.StatusPaused, Pending: []engine.Pending{{NodeID: "ask"}}}, false, a2e.CodePaused},
		{engine.Result{Status: chain.StatusCancelled}, false, "chain_cancelled"},
	} {
		m := a2e.NewResponseMessage(req, &c.res)
		if m.Success != c.success || m.ReqID != "r" || m.ChainID != "c" || m.Outputs == nil || (m.Error == nil) != (c.code == "") {
			t.Fatalf("%s: %+v", c.res.Status, m)
		}
		if m.Error != nil && m.Error.Code != c.code {
			t.Fatalf("%s: code %s", c.res.Status, m.Error.Code)
		}
	}
	b, _ := json.Marshal(a2e.NewResponseMessage(req, &engine.Result{Status: chain.StatusCompleted}))
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	if len(raw) != 12 || raw["error"] != nil || raw["outputs"] == nil {
		t.Fatalf("chain/resp: %s", b)
	}
}

// A2E: success means every node completed without error. A failure handled
// by on_error skip makes it false, the run stays partial, and the wire
// carries the failure in an error event before the skip; with an error handler the handler's output
// is final_output (the node that ended that path).
func TestA2EHandledFailuresOnTheWire(t *testing.T) {
	t.Parallel()
	run := func(doc string) (*engine.Result, []a2e.EventMessage) {
		t.Helper()
		res, msgs, _ := a2eExchange(t, doc)
		return res, msgs
	}

	res, msgs := run(`{"type":"chain/req","id":"s","nodes":[
		{"node_id":"a","kind":"tool","name":"fail","input":{"message":"flaky disk"},"on_error":"skip","next_node":"b"},
		{"node_id":"b","kind":"tool","name":"echo","input":{"v":1}}]}`)
	m := a2e.NewResponseMessage(&chain.Request{ID: "s"}, res)
	if res.Status != chain.StatusPartial || m.Success || m.Error == nil || m.Error.NodeID != "a" {
		t.Fatalf("skip: status %s, resp %s", res.Status, enginetest.JSON(m))
	}
	// The failure is an error event with the message, its reason the
	// policy; then the skip, without error (A2E: error only on "error").
	var got []string
	for _, e := range msgs {
		if e.NodeID == "a" {
			got = append(got, string(e.Phase)+"|"+e.Error+"|"+enginetest.JSON(e.Data))
		}
	}
	if strings.Join(got, " ") != `start||{} error|flaky disk|{"reason":"on_error_skip"} skip||{"reason":"on_error_skip"}` {
		t.Fatalf("events of a: %v", got)
	}

	res, _ = run(`{"type":"chain/req","id":"h","nodes":[
		{"node_id":"a","kind":"tool","name":"fail","input":{"message":"boom"},"on_error":"fix"},
		{"node_id":"fix","kind":"tool","name":"echo","input":{"recovered":true}}]}`)
	m = a2e.NewResponseMessage(&chain.Request{ID: "h"}, res)
	if res.Status != chain.StatusPartial || m.Success || enginetest.JSON(m.FinalOutput) != `{"recovered":true}` {
		t.Fatalf("handler: status %s, resp %s", res.Status, enginetest.JSON(m))
	}

	// A branch not taken is a skip without error, and the run succeeds.
	res, msgs = run(`{"type":"chain/req","id":"b","initial_input":{"n":5},"entry_node":"check","nodes":[
		{"node_id":"check","kind":"branch","condition":"$.input.n > ` + "`0`" + `","true_node":"pos","false_node":"neg","name":"","next_node":"","on_error":"abort","items_path":"","map_node":"","input":{},"input_map":{}},
		{"node_id":"pos","kind":"tool","name":"echo","input_map":{"n":"$.input.n"}},
		{"node_id":"neg","kind":"tool","name":"echo"}]}`)
	m = a2e.NewResponseMessage(&chain.Request{ID: "b"}, res)
	if !m.Success || enginetest.JSON(m.FinalOutput) != `{"n":5}` {
		t.Fatalf("branch: %s", enginetest.JSON(m))
	}
	for _, e := range msgs {
		if e.Phase == engine.PhaseSkip && e.Error != "" {
			t.Fatalf("routing skip with an error: %s", enginetest.JSON(e))
		}
	}
}

// a2eExchange runs a chain/req the way the A2E door does and returns the
// chain/event messages and the closing chain/resp, each checked against the
// SDK's schema of its type.
func a2eExchange(t *testing.T, doc string) (*engine.Result, []a2e.EventMessage, a2e.ResponseMessage) {
	t.Helper()
	sdk, err := enginetest.LoadA2ESDK()
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngine()
	c, req, err := chain.DecodeDocument([]byte(doc), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []a2e.EventMessage
	sink := engine.SinkFunc(func(ev engine.Event) { msgs = append(msgs, a2e.NewEventMessage(req.ID, ev)) })
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), req.InitialInput, engine.RunOptions{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	resp := a2e.NewResponseMessage(req, res)
	for _, m := range append([]any{resp}, anys(msgs)...) {
		b, _ := json.Marshal(m)
		if err := sdk.Check(b); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range msgs { // A2E: output only on done, error only on error
		if m.Output != nil && m.Phase != engine.PhaseDone || m.Error != "" && m.Phase != engine.PhaseError {
			t.Fatalf("%s event with output %s, error %q", m.Phase, enginetest.JSON(m.Output), m.Error)
		}
	}
	return res, msgs, resp
}

func anys[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// parallel_failure_mode continue (the default) collects every result: a
// failing branch is an {"error": …} entry in declaration order, the
// parallel node completes, and the run is partial, so success is false.
func TestA2EParallelContinueCollectsBranchErrors(t *testing.T) {
	t.Parallel()
	res, _, resp := a2eExchange(t, `{"type":"chain/req","id":"pc","nodes":[
		{"node_id":"p","kind":"parallel","branches":["ok","boom"]},
		{"node_id":"ok","kind":"tool","name":"echo","input":{"v":"good"}},
		{"node_id":"boom","kind":"tool","name":"fail","input":{"message":"kaboom"}}]}`)
	if res.Status != chain.StatusPartial || res.Nodes["p"].Status != engine.PhaseDone {
		t.Fatalf("status %s, p %s: %s", res.Status, res.Nodes["p"].Status, enginetest.JSON(res.Error))
	}
	if enginetest.JSON(resp.Outputs["p"]) != `[{"v":"good"},{"error":"kaboom"}]` || enginetest.JSON(resp.FinalOutput) != enginetest.JSON(resp.Outputs["p"]) {
		t.Fatalf("outputs %s, final_output %s", enginetest.JSON(resp.Outputs), enginetest.JSON(resp.FinalOutput))
	}
	if resp.Success || resp.Error == nil || resp.Error.Code != engine.CodeNodeError || resp.Error.NodeID != "p" {
		t.Fatalf("chain/resp: %s", enginetest.JSON(resp))
	}
}

// Every per-item event of a map body says which item it is (data.item), so
// an agent tells the items apart; a failing item is collected and the map's
// next_node runs.
func TestA2EMapItemEventsCarryTheItem(t *testing.T) {
	t.Parallel()
	res, msgs, resp := a2eExchange(t, `{"type":"chain/req","id":"mi","initial_input":{"files":[1,-5,2]},"entry_node":"batch","nodes":[
		{"node_id":"batch","kind":"map","items_path":"input.files","map_node":"process_file","next_node":"report"},
		{"node_id":"process_file","kind":"tool","name":"delay","input_map":{"ms":"item"}},
		{"node_id":"report","kind":"tool","name":"echo","input_map":{"n":"length(batch.output)"}}]}`)
	if res.Status != chain.StatusPartial || enginetest.JSON(resp.Outputs["report"]) != `{"n":3}` || resp.Success {
		t.Fatalf("status %s, resp %s", res.Status, enginetest.JSON(resp))
	}
	perItem := map[string][]string{}
	for _, m := range msgs {
		if m.NodeID != "process_file" {
			continue
		}
		item, ok := m.Data["item"].(float64)
		if !ok {
			t.Fatalf("%s event of process_file without data.item: %s", m.Phase, enginetest.JSON(m))
		}
		k := enginetest.JSON(item)
		perItem[k] = append(perItem[k], string(m.Phase)+"|"+m.Error)
	}
	want := map[string]string{"0": "start| done|", "1": `start| error|delay: field "ms" must be >= 0, got -5`, "2": "start| done|"}
	for k, w := range want {
		if strings.Join(perItem[k], " ") != w {
			t.Errorf("item %s: %v, want %s", k, perItem[k], w)
		}
	}
	if len(perItem) != 3 {
		t.Errorf("items on the wire: %v", perItem)
	}
}

// The terminal-node rule with an error handler: bad fails (its next_node
// after is skipped), its handler fix completes and nothing depends on it, so
// fix ends that path and gives final_output.
func TestA2EFinalOutputFromAHandler(t *testing.T) {
	t.Parallel()
	res, _, resp := a2eExchange(t, `{"type":"chain/req","id":"fo","entry_node":"bad","nodes":[
		{"node_id":"bad","kind":"tool","name":"fail","input":{"message":"no"},"next_node":"after","on_error":"fix"},
		{"node_id":"after","kind":"tool","name":"echo","input":{"v":"after"}},
		{"node_id":"fix","kind":"tool","name":"echo","input":{"v":"fixed"}}]}`)
	if res.Status != chain.StatusPartial || res.Nodes["after"].Status != engine.PhaseSkip {
		t.Fatalf("status %s, after %s", res.Status, res.Nodes["after"].Status)
	}
	if enginetest.JSON(res.FinalOutput) != `{"v":"fixed"}` || enginetest.JSON(resp.FinalOutput) != `{"v":"fixed"}` || enginetest.JSON(resp.Outputs) != `{"fix":{"v":"fixed"}}` {
		t.Fatalf("final_output %s, outputs %s", enginetest.JSON(resp.FinalOutput), enginetest.JSON(resp.Outputs))
	}
}

// An A2E answer to a run stopped by a budget carries the budget in
// error.details.
func TestBudgetInA2EResponse(t *testing.T) {
	t.Parallel()
	reg := engine.NewRegistry()
	reg.RegisterAll(builtin.Tools(builtin.Options{}))
	eng := engine.New(engine.Options{Registry: reg, Limits: chain.Limits{MaxNodeExecutions: 5}})
	c, err := chain.Decode([]byte(`{"name":"loop","nodes":[
		{"node_id":"a","kind":"tool","name":"echo","input_map":{"s":"input.s"}},
		{"node_id":"b","kind":"tool","name":"echo","input_map":{"s":"input.s"}}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"a","max_iterations":1000}]}`), chain.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Run(context.Background(), enginetest.PlanOf(eng, c), map[string]any{"s": "x"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := a2e.NewResponseMessage(&chain.Request{ID: "r1", ChainID: "c"}, res)
	if m.Success || m.Error == nil || m.Error.Code != engine.CodeBudget || m.Error.Details["budget"] != chain.BudgetNodeExecutions {
		t.Fatalf("A2E error %+v", m.Error)
	}
}
