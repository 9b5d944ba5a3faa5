package engine

// Approvals: the config of an interrupt node and how an answer becomes the
// node's output (docs/chain-format.md, "Interrupts and resume" and
// "Approvals"). An answer is an action with an optional value and comment:
//
//	action    output                                   routes along
//	approve   the value if given (modified), else the  an edge labelled "approved",
//	          proposed value                           else default / unlabelled
//	respond   the value                                as approve
//	reject    {action, comment, proposed}              the edge labelled "rejected";
//	                                                   without one the node fails with
//	                                                   code "rejected" (on_error applies)
//	timeout   by on_timeout: reject (as reject),       default: as approve;
//	          default (default_value), edge            edge: the edge labelled "timeout"
//	          ({action: "timeout", deadline})
//
// Answering without an action (the resume contract before approvals) is
// respond: the value is the output.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// Answer actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionRespond = "respond"
	ActionTimeout = "timeout" // the deadline passed: the node's on_timeout decides
)

// CodeRejected: an interrupt was rejected and has no "rejected" edge.
const CodeRejected = "rejected"

// CodeInvalidAnswer: an answer does not fit the pause (its action or value).
const CodeInvalidAnswer = "invalid_answer"

// CodeAnswerPatchesState: an answer to a pause came with a state patch. An
// answer only answers: what the approved step does must be what the person
// saw, so patching state is left to a re-run or the resume of a failed run.
const CodeAnswerPatchesState = "answer_patches_state"

// ApprovalInfo is what a pause at an interrupt node records for the people
// (and the sweeper) who answer it; nil for a pause a tool asked for.
type ApprovalInfo struct {
	// Kind is ApprovalToolCall for an approval a tool asked for (an agent's
	// gated tool call); "" for an interrupt node's.
	Kind         string         `json:"kind,omitempty"`
	Schema       map[string]any `json:"schema,omitempty"`
	Proposed     any            `json:"proposed,omitempty"`
	Deadline     time.Time      `json:"deadline,omitzero"`
	OnTimeout    string         `json:"on_timeout,omitempty"`
	Escalation   string         `json:"escalation,omitempty"`
	NotifyBefore float64        `json:"notify_before,omitempty"` // seconds
	Approvers    []string       `json:"approvers,omitempty"`
	// Fields are the values the node's config.fields names, evaluated when
	// it paused, in label order: shown beside the prompt.
	Fields []ApprovalField `json:"fields,omitempty"`
}

// ApprovalField is one value an approval shows beside its prompt.
type ApprovalField struct {
	Label string `json:"label"`
	Value any    `json:"value"`
}

// ApprovalToolCall is the Kind of an approval a tool asked for
// (tool.ApprovalInterrupt): approve or reject, no schema, no deadline.
const ApprovalToolCall = "tool_call"

// approvalInfo builds the pause's ApprovalInfo for node nd with input.
func approvalInfo(nd *chain.Node, input any, now time.Time) *ApprovalInfo {
	ic, _ := chain.ParseInterruptConfig(nd.Config) // validated before the run
	info := &ApprovalInfo{Schema: ic.Schema, Proposed: input, Deadline: ic.DeadlineFrom(now), Escalation: ic.Escalation,
		NotifyBefore: ic.NotifyBefore.Seconds(), Approvers: ic.Approvers}
	if ic.HasProposed {
		info.Proposed = ic.Proposed
	}
	if !info.Deadline.IsZero() {
		info.OnTimeout = ic.OnTimeout
	}
	return info
}

// AnswerError: an answer does not fit the pause: the action is not one the
// node takes, or the value fails the node's schema (Field is a JSON pointer
// into the value, "" when the action is the problem).
type AnswerError struct {
	RunID  string
	NodeID string
	Field  string
	Msg    string
}

func (e *AnswerError) Code() string { return CodeInvalidAnswer }
func (e *AnswerError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("the answer to node %q: value at %s: %s", e.NodeID, e.Field, e.Msg)
	}
	return fmt.Sprintf("the answer to node %q: %s", e.NodeID, e.Msg)
}

// RejectedError: a person (or a deadline) rejected an interrupt node that
// has no "rejected" edge.
type RejectedError struct {
	NodeID  string
	By      string
	Comment string
}

func (e *RejectedError) Code() string { return CodeRejected }
func (e *RejectedError) Error() string {
	msg := fmt.Sprintf("rejected by %s", e.By)
	if e.Comment != "" {
		msg += ": " + e.Comment
	}
	return msg
}

