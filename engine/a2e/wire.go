package a2e

import (
	"fmt"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/google/uuid"
)

// A2E message types a host sends back (docs/chain-format.md, "A2E
// compatibility").
const (
	TypeEvent    = "chain/event"
	TypeResponse = "chain/resp"
)

// EventMessage is an A2E chain/event message, field for field (the SDK's
// ChainEvent model). Output carries the node's output on "done" only;
// Error the message on "error" only. Data is the base A2EEvent's payload:
// what else the event says, as the studio's own keys (see eventData).
type EventMessage struct {
	Type    string         `json:"type"`
	ID      string         `json:"id"`
	Version string         `json:"version"`
	Ts      float64        `json:"ts"`
	ReqID   string         `json:"req_id"`
	NodeID  string         `json:"node_id"`
	Phase   engine.Phase   `json:"phase"`
	Output  any            `json:"output"`
	Error   string         `json:"error"`
	Seq     int64          `json:"seq"`
	Data    map[string]any `json:"data"`
}

// WireError is the error dict of a chain/resp.
type WireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	NodeID  string `json:"node_id"`
	// Details is the studio's addition (budget_exceeded names its budget);
	// absent otherwise, so the message stays A2E's field for field.
	Details map[string]any `json:"details,omitempty"`
}

// ResponseMessage is an A2E chain/resp message, field for field.
type ResponseMessage struct {
	Type        string         `json:"type"`
	ID          string         `json:"id"`
	Version     string         `json:"version"`
	Ts          float64        `json:"ts"`
	ReqID       string         `json:"req_id"`
	ChainID     string         `json:"chain_id"`
	Success     bool           `json:"success"`
	Outputs     map[string]any `json:"outputs"`
	FinalOutput any            `json:"final_output"`
	DurationMS  int64          `json:"duration_ms"`
	NodesRun    int            `json:"nodes_run"`
	Error       *WireError     `json:"error"`
}

// CodePaused is the chain/resp error code of a run that stopped at an
// interrupt: A2E has no resume, so the agent is told the run is waiting.
const CodePaused = "chain_paused"

// NewEventMessage turns a run event into the chain/event message answering
// request reqID. Ts is the event's own time.
func NewEventMessage(reqID string, ev engine.Event) EventMessage {
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	m := EventMessage{
		Type: TypeEvent, ID: uuid.NewString(), Version: chain.WireVersion, Ts: unixSeconds(t),
		ReqID: reqID, NodeID: ev.NodeID, Phase: ev.Phase, Seq: ev.Seq, Data: eventData(ev),
	}
	switch ev.Phase {
	case engine.PhaseDone:
		m.Output = ev.Output
	case engine.PhaseError:
		m.Error = ev.Error
	}
	return m
}

// eventData is a chain/event's data: "item" (the map item's index) on the
// events of a map body, so an agent tells the items apart; "reason" (why a
// node was skipped, or what follows an error: "retrying", "on_error_skip");
// "progress" on "progress" events and "prompt" on "paused"
// (phases beyond A2E's four). Empty, never null, when it says nothing.
func eventData(ev engine.Event) map[string]any {
	d := map[string]any{}
	if ev.Item != nil {
		d["item"] = float64(*ev.Item)
	}
	if ev.Reason != "" {
		d["reason"] = ev.Reason
	}
	switch ev.Phase {
	case engine.PhaseProgress:
		d["progress"] = ev.Progress
	case engine.PhasePaused:
		d["prompt"] = ev.Prompt
		if ev.PauseID != "" {
			d["pause_id"] = ev.PauseID
		}
	}
	return d
}

// Succeeded is chain/resp's success: "whether all nodes completed without
// error" (A2E). A failure the chain handled (on_error skip, continue or a
// handler node) still makes it false; the run's own status stays partial.
func Succeeded(res *engine.Result) bool {
	return res.Status == chain.StatusCompleted
}

