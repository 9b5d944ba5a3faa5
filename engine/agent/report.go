package agent

import (
	"encoding/json"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Chain statuses of a response.
const (
	ChainCompleted = "completed" // every link that fired finished cleanly
	ChainPartial   = "partial"   // there were errors but the chain continued
	ChainFailed    = "failed"    // a link stopped the chain (or the run failed)
)

// Link statuses and skip reasons of a response.
const (
	LinkSuccess = "success"
	LinkError   = "error"
	LinkSkipped = "skipped"

	ReasonConditionFalse  = "condition_false"
	ReasonUpstreamStopped = "upstream_stopped"
	ReasonNotNeeded       = "not_needed" // an error handler whose link did not fail
)

// ChainReport is the `chain` part of a run's response.
type ChainReport struct {
	RunID  string       `json:"run_id"`
	Status string       `json:"status"`
	Mode   string       `json:"mode"`
	Links  []LinkReport `json:"links"`
}

// LinkReport is what one link did.
type LinkReport struct {
	NodeID     string          `json:"node_id"`
	Agent      string          `json:"agent"`
	Depth      int             `json:"depth"`
	Via        *string         `json:"via"`
	HandlerFor string          `json:"handler_for,omitempty"`
	Status     string          `json:"status"`
	Answer     *string         `json:"answer,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"` // present when the agent's result has data (null included)
	DataError  *string         `json:"data_error,omitempty"`
	DurationMS *int64          `json:"duration_ms,omitempty"`
	Attempts   int             `json:"attempts,omitempty"`
	Error      string          `json:"error,omitempty"`
	Reason     string          `json:"reason,omitempty"`
}

// Response is what POST /v1/agents/{name}/run answers: the invoked agent's
// result (answer, and data/data_error when it has them), its steps, a trace
// and the chain report (nil for an agent without a chain).
type Response struct {
	RunID     string
	Status    chain.RunStatus // the run's status
	Result    map[string]any  // the invoked agent's output; nil when it did not finish
	Error     string          // why the invoked agent did not finish
	Chain     *ChainReport
	Trace     map[string]any
	HasSchema bool
}

// MarshalJSON lays the response out flat: {run_id, status, answer, data?,
// data_error?, steps, trace, chain, error?}.
func (r *Response) MarshalJSON() ([]byte, error) {
	m := map[string]any{"run_id": r.RunID, "status": r.Status, "answer": nil, "steps": []any{}, "trace": r.Trace, "chain": r.Chain}
	if r.HasSchema {
		m["data"], m["data_error"] = nil, nil
	}
	for k, v := range r.Result {
		m[k] = v
	}
	if r.Error != "" {
		m["error"] = r.Error
	}
	if r.Chain == nil {
		m["chain"] = nil
	}
	return json.Marshal(m)
}

// ChainStatus maps a run status onto a chain status.
func ChainStatus(s chain.RunStatus) string {
	switch s {
	case chain.StatusCompleted:
		return ChainCompleted
	case chain.StatusPartial:
		return ChainPartial
	}
	return ChainFailed
}

// Report builds the response of a run of agent name (started with
// Set.RunChain). The root answer is returned whatever the chain's status.
func (s *Set) Report(name string, res *engine.Result) *Response {
	out := &Response{RunID: res.RunID, Status: res.Status}
	if d, ok := s.Get(name); ok {
		out.HasSchema = d.Schema() != nil
	}
	if nr := res.Nodes[name]; nr != nil && nr.Status == engine.PhaseDone {
		if m, ok := nr.Output.(map[string]any); ok {
			out.Result = m
		}
	} else {
		out.Error = rootError(name, res)
	}
	out.Trace = trace(res)
	g, ok := s.Graph(name)
	if !ok {
		return out
	}
	cr := &ChainReport{RunID: res.RunID, Status: ChainStatus(res.Status), Mode: g.Mode, Links: make([]LinkReport, 0, len(g.Links))}
	for _, l := range g.Links {
		cr.Links = append(cr.Links, linkReport(l, res.Nodes[l.NodeID]))
	}
	out.Chain = cr
	return out
}

func rootError(name string, res *engine.Result) string {
	if nr := res.Nodes[name]; nr != nil && nr.Error != "" {
		return nr.Error
	}
	if res.Error != nil {
		return res.Error.Message
	}
	return "the agent did not finish (run " + string(res.Status) + ")"
}

func linkReport(l Link, nr *engine.NodeResult) LinkReport {
	lr := LinkReport{NodeID: l.NodeID, Agent: l.Agent, Depth: l.Depth, Via: l.Via, HandlerFor: l.HandlerFor}
	if nr == nil {
		lr.Status, lr.Reason = LinkSkipped, ReasonUpstreamStopped
		if l.HandlerFor != "" {
			lr.Reason = ReasonNotNeeded
		}
		return lr
	}
	lr.Attempts = nr.Attempts
	switch nr.Status {
	case engine.PhaseDone:
		lr.Status = LinkSuccess
		if m, ok := nr.Output.(map[string]any); ok {
			if a, ok := m["answer"].(string); ok {
				lr.Answer = &a
			}
			if d, ok := m["data"]; ok {
				lr.Data, _ = json.Marshal(d)
			}
			if de, ok := m["data_error"].(string); ok {
				lr.DataError = &de
			}
		}
		if !nr.Started.IsZero() && !nr.Ended.IsZero() {
			ms := nr.Ended.Sub(nr.Started).Milliseconds()
			lr.DurationMS = &ms
		}
	case engine.PhaseError:
		lr.Status, lr.Error = LinkError, nr.Error
		if lr.Error == "" {
			lr.Error = "failed"
		}
	case engine.PhaseSkip:
		if nr.Reason == engine.ReasonGuardFailed {
			// the link failed (its when could not be evaluated); the agent never ran
			lr.Status, lr.Error = LinkError, nr.Error
			break
		}
		lr.Status = LinkSkipped
		switch nr.Reason {
		case engine.ReasonConditionFalse, engine.ReasonBranchNotTaken:
			lr.Reason = ReasonConditionFalse
		case engine.ReasonNotNeeded:
			lr.Reason = ReasonUpstreamStopped
			if l.HandlerFor != "" {
				lr.Reason = ReasonNotNeeded
			}
		case engine.ReasonUpstreamStopped, "":
			lr.Reason = ReasonUpstreamStopped
		default:
			lr.Reason = nr.Reason
		}
		if nr.Error != "" {
			lr.Error = nr.Error
		}
	default: // still running or paused when the run stopped
		lr.Status, lr.Reason = LinkSkipped, ReasonUpstreamStopped
	}
	return lr
}

// trace summarises every node of the run.
func trace(res *engine.Result) map[string]any {
	nodes := map[string]any{}
	for id, nr := range res.Nodes {
		n := map[string]any{"status": nr.Status}
		if nr.Attempts > 0 {
			n["attempts"] = nr.Attempts
		}
		if nr.Error != "" {
			n["error"] = nr.Error
		}
		if nr.Reason != "" {
			n["reason"] = nr.Reason
		}
		if !nr.Started.IsZero() && !nr.Ended.IsZero() {
			n["duration_ms"] = nr.Ended.Sub(nr.Started).Milliseconds()
		}
		nodes[id] = n
	}
	t := map[string]any{"run_id": res.RunID, "status": res.Status, "duration_ms": res.DurationMS, "nodes": nodes}
	if res.Error != nil {
		t["error"] = res.Error
	}
	return t
}
