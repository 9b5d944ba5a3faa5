package engine

import (
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// RunError describes why a run failed.
type RunError struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	NodeID  string        `json:"node_id,omitempty"`
	EdgeID  string        `json:"edge_id,omitempty"`
	Issues  []chain.Issue `json:"issues,omitempty"`
	// Details say more for some codes: budget_exceeded names the budget
	// ({"budget": "node_executions", "limit": 1000000}).
	Details map[string]any `json:"details,omitempty"`
}

func (e *RunError) Error() string { return e.Message }

// NodeResult is what one node did in a run (its latest execution).
type NodeResult struct {
	NodeID    string    `json:"node_id"`
	Status    Phase     `json:"status"` // done | error | skip | paused | start (running)
	Input     any       `json:"input,omitempty"`
	Output    any       `json:"output,omitempty"`
	Error     string    `json:"error,omitempty"`
	ErrorCode string    `json:"error_code,omitempty"` // an error's code (node_error, budget_exceeded, …), as an on_error handler reads it
	Reason    string    `json:"reason,omitempty"`
	Matched   string    `json:"matched,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	Iteration int       `json:"iteration,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Ended     time.Time `json:"ended,omitzero"`
	Prompt    any       `json:"prompt,omitempty"` // paused nodes
	Reused    bool      `json:"reused,omitempty"` // a re-run kept this output from the earlier run
	Pinned    bool      `json:"pinned,omitempty"` // the output is the chain's pin: the node did not run
	// Partial: done, but some of its map items or parallel branches failed
	// and were handled ({"error": …} entries, on_error, any_success).
	Partial bool `json:"partial,omitempty"`
	// Credentialed: the node's call sent a stored credential, so Output is
	// what a server answered to it (Event.Credentialed).
	Credentialed bool `json:"credentialed,omitempty"`
}

// Pending is an interrupt waiting for a resume value.
type Pending struct {
	PauseID string    `json:"pause_id"`
	NodeID  string    `json:"node_id"`
	Prompt  any       `json:"prompt,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	slot    *int      // the map item or branch that paused
	sub     string    // the sub-chain run holding it
	// approval: the interrupt node's approval settings (nil: a tool's pause,
	// or a pause inside a sub-chain, which is answered with a value).
	approval *ApprovalInfo
	state    any // the tool's State, handed back when it is answered
}

// Approval returns the approval settings of the interrupt node that paused
// (schema, proposed value, approvers); nil for a pause a tool asked for.
func (p Pending) Approval() *ApprovalInfo { return p.approval }

// SubRun is the sub-chain run that holds the pause ("" when the pause is
// the run's own): its log has the inner pause, with the inner interrupt's
// approval settings.
func (p Pending) SubRun() string { return p.sub }

// TakesActions reports whether the pause is answered with approve / reject
// (an interrupt node's, or a tool's approval: an agent's gated call); any
// other pause a tool asks for takes respond with a value only.
func (p Pending) TakesActions() bool { return p.approval != nil }

// Result is the outcome of Run or Resume.
type Result struct {
	RunID       string                 `json:"run_id"`
	Status      chain.RunStatus        `json:"status"`
	Outputs     map[string]any         `json:"outputs"`
	FinalOutput any                    `json:"final_output"`
	Error       *RunError              `json:"error,omitempty"`
	DurationMS  int64                  `json:"duration_ms"`
	NodesRun    int                    `json:"nodes_run"`
	Nodes       map[string]*NodeResult `json:"nodes,omitempty"`
	State       map[string]any         `json:"state,omitempty"`
	Pending     []Pending              `json:"pending,omitempty"`
	Started     time.Time              `json:"started"`
	Ended       time.Time              `json:"ended"`
	// Outcome is OutcomeRejected when a person's (or a deadline's) "no"
	// decided how the run ended (outcome.go: runOutcome); "" otherwise.
	Outcome string `json:"outcome,omitempty"`

	err error // the typed error behind Error
}
