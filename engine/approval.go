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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Answer actions.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
	ActionRespond = "respond"
	ActionTimeout = "timeout" // the deadline passed: the node's on_timeout decides
)

// on_timeout policies.
const (
	OnTimeoutReject  = "reject"
	OnTimeoutDefault = "default"
	OnTimeoutEdge    = "edge"
)

// Outcome labels an interrupt node routes by.
const (
	LabelApproved = "approved"
	LabelRejected = "rejected"
	LabelTimeout  = "timeout"
)

// CodeRejected: an interrupt was rejected and has no "rejected" edge.
const CodeRejected = "rejected"

// CodeInvalidAnswer: an answer does not fit the pause (its action or value).
const CodeInvalidAnswer = "invalid_answer"

// CodeAnswerPatchesState: an answer to a pause came with a state patch. An
// answer only answers: what the approved step does must be what the person
// saw, so patching state is left to a re-run or the resume of a failed run.
const CodeAnswerPatchesState = "answer_patches_state"

// maxApprovers bounds config.approvers.
const maxApprovers = 50

// InterruptConfig is an interrupt node's config, parsed.
type InterruptConfig struct {
	Prompt       any
	HasPrompt    bool
	Schema       map[string]any // JSON Schema of the answer value
	Proposed     any            // the value to approve; HasProposed false: the node's input
	HasProposed  bool
	Deadline     time.Time     // fixed deadline (RFC 3339)
	Timeout      time.Duration // deadline relative to the pause
	OnTimeout    string
	DefaultValue any
	HasDefault   bool
	Escalation   string        // webhook URL notified when the pause starts and nears its deadline
	NotifyBefore time.Duration // how long before the deadline the escalation is told
	Approvers    []string      // who may answer (names or roles; shown, checked by the host)

	schema *jsonschema.Schema
}

// ConfigIssue is a problem with one field of a node's config.
type ConfigIssue struct {
	Field string // config.<name>
	Msg   string
}

// InterruptConfigSchema is the JSON Schema of an interrupt node's config,
// for forms and the tool catalogue.
func InterruptConfigSchema() map[string]any {
	dur := func(d string) map[string]any {
		return map[string]any{"description": d + ": seconds, or a duration such as \"90m\" or \"2h\"",
			"oneOf": []any{map[string]any{"type": "number", "exclusiveMinimum": 0.0}, map[string]any{"type": "string", "minLength": 1}}}
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"prompt":        map[string]any{"description": "what to ask (default: the node's input)"},
			"schema":        map[string]any{"type": "object", "description": "JSON Schema the answer value must satisfy; the inbox builds its form from it"},
			"proposed":      map[string]any{"description": "the value to approve (default: the node's input)"},
			"deadline":      map[string]any{"type": "string", "format": "date-time", "description": "answer before this time (RFC 3339)"},
			"timeout":       dur("answer within this long after the pause"),
			"on_timeout":    map[string]any{"type": "string", "enum": []any{OnTimeoutReject, OnTimeoutDefault, OnTimeoutEdge}, "default": OnTimeoutReject, "description": "what the deadline does: reject, answer default_value, or take the edge labelled \"timeout\""},
			"default_value": map[string]any{"description": "the answer on_timeout \"default\" gives"},
			"escalation":    map[string]any{"type": "string", "format": "uri", "description": "webhook (http/https) told when the pause starts and when its deadline nears"},
			"notify_before": dur("how long before the deadline the escalation webhook is told"),
			"approvers":     map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": float64(maxApprovers), "description": "who may answer: names or roles"},
		},
		"x-order": []any{"prompt", "schema", "proposed", "deadline", "timeout", "on_timeout", "default_value", "escalation", "notify_before", "approvers"},
	}
}

