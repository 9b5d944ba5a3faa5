package engine_test

import (
	"encoding/json"
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
		{engine.Result{Status: engine.StatusPartial}, true, ""},
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