// checkAnswer validates an answer to the pause at node nodeID of chain c
// (paused with info) before it is claimed.
func checkAnswer(c *chain.Chain, runID, nodeID string, info *ApprovalInfo, rec *ResumeRecord) error {
	var nd *chain.Node
	for k := range c.Nodes {
		if c.Nodes[k].ID == nodeID {
			nd = &c.Nodes[k]
			break
		}
	}
	bad := func(field, format string, a ...any) error {
		return &AnswerError{RunID: runID, NodeID: nodeID, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	switch rec.Action {
	case "", ActionRespond, ActionApprove, ActionReject, ActionTimeout:
	default:
		return bad("", "unknown action %q (approve, reject or respond)", rec.Action)
	}
	if nd != nil && nd.Kind != chain.KindInterrupt && info != nil && info.Kind == ApprovalToolCall {
		if rec.Action == ActionTimeout {
			return bad("", "the pause has no deadline; answer it with approve or reject")
		}
		return nil
	}
	if nd == nil || nd.Kind != chain.KindInterrupt {
		if rec.Action != "" && rec.Action != ActionRespond {
			return bad("", "the pause was asked for by a tool; answer it with respond and a value")
		}
		return nil
	}
	ic, _ := chain.ParseInterruptConfig(nd.Config)
	if info != nil && info.Schema != nil && ic.Schema == nil { // the schema the pause recorded wins
		ic.CheckAgainst(info.Schema)
	}
	var v any
	switch rec.Action {
	case ActionReject:
		return nil
	case ActionTimeout:
		if info == nil || info.Deadline.IsZero() {
			return bad("", "node has no deadline")
		}
		if ic.OnTimeout != chain.OnTimeoutDefault {
			return nil
		}
		v = ic.DefaultValue
	case ActionApprove:
		v = rec.Value
		if !rec.HasValue || rec.Value == nil {
			if info != nil {
				v = info.Proposed
			}
		}
	default:
		v = rec.Value
	}
	if field, err := ic.CheckValue(v); err != nil {
		return bad(field, "%v", err)
	}
	return nil
}

// answerInterrupt turns the answer an interrupt node was resumed with into
// its completion: output, outcome handle, or error.
func (r *run) answerInterrupt(i int, input, value any) (out any, matched string, err error) {
	out, matched, err = r.answerOutcome(i, input, value)
	if !r.outcomeRouted(i) {
		matched = "" // its edges route as any node's: no handle to show
	}
	return out, matched, err
}

func (r *run) answerOutcome(i int, input, value any) (any, string, error) {
	nd := &r.chain.Nodes[i]
	rec := r.nodes.answers[i]
	delete(r.nodes.answers, i)
	action := ""
	if rec != nil {
		action = rec.Action
	}
	ic, _ := chain.ParseInterruptConfig(nd.Config)
	proposed := input
	if ic.HasProposed {
		proposed = ic.Proposed
	}
	reject := func(by, comment string) (any, string, error) {
		if r.hasOutEdge(i, chain.LabelRejected) {
			return map[string]any{"action": ActionReject, "comment": comment, "by": by, "proposed": chain.NormalizeValue(proposed)}, chain.LabelRejected, nil
		}
		return nil, "", &RejectedError{NodeID: nd.ID, By: by, Comment: comment}
	}
	switch action {
	case ActionApprove:
		if value == nil {
			return chain.NormalizeValue(proposed), chain.LabelApproved, nil
		}
		return chain.NormalizeValue(value), chain.LabelApproved, nil
	case ActionReject:
		return reject(rec.By, rec.Comment)
	case ActionTimeout:
		switch ic.OnTimeout {
		case chain.OnTimeoutDefault:
			return chain.NormalizeValue(ic.DefaultValue), chain.LabelApproved, nil
		case chain.OnTimeoutEdge:
			return map[string]any{"action": ActionTimeout}, chain.LabelTimeout, nil
		}
		return reject("deadline", "the deadline passed")
	}
	return chain.NormalizeValue(value), chain.LabelApproved, nil
}

// OutcomeRejected is a run's Outcome when a person's "no" decided how it
// ended: the run list tells it from a run that broke.
const OutcomeRejected = "rejected"

// runOutcome says whether a "no" decided how the run ended with status: it
// failed because an interrupt node was rejected and had no "rejected" edge,
// or it ended (completed or partial) with an interrupt node whose last
// answer was a no: rejected (by a person or a deadline; taken down its
// "rejected" edge, or failed and handled by its on_error), or answered with
// a value whose `approved` is false (n8n's send-and-wait goes on so). A run
// that failed for any other reason, or still waits, has no outcome.
func (r *run) runOutcome(status chain.RunStatus) string {
	var re *RejectedError
	if errors.As(r.outcome.typed, &re) {
		return OutcomeRejected
	}
	if status != chain.StatusCompleted && status != chain.StatusPartial {
		return ""
	}
	for i := range r.chain.Nodes {
		if r.chain.Nodes[i].Kind != chain.KindInterrupt {
			continue
		}
		nr := &r.nodes.result[i]
		switch nr.Status {
		case PhaseDone:
			if m, ok := nr.Output.(map[string]any); nr.Matched == chain.LabelRejected || ok && m["approved"] == false {
				return OutcomeRejected
			}
		case PhaseError:
			if strings.HasPrefix(nr.Error, "rejected by ") { // a RejectedError its on_error handled
				return OutcomeRejected
			}
		}
	}
	return ""
}

// hasOutEdge reports whether node i has an outgoing edge labelled label.
func (r *run) hasOutEdge(i int, label string) bool {
	for _, ei := range r.graph.Out[i] {
		if r.chain.Edges[ei].Label == label {
			return true
		}
	}
	return false
}

// outcomeRouted reports whether an interrupt node routes by its answer's
// outcome: it has an edge labelled approved, rejected or timeout.
func (r *run) outcomeRouted(i int) bool {
	return r.hasOutEdge(i, chain.LabelApproved) || r.hasOutEdge(i, chain.LabelRejected) || r.hasOutEdge(i, chain.LabelTimeout)
}

// NewAnswer is a person's answer to a pause, built alike whichever door it
// comes through (the API, the inbox, which posts to the API, and the run
// page's buttons), so that approve, reject and respond mean one thing. What
// the action does is decided where the node takes the answer
// (answerOutcome), from the action alone: approve outputs the value given,
// or else the proposed one, and the run goes on; respond outputs the value
// and goes on; reject outputs no value of the person's: it takes the edge
// labelled "rejected", or fails the node (code "rejected"). hasValue false:
// no value was given (approve then takes the proposed value).
func NewAnswer(action string, value any, hasValue bool) *ResumeValue {
	if !hasValue || action == ActionReject {
		value = nil
	}
	return &ResumeValue{Action: action, Value: value}
}
