package ops

import (
	"math"
	"net/url"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/views"
)

// RunFields is a run as the API shows it in lists, in the run page's data
// and (with more) in GET /v1/runs/{id}.
type RunFields struct {
	ID           string `json:"id"`
	ChainID      string `json:"chain_id,omitempty"`      // "" for ad-hoc and A2E runs
	ChainVersion int    `json:"chain_version,omitempty"` // the exact version run; 0 when ad-hoc
	ChainName    string `json:"chain_name,omitempty"`
	ParentRunID  string `json:"parent_run_id,omitempty"`
	Kind         string `json:"kind"`
	// StartedBy says what started the run: manual (the API or the
	// designer), schedule, webhook, or the kind (rerun, node, a2e, …);
	// TriggerID names the schedule or hook.
	StartedBy string           `json:"started_by"`
	TriggerID string           `json:"trigger_id,omitempty"`
	Input     map[string]any   `json:"input,omitempty"`
	Status    chain.RunStatus  `json:"status"`
	Error     *engine.RunError `json:"error,omitempty"`
	// Outcome is "rejected" when a person's (or a deadline's) "no" decided
	// how the run ended (engine.Result.Outcome).
	Outcome     string              `json:"outcome,omitempty"`
	FinalOutput any                 `json:"final_output,omitempty"`
	Outputs     map[string]any      `json:"outputs,omitempty"`
	NodesRun    int                 `json:"nodes_run"`
	Started     time.Time           `json:"started"`
	Ended       time.Time           `json:"ended,omitzero"`
	DurationMS  int64               `json:"duration_ms,omitempty"`
	Nodes       []engine.NodeResult `json:"nodes,omitempty"`
}

func ToRunFields(r *store.Run) *RunFields {
	return &RunFields{
		ID: r.ID, ChainID: r.ChainID, ChainVersion: r.ChainVersion, ChainName: r.ChainName,
		ParentRunID: r.ParentRunID, Kind: r.Kind, StartedBy: StartedBy(r), TriggerID: r.TriggerID, Input: r.Input, Status: r.Status, Error: r.Error, Outcome: r.Outcome,
		FinalOutput: r.FinalOutput, Outputs: r.Outputs, NodesRun: r.NodesRun,
		Started: r.Started, Ended: r.Ended, DurationMS: r.DurationMS, Nodes: r.Nodes,
	}
}

// StartedBy names what started a run: its trigger, else "manual" for a
// run started through the API or the designer, else its kind.
func StartedBy(r *store.Run) string {
	switch {
	case r.TriggerKind != "":
		return r.TriggerKind
	case r.Kind == store.KindRun || r.Kind == store.KindPinned || r.Kind == "":
		return "manual"
	}
	return r.Kind
}

// RunJSON is a run as GET /v1/runs/{id} (and the stream's final `run`
// event) shows it.
type RunJSON struct {
	*RunFields
	Pending []engine.Pending `json:"pending"`
	Active  bool             `json:"active"` // executing or queued now (in this process; on PostgreSQL, in any)
	// QueuePosition is a queued run's place in line (1 is next).
	QueuePosition int `json:"queue_position,omitempty"`
	// QueueReason says why a queued run waits when it is the memory budget
	// (--max-memory), not the slots.
	QueueReason string `json:"queue_reason,omitempty"`
	// Answers: the audit of the run's answered interrupts (who, when, from
	// where, action, value, comment), oldest first; GET /v1/runs/{id} only.
	Answers []AnswerJSON `json:"answers,omitempty"`
	// Doc is the chain document an ad-hoc run ran (A2E, an agent's
	// compiled chain); GET /v1/runs/{id} only. A run of a saved chain names
	// its document by chain_id and chain_version instead.
	Doc *chain.Chain `json:"doc,omitempty"`
}

// AnswerJSON is one audit entry of an answered interrupt.
type AnswerJSON struct {
	NodeID  string    `json:"node_id"`
	Action  string    `json:"action"`
	Value   any       `json:"value,omitempty"`
	Comment string    `json:"comment,omitempty"`
	By      string    `json:"by"`
	Address string    `json:"address,omitempty"`
	At      time.Time `json:"at,omitzero"`
}

// ElideAbove is the size (about, as JSON) above which a run's answer
// names a value instead of carrying it.
const ElideAbove = views.LargeValueBytes

// ElidedJSON stands for a value a run's answer does not carry.
type ElidedJSON struct {
	Elided bool   `json:"elided"`
	Bytes  int64  `json:"bytes"` // about the value's size as JSON
	Href   string `json:"href"`  // streams the value
}

// Elide is v, or its stand-in when it is large.
func Elide(v any, href string) any {
	if v == nil {
		return nil
	}
	if n := engine.ValueSize(v, math.MaxInt64); n > ElideAbove {
		return ElidedJSON{Elided: true, Bytes: n, Href: href}
	}
	return v
}

// ElideRun replaces the large values of a run's answer (outputs, final
// output, node inputs and outputs) by their stand-ins. The maps and slices
// it changes are copies: r's may be shared.
func ElideRun(r *RunFields) {
	base := "/v1/runs/" + url.PathEscape(r.ID)
	node := func(id, part string) string { return base + "/nodes/" + url.PathEscape(id) + "/" + part }
	r.FinalOutput = Elide(r.FinalOutput, base+"/final-output")
	if r.Outputs != nil {
		outs := make(map[string]any, len(r.Outputs))
		for k, v := range r.Outputs {
			outs[k] = Elide(v, node(k, "output"))
		}
		r.Outputs = outs
	}
	if r.Nodes != nil {
		nodes := make([]engine.NodeResult, len(r.Nodes))
		for i, n := range r.Nodes {
			n.Output = Elide(n.Output, node(n.NodeID, "output"))
			n.Input = Elide(n.Input, node(n.NodeID, "input"))
			nodes[i] = n
		}
		r.Nodes = nodes
	}
}
