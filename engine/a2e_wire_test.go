package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
)

func TestNewEventMessage(t *testing.T) {
	t.Parallel()
	at := time.Unix(1716123456, 789000000)
	cases := []struct {
		ev         engine.Event
		output     any
		errMessage string
	}{
		{engine.Event{Seq: 1, NodeID: "a", Phase: engine.PhaseStart, Time: at}, nil, ""},
		{engine.Event{Seq: 2, NodeID: "a", Phase: engine.PhaseDone, Output: "out", Time: at}, "out", ""},
		{engine.Event{Seq: 3, NodeID: "b", Phase: engine.PhaseError, Error: "boom", Time: at}, nil, "boom"},
		{engine.Event{Seq: 4, NodeID: "c", Phase: engine.PhaseProgress, Progress: 0.5, Time: at}, 0.5, ""},
		{engine.Event{Seq: 5, NodeID: "d", Phase: engine.PhasePaused, Prompt: "ok?", Time: at}, "ok?", ""},
	}
	for _, c := range cases {
		m := engine.NewEventMessage("req", c.ev)
		if m.Type != engine.TypeEvent || m.Version != "1.0" || m.ReqID != "req" || m.ID == "" || m.Seq != c.ev.Seq ||
			m.NodeID != c.ev.NodeID || m.Phase != c.ev.Phase || m.Output != c.output || m.Error != c.errMessage || m.Ts != 1716123456.789 {
			t.Fatalf("%+v → %+v", c.ev, m)
		}
		b, _ := json.Marshal(m)
		var raw map[string]any
		_ = json.Unmarshal(b, &raw)
		if len(raw) != 10 {
			t.Fatalf("chain/event has %d fields: %s", len(raw), b)
		}
	}
}

func TestNewResponseMessage(t *testing.T) {
	t.Parallel()
	req := &engine.Request{ID: "r", ChainID: "c"}
	for _, c := range []struct {
		res     engine.Result
		success bool
		code    string
	}{
		{engine.Result{Status: engine.StatusCompleted}, true, ""},
		{engine.Result{Status: engine.StatusPartial}, false, engine.CodeNodeError}, // a handled failure is not success
		{engine.Result{Status: engine.StatusPartial, Nodes: map[string]*engine.NodeResult{
			"a": {NodeID: "a", Status: engine.PhaseSkip, Reason: engine.ReasonOnErrorSkip, Error: "disk"}}}, false, engine.CodeNodeError},
		{engine.Result{Status: engine.StatusFailed, Error: &engine.RunError{Code: engine.CodeNodeError, Message: "x", NodeID: "n"}}, false, engine.CodeNodeError},
		{engine.Result{Status: engine.StatusPaused, Pending: []engine.Pending{{NodeID: "ask"}}}, false, engine.CodePaused},
		{engine.Result{Status: engine.StatusCancelled}, false, "chain_cancelled"},
	} {
		m := engine.NewResponseMessage(req, &c.res)
		if m.Success != c.success || m.ReqID != "r" || m.ChainID != "c" || m.Outputs == nil || (m.Error == nil) != (c.code == "") {
			t.Fatalf("%s: %+v", c.res.Status, m)
		}
		if m.Error != nil && m.Error.Code != c.code {
			t.Fatalf("%s: code %s", c.res.Status, m.Error.Code)
		}
	}
	b, _ := json.Marshal(engine.NewResponseMessage(req, &engine.Result{Status: engine.StatusCompleted}))
	var raw map[string]any
	_ = json.Unmarshal(b, &raw)
	if len(raw) != 12 || raw["error"] != nil || raw["outputs"] == nil {
		t.Fatalf("chain/resp: %s", b)
	}
}

// A2E: success means every node completed without error. A failure handled
// by on_error skip makes it false, the run stays partial, and the skip event
// on the wire carries the error; with an error handler the handler's output
// is final_output (the node that ended that path).
func TestA2EHandledFailuresOnTheWire(t *testing.T) {
	t.Parallel()
	run := func(doc string) (*engine.Result, []engine.EventMessage) {
		t.Helper()
		h := newHarness(t)
		c, req, err := engine.DecodeDocument([]byte(doc), engine.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []engine.EventMessage
		sink := engine.SinkFunc(func(ev engine.Event) { msgs = append(msgs, engine.NewEventMessage(req.ID, ev)) })
		res, err := h.e.Run(context.Background(), c, req.InitialInput, engine.RunOptions{Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		return res, msgs
	}

	res, msgs := run(`{"type":"chain/req","id":"s","nodes":[
		{"node_id":"a","kind":"tool","name":"fail","input":{"message":"flaky disk"},"on_error":"skip","next_node":"b"},
		{"node_id":"b","kind":"tool","name":"echo","input":{"v":1}}]}`)
	m := engine.NewResponseMessage(&engine.Request{ID: "s"}, res)
	if res.Status != engine.StatusPartial || m.Success || m.Error == nil || m.Error.NodeID != "a" {
		t.Fatalf("skip: status %s, resp %s", res.Status, js(m))
	}
	var skip *engine.EventMessage
	for i := range msgs {
		if msgs[i].Phase == engine.PhaseSkip && msgs[i].NodeID == "a" {
			skip = &msgs[i]
		}
	}
	if skip == nil || !strings.Contains(skip.Error, "flaky disk") {
		t.Fatalf("skip event of a: %s", js(skip))
	}

	res, _ = run(`{"type":"chain/req","id":"h","nodes":[
		{"node_id":"a","kind":"tool","name":"fail","input":{"message":"boom"},"on_error":"fix"},
		{"node_id":"fix","kind":"tool","name":"echo","input":{"recovered":true}}]}`)
	m = engine.NewResponseMessage(&engine.Request{ID: "h"}, res)
	if res.Status != engine.StatusPartial || m.Success || js(m.FinalOutput) != `{"recovered":true}` {
		t.Fatalf("handler: status %s, resp %s", res.Status, js(m))
	}

	// A branch not taken is a skip without error, and the run succeeds.
	res, msgs = run(`{"type":"chain/req","id":"b","initial_input":{"n":5},"entry_node":"check","nodes":[
		{"node_id":"check","kind":"branch","condition":"$.input.n > ` + "`0`" + `","true_node":"pos","false_node":"neg","name":"","next_node":"","on_error":"abort","items_path":"","map_node":"","input":{},"input_map":{}},
		{"node_id":"pos","kind":"tool","name":"echo","input_map":{"n":"$.input.n"}},
		{"node_id":"neg","kind":"tool","name":"echo"}]}`)
	m = engine.NewResponseMessage(&engine.Request{ID: "b"}, res)
	if !m.Success || js(m.FinalOutput) != `{"n":5}` {
		t.Fatalf("branch: %s", js(m))
	}
	for _, e := range msgs {
		if e.Phase == engine.PhaseSkip && e.Error != "" {
			t.Fatalf("routing skip with an error: %s", js(e))
		}
	}
}