// ParseInterruptConfig reads an interrupt node's config; every problem is
// returned with the field it concerns.
func ParseInterruptConfig(cfg map[string]any) (*InterruptConfig, []ConfigIssue) {
	ic := &InterruptConfig{}
	var issues []ConfigIssue
	bad := func(field, format string, a ...any) {
		issues = append(issues, ConfigIssue{Field: "config." + field, Msg: fmt.Sprintf(format, a...)})
	}
	ic.Prompt, ic.HasPrompt = cfg["prompt"]
	ic.Proposed, ic.HasProposed = cfg["proposed"]
	ic.DefaultValue, ic.HasDefault = cfg["default_value"]
	if s, ok := cfg["schema"]; ok && s != nil {
		m, isObj := s.(map[string]any)
		if !isObj {
			bad("schema", "must be a JSON Schema object, got %s", jsonKind(s))
		} else if sch, err := compileAnswerSchema(m); err != nil {
			bad("schema", "is not a valid JSON Schema: %v", err)
		} else {
			ic.Schema, ic.schema = m, sch
		}
	}
	if d, ok := cfg["deadline"]; ok && d != nil {
		s, _ := d.(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			bad("deadline", "must be an RFC 3339 time such as 2026-12-01T17:00:00Z, got %s", shortJSON(d))
		}
		ic.Deadline = t
	}
	var err error
	if ic.Timeout, err = configDuration(cfg, "timeout"); err != nil {
		bad("timeout", "%v", err)
	}
	if ic.NotifyBefore, err = configDuration(cfg, "notify_before"); err != nil {
		bad("notify_before", "%v", err)
	}
	timed := !ic.Deadline.IsZero() || ic.Timeout > 0
	if p, ok := cfg["on_timeout"]; ok && p != nil {
		s, _ := p.(string)
		switch s {
		case OnTimeoutReject, OnTimeoutDefault, OnTimeoutEdge:
			ic.OnTimeout = s
		default:
			bad("on_timeout", "must be reject, default or edge, got %s", shortJSON(p))
		}
		if !timed && ic.OnTimeout != "" {
			bad("on_timeout", "has no effect without a deadline or timeout")
		}
	}
	if timed && ic.OnTimeout == "" {
		ic.OnTimeout = OnTimeoutReject
	}
	if ic.OnTimeout == OnTimeoutDefault {
		if !ic.HasDefault {
			bad("default_value", "is required when on_timeout is \"default\"")
		} else if field, err := ic.CheckValue(ic.DefaultValue); err != nil {
			bad("default_value", "does not satisfy config.schema at %s: %v", field, err)
		}
	}
	if e, ok := cfg["escalation"]; ok && e != nil {
		s, _ := e.(string)
		u, err := url.Parse(s)
		if s == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("escalation", "must be an http or https URL")
		} else {
			ic.Escalation = s
		}
	}
	if ic.NotifyBefore > 0 && (ic.Escalation == "" || !timed) {
		bad("notify_before", "needs an escalation URL and a deadline or timeout")
	}
	if a, ok := cfg["approvers"]; ok && a != nil {
		list, isList := a.([]any)
		if !isList || len(list) > maxApprovers {
			bad("approvers", "must be a list of at most %d names or roles", maxApprovers)
		}
		for k, x := range list {
			s, _ := x.(string)
			if strings.TrimSpace(s) == "" {
				bad(fmt.Sprintf("approvers[%d]", k), "must be a non-empty string")
				continue
			}
			ic.Approvers = append(ic.Approvers, s)
		}
	}
	return ic, issues
}

// configDuration reads seconds (a number) or a Go duration string.
func configDuration(cfg map[string]any, key string) (time.Duration, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, nil
	}
	var d time.Duration
	switch x := v.(type) {
	case float64:
		d = time.Duration(x * float64(time.Second))
	case int:
		d = time.Duration(x) * time.Second
	case string:
		var err error
		if d, err = time.ParseDuration(x); err != nil {
			return 0, fmt.Errorf("must be seconds or a duration such as \"90m\", got %q", x)
		}
	default:
		return 0, fmt.Errorf("must be seconds or a duration such as \"90m\", got %s", jsonKind(v))
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be more than zero, got %s", shortJSON(v))
	}
	return d, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64, int:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func shortJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// compileAnswerSchema compiles an answer schema. References to anything but
// the schema itself are refused: a chain never makes the host fetch a URL.
func compileAnswerSchema(m map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	const loc = "urn:chainstudio:answer"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("schema references %q: only references inside the schema are allowed", u)
}