// NewResponseMessage builds the chain/resp closing an A2E exchange.
// req may be nil (a request that could not be decoded); res may be nil when
// the run never started, in which case the caller fills Error.
func NewResponseMessage(req *chain.Request, res *engine.Result) ResponseMessage {
	m := ResponseMessage{
		Type: TypeResponse, ID: uuid.NewString(), Version: chain.WireVersion, Ts: unixSeconds(time.Now()),
		Outputs: map[string]any{},
	}
	if req != nil {
		m.ReqID, m.ChainID = req.ID, req.ChainID
	}
	if res == nil {
		return m
	}
	if res.Outputs != nil {
		m.Outputs = res.Outputs
	}
	m.FinalOutput = res.FinalOutput
	m.DurationMS = res.DurationMS
	m.NodesRun = res.NodesRun
	m.Success = Succeeded(res)
	switch {
	case res.Error != nil:
		m.Error = wireError(res.Error)
	case res.Status == chain.StatusPaused:
		we := &WireError{Code: CodePaused, Message: fmt.Sprintf("run %s is paused at an interrupt, waiting for a resume value", res.RunID)}
		if len(res.Pending) > 0 {
			we.NodeID = res.Pending[0].NodeID
			we.Message = fmt.Sprintf("run %s is paused at interrupt node %q, waiting for a resume value", res.RunID, we.NodeID)
		}
		m.Error = we
	case res.Status == chain.StatusPartial:
		m.Error = handledError(res)
	case !m.Success:
		m.Error = &WireError{Code: "chain_" + string(res.Status), Message: fmt.Sprintf("run %s ended %s", res.RunID, res.Status)}
	}
	return m
}

// handledError is the chain/resp error of a partial run: the first node
// failure the chain handled (skip, continue or a handler), so the agent
// learns which node failed and why although the run went on.
func handledError(res *engine.Result) *WireError {
	var first, fan *engine.NodeResult
	earlier := func(a, b *engine.NodeResult) bool {
		return b == nil || a.Ended.Before(b.Ended) || a.Ended.Equal(b.Ended) && a.NodeID < b.NodeID
	}
	for _, nr := range res.Nodes {
		if nr.Status == engine.PhaseDone && nr.Partial && earlier(nr, fan) {
			fan = nr
		}
		if nr.Error == "" || nr.Status == engine.PhaseDone && nr.Reason == "" {
			continue
		}
		if earlier(nr, first) {
			first = nr
		}
	}
	if first == nil && fan != nil {
		// The failures were inside a map or parallel node, which completed
		// with them: its items' or branches' error events name each one.
		return &WireError{Code: engine.CodeNodeError, NodeID: fan.NodeID,
			Message: fmt.Sprintf("node %q completed, but some of its map items or parallel branches failed and were handled (their error events name them; continue gives {\"error\": …} entries in its output)", fan.NodeID)}
	}
	if first == nil {
		return &WireError{Code: engine.CodeNodeError, Message: fmt.Sprintf("run %s ended partial: a node failure was handled by its on_error policy (the skip and error events name it)", res.RunID)}
	}
	how := first.Reason
	if how == "" {
		how = string(first.Status)
	}
	return &WireError{Code: engine.CodeNodeError, NodeID: first.NodeID,
		Message: fmt.Sprintf("node %q failed (handled: %s): %s", first.NodeID, how, first.Error)}
}

// wireError is the chain/resp error of a run error. A2E's error table has
// its own code for a graph that is not a DAG, so a run refused for a cycle
// (through edges or through input_map reads) answers chain_cycle, naming
// the node, instead of the generic chain_invalid; the message still lists
// every issue.
func wireError(e *engine.RunError) *WireError {
	we := &WireError{Code: e.Code, Message: e.Message, NodeID: e.NodeID, Details: e.Details}
	if e.Code != chain.CodeInvalid {
		return we
	}
	for _, is := range e.Issues {
		if is.Severity == chain.SeverityError && (is.Rule == chain.RuleChainCycle || is.Rule == chain.RuleDataCycle) {
			we.Code = engine.CodeCycle
			if we.NodeID == "" {
				we.NodeID = is.NodeID
			}
			break
		}
	}
	// Name the first node at fault, so the agent knows where to look.
	for _, is := range e.Issues {
		if we.NodeID != "" {
			break
		}
		if is.Severity == chain.SeverityError {
			we.NodeID = is.NodeID
		}
	}
	return we
}

// NewInvalidResponse is the chain/resp refusing a request whose chain did
// not validate (chain_invalid, or chain_cycle for a cycle), naming the
// first node at fault; nothing ran.
func NewInvalidResponse(req *chain.Request, issues []chain.Issue) ResponseMessage {
	issues = chain.ErrorsOnly(issues)
	m := NewResponseMessage(req, nil)
	verr := &chain.ValidationError{Issues: issues}
	m.Error = wireError(&engine.RunError{Code: chain.CodeInvalid, Message: verr.Error(), Issues: issues})
	return m
}