// CheckValue validates v against the config's schema (none: anything
// goes). On failure it returns the field, as a JSON pointer ("/amount"; "/"
// for the whole value), and why.
func (ic *InterruptConfig) CheckValue(v any) (string, error) {
	if ic.schema == nil {
		return "", nil
	}
	err := ic.schema.Validate(normalizeValue(v))
	if err == nil {
		return "", nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "/", err
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	field := "/" + strings.Join(leaf.InstanceLocation, "/")
	msg := leaf.ErrorKind.LocalizedString(message.NewPrinter(language.English))
	return field, errors.New(msg)
}

// Deadline returns when a pause that starts at now must be answered (zero:
// never): the earlier of the fixed deadline and now + timeout.
func (ic *InterruptConfig) DeadlineFrom(now time.Time) time.Time {
	var d time.Time
	if ic.Timeout > 0 {
		d = now.Add(ic.Timeout)
	}
	if !ic.Deadline.IsZero() && (d.IsZero() || ic.Deadline.Before(d)) {
		d = ic.Deadline
	}
	return d
}

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
}

// ApprovalToolCall is the Kind of an approval a tool asked for
// (tool.ApprovalInterrupt): approve or reject, no schema, no deadline.
const ApprovalToolCall = "tool_call"

// approvalInfo builds the pause's ApprovalInfo for node nd with input.
func approvalInfo(nd *Node, input any, now time.Time) *ApprovalInfo {
	ic, _ := ParseInterruptConfig(nd.Config) // validated before the run
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
func checkAnswer(c *Chain, runID, nodeID string, info *ApprovalInfo, rec *ResumeRecord) error {
	var nd *Node
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
	if nd != nil && nd.Kind != KindInterrupt && info != nil && info.Kind == ApprovalToolCall {
		if rec.Action == ActionTimeout {
			return bad("", "the pause has no deadline; answer it with approve or reject")
		}
		return nil
	}
	if nd == nil || nd.Kind != KindInterrupt {
		if rec.Action != "" && rec.Action != ActionRespond {
			return bad("", "the pause was asked for by a tool; answer it with respond and a value")
		}
		return nil
	}
	ic, _ := ParseInterruptConfig(nd.Config)
	if info != nil && info.Schema != nil && ic.Schema == nil { // the schema the pause recorded wins
		ic.schema, _ = compileAnswerSchema(info.Schema)
	}
	var v any
	switch rec.Action {
	case ActionReject:
		return nil
	case ActionTimeout:
		if info == nil || info.Deadline.IsZero() {
			return bad("", "node has no deadline")
		}
		if ic.OnTimeout != OnTimeoutDefault {
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
	ic, _ := ParseInterruptConfig(nd.Config)
	proposed := input
	if ic.HasProposed {
		proposed = ic.Proposed
	}
	reject := func(by, comment string) (any, string, error) {
		if r.hasOutEdge(i, LabelRejected) {
			return map[string]any{"action": ActionReject, "comment": comment, "by": by, "proposed": normalizeValue(proposed)}, LabelRejected, nil
		}
		return nil, "", &RejectedError{NodeID: nd.ID, By: by, Comment: comment}
	}
	switch action {
	case ActionApprove:
		if value == nil {
			return normalizeValue(proposed), LabelApproved, nil
		}
		return normalizeValue(value), LabelApproved, nil
	case ActionReject:
		return reject(rec.By, rec.Comment)
	case ActionTimeout:
		switch ic.OnTimeout {
		case OnTimeoutDefault:
			return normalizeValue(ic.DefaultValue), LabelApproved, nil
		case OnTimeoutEdge:
			return map[string]any{"action": ActionTimeout}, LabelTimeout, nil
		}
		return reject("deadline", "the deadline passed")
	}
	return normalizeValue(value), LabelApproved, nil
}

// hasOutEdge reports whether node i has an outgoing edge labelled label.
func (r *run) hasOutEdge(i int, label string) bool {
	for _, ei := range r.graph.out[i] {
		if r.chain.Edges[ei].Label == label {
			return true
		}
	}
	return false
}

// outcomeRouted reports whether an interrupt node routes by its answer's
// outcome: it has an edge labelled approved, rejected or timeout.
func (r *run) outcomeRouted(i int) bool {
	return r.hasOutEdge(i, LabelApproved) || r.hasOutEdge(i, LabelRejected) || r.hasOutEdge(i, LabelTimeout)
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
