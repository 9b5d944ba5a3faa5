package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/chain"
)

// The records of a run's checkpoint log, and the one reader of it that
// turns entries into node results. The live run, replay (resume) and the
// store's read side all derive a node's result from these records through
// the functions below, so a new record field or outcome is handled in one
// place. docs/design.md ("Node outcomes and the run's state")
// describes the path.

// EdgesRecord: edges of a node decided after its completion (routing "all"
// with dispatch "sequential" decides one link at a time).
type EdgesRecord struct {
	Source string            `json:"source"`
	Fired  []string          `json:"fired,omitempty"`
	Pruned []string          `json:"pruned,omitempty"`
	Failed map[string]string `json:"failed,omitempty"` // edge id → guard error: the target fails without running
	// Decisions: what was evaluated to decide these edges (decision.go).
	// Logs written before decisions were recorded have none.
	Decisions []Decision `json:"decisions,omitempty"`
}

// StartRecord opens a run's log.
type StartRecord struct {
	Chain       *chain.Chain   `json:"chain"`
	Input       map[string]any `json:"input"`
	ParentRunID string         `json:"parent_run_id,omitempty"`
	Depth       int            `json:"depth,omitempty"` // sub-chain nesting
	// A re-run: the node it re-runs from, and the state patch merged into
	// the state before any node runs.
	RerunFrom     string         `json:"rerun_from,omitempty"`
	ModifiedState map[string]any `json:"modified_state,omitempty"`
	PatchedBy     string         `json:"patched_by,omitempty"` // who sent ModifiedState
	// Pinned: the run is one node run alone, its upstream pinned (RunNode).
	Pinned *PinnedRecord `json:"pinned,omitempty"`
	// UsesPins: the run uses the chain's pinned outputs (RunOptions.UsePins);
	// a resume or takeover of it does too.
	UsesPins bool `json:"uses_pins,omitempty"`
}

// NodeRecord is a node's completion: everything the scheduler changed.
type NodeRecord struct {
	NodeID     string            `json:"node_id"`
	Status     Phase             `json:"status"` // done | error | skip
	Input      any               `json:"input,omitempty"`
	Output     any               `json:"output,omitempty"`
	Error      string            `json:"error,omitempty"`
	ErrorCode  string            `json:"error_code,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Matched    string            `json:"matched,omitempty"`
	Attempts   int               `json:"attempts,omitempty"`
	Iteration  int               `json:"iteration,omitempty"`
	Started    time.Time         `json:"started,omitzero"`
	Ended      time.Time         `json:"ended,omitzero"`
	State      map[string]any    `json:"state,omitempty"` // keys set by set_state (or a resume's modified_state)
	Fired      []string          `json:"fired,omitempty"` // outgoing edge ids that fired
	Pruned     []string          `json:"pruned,omitempty"`
	Held       bool              `json:"held,omitempty"`       // a loop edge fired: un-fired edges wait for the next pass
	Handled    string            `json:"handled,omitempty"`    // on_error handler node started instead of routing
	Fatal      bool              `json:"fatal,omitempty"`      // the failure stopped the run (on_error abort)
	Partial    bool              `json:"partial,omitempty"`    // done, but some map items or parallel branches failed and were handled: the run is partial
	Sequential bool              `json:"sequential,omitempty"` // edges are decided one at a time by later "edges" entries
	Deferred   string            `json:"deferred,omitempty"`   // routing all, parallel: a default edge held until the fired targets finish; an "edges" entry fires it
	Failed     map[string]string `json:"failed,omitempty"`     // edge id → guard error (routing all): the target fails without running
	Reused     bool              `json:"reused,omitempty"`     // a re-run kept the output from the earlier run
	Pinned     bool              `json:"pinned,omitempty"`     // the output is the chain's pin: the node did not run (RunOptions.UsePins)
	// Credentialed: the node's call sent a stored credential (Event.Credentialed).
	Credentialed bool `json:"credentialed,omitempty"`
	// Decisions: the router's own tests and the decisions on the node's
	// outgoing edges that evaluated something or applied a rule
	// (decision.go). Logs written before decisions were recorded have none.
	Decisions []Decision `json:"decisions,omitempty"`

	// OutputJSON is shared with the node's event (Event.OutputJSON): a
	// store encodes the output once for both. Not part of the record.
	OutputJSON *OutputJSON `json:"-"`
}

// OutputJSON is the JSON of one node outcome's output, encoded by whichever
// of the node's event and its checkpoint record a store writes first and
// reused for the other (a persisted run encoded each output twice: a sixth
// of the studio's CPU on a 1,000-node run). The engine only allocates it
// (commit); it never encodes. The first encoding stored wins and never
// changes, so the event and the record carry the same bytes. Code that
// changes an event's or record's Output must clear the pointer.
type OutputJSON struct {
	mu    sync.Mutex
	b     []byte
	taken bool // Take handed the encoding on: it is no longer kept
}

// Load returns the stored encoding, or nil.
func (o *OutputJSON) Load() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b
}

// Store keeps b unless an encoding is already stored, and returns the one
// kept: every caller gets the same bytes. After Take it keeps nothing.
func (o *OutputJSON) Store(b []byte) []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.taken {
		return b
	}
	if o.b == nil {
		o.b = b
	}
	return o.b
}

// Take returns the stored encoding, or nil, and keeps it no longer: the
// second of the event and the record to be encoded takes it, so a large
// output's JSON is not held for the rest of the run once both are written
// (a later encoding, a retried write's, encodes the output again, to the
// same bytes).
func (o *OutputJSON) Take() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.b
	if b != nil {
		o.b, o.taken = nil, true
	}
	return b
}

// PauseRecord: a node is waiting for a resume value. One node may hold
// several pauses at once (map items, parallel branches, a sub-chain's
// pauses); PauseID tells them apart (docs/chain-format.md, "Pauses inside
// map items, branches and sub-chains").
type PauseRecord struct {
	NodeID    string `json:"node_id"`
	PauseID   string `json:"pause_id,omitempty"`   // "": the node id (a top-level interrupt; logs written before pause ids)
	Slot      *int   `json:"slot,omitempty"`       // the map item or parallel branch that paused
	SubRunID  string `json:"sub_run_id,omitempty"` // the sub-chain run that holds the pause (skills)
	Prompt    any    `json:"prompt,omitempty"`
	Input     any    `json:"input,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	// Approval: an interrupt node's schema, proposed value, deadline and
	// escalation (approval.go); nil for a pause a tool asked for.
	Approval *ApprovalInfo `json:"approval,omitempty"`
	// State is what the tool that paused carries on with
	// (tool.InterruptError.State); never shown.
	State any `json:"state,omitempty"`
}

// ID is the pause's id: PauseID, or the node id for a top-level interrupt.
func (rec *PauseRecord) ID() string {
	if rec.PauseID != "" {
		return rec.PauseID
	}
	return rec.NodeID
}

// SlotsRecord: map items or parallel branches of a paused node that
// finished; a resume of the node keeps their outputs instead of running
// them again.
type SlotsRecord struct {
	NodeID string       `json:"node_id"`
	Done   []SlotOutput `json:"done"`
}

// SlotOutput is one finished map item or parallel branch.
type SlotOutput struct {
	Slot    int  `json:"slot"`
	Output  any  `json:"output,omitempty"`
	Handled bool `json:"handled,omitempty"` // its failure was handled (the run ends partial)
}

// ResumeRecord: a resume claimed the run. With a value it is the answer's
// audit entry: who answered, when, from where, how and why.
type ResumeRecord struct {
	NodeID        string         `json:"node_id,omitempty"`  // the interrupted node, when resuming one
	PauseID       string         `json:"pause_id,omitempty"` // the claimed pause ("": NodeID, older logs)
	Value         any            `json:"value,omitempty"`
	HasValue      bool           `json:"has_value"`
	ModifiedState map[string]any `json:"modified_state,omitempty"`
	Action        string         `json:"action,omitempty"` // approve | reject | respond | timeout; "" is respond
	Comment       string         `json:"comment,omitempty"`
	By            string         `json:"by,omitempty"`      // who answered, as the host knows them
	Address       string         `json:"address,omitempty"` // the client address the answer came from
	At            time.Time      `json:"at,omitzero"`       // when the answer was accepted
}

// EndRecord closes a run (or one leg of it, before a resume).
type EndRecord struct {
	Status   chain.RunStatus `json:"status"`
	Error    *RunError       `json:"error,omitempty"`
	Final    any             `json:"final_output,omitempty"`
	NodesRun int             `json:"nodes_run"`
	Outcome  string          `json:"outcome,omitempty"` // Result.Outcome
	// Unfinished: how the nodes that have no finished entry ended this leg:
	// never reached (skip, with why) or stopped while running (error). It
	// completes the run's record for readers; replay ignores it, so a resume
	// runs them.
	Unfinished []UnfinishedNode `json:"unfinished,omitempty"`
}

// UnfinishedNode is one node of EndRecord.Unfinished.
type UnfinishedNode struct {
	NodeID    string `json:"node_id"`
	Status    Phase  `json:"status"` // skip | error
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
}

// result is what a finished node's record says about it.
func (rec *NodeRecord) result() NodeResult {
	return NodeResult{
		NodeID: rec.NodeID, Status: rec.Status, Input: rec.Input, Output: rec.Output,
		Error: rec.Error, ErrorCode: rec.ErrorCode, Reason: rec.Reason, Matched: rec.Matched,
		Attempts: rec.Attempts, Iteration: rec.Iteration, Started: rec.Started, Ended: rec.Ended, Reused: rec.Reused, Pinned: rec.Pinned, Partial: rec.Partial,
		Credentialed: rec.Credentialed,
	}
}

// applyTo shows nr waiting for a human. What the node did before (a loop's
// earlier pass) is no longer its result; its times stay.
func (rec *PauseRecord) applyTo(nr *NodeResult) {
	nr.Status = PhasePaused
	if rec.Input != nil {
		nr.Input = rec.Input
	}
	if rec.Attempts > 0 {
		nr.Attempts = rec.Attempts
	}
	if rec.Iteration > 0 {
		nr.Iteration = rec.Iteration
	}
	nr.Prompt = rec.Prompt
	nr.Output, nr.Error, nr.Reason, nr.Matched = nil, "", "", ""
}

// applyTo shows how a node without a finished entry ended a run's leg;
// ended is the end entry's time (zero keeps nr's). Input and output of an
// earlier pass are not this pass's, so they go.
func (u *UnfinishedNode) applyTo(nr *NodeResult, ended time.Time) {
	nr.Status, nr.Reason, nr.Error = u.Status, u.Reason, u.Error
	nr.Input, nr.Output, nr.Matched, nr.Prompt = nil, nil, "", nil
	if u.Attempts > 0 {
		nr.Attempts = u.Attempts
	}
	if u.Iteration > 0 {
		nr.Iteration = u.Iteration
	}
	if !ended.IsZero() {
		nr.Ended = ended
	}
}

// NodeResultFold rebuilds a run's node results from its checkpoint log, in
// the order the nodes first finished or paused: a node entry replaces what
// the node did before (a loop's last pass wins); a pause shows the node
// waiting, with its prompt; a run's end adds the nodes that never finished
// (skipped, or stopped with an error), until a resume makes them pending
// again. Entries of other kinds are ignored, so a reader may feed it the
// node, pause, end and resume entries only. The zero value is ready to use.
type NodeResultFold struct {
	// Only limits the fold to one node ("" for all). The reader may then
	// feed only that node's entries plus every end and resume entry.
	Only string

	out     []NodeResult
	at      map[string]int  // node id → index in out
	fromEnd map[string]bool // results an end entry supplied (unfinished nodes)
}

// Add folds the next log entry in. An entry without the record its kind
// names is an error (a corrupt log).
func (f *NodeResultFold) Add(cp *Checkpoint) error {
	switch cp.Kind {
	case CheckpointNode:
		if cp.Node == nil {
			break
		}
		*f.result(cp.Node.NodeID) = cp.Node.result()
		return nil
	case CheckpointPause:
		if cp.Pause == nil {
			break
		}
		cp.Pause.applyTo(f.result(cp.Pause.NodeID))
		return nil
	case CheckpointEnd:
		if cp.End == nil {
			break
		}
		for k := range cp.End.Unfinished {
			u := &cp.End.Unfinished[k]
			if f.Only != "" && u.NodeID != f.Only {
				continue
			}
			u.applyTo(f.result(u.NodeID), cp.Time)
			if f.fromEnd == nil {
				f.fromEnd = map[string]bool{}
			}
			f.fromEnd[u.NodeID] = true
		}
		return nil
	case CheckpointResume: // the nodes the last end left unfinished are pending again
		for id := range f.fromEnd {
			f.out[f.at[id]].NodeID = "" // dropped; a later entry adds it anew
			delete(f.at, id)
		}
		f.fromEnd = nil
		return nil
	default:
		return nil
	}
	return fmt.Errorf("a %s entry without its record", cp.Kind)
}

// result is the node's entry, added at the end of the order the first time.
func (f *NodeResultFold) result(id string) *NodeResult {
	i, ok := f.at[id]
	if !ok {
		if f.at == nil {
			f.at = map[string]int{}
		}
		i = len(f.out)
		f.at[id] = i
		f.out = append(f.out, NodeResult{NodeID: id})
	}
	delete(f.fromEnd, id)
	return &f.out[i]
}

// Results returns the folded node results, in the order the nodes first
// finished or paused. The slice is the fold's own: a later Add may change it.
func (f *NodeResultFold) Results() []NodeResult {
	if len(f.out) == len(f.at) { // nothing dropped
		return f.out
	}
	out := f.out[:0]
	for _, nr := range f.out {
		if nr.NodeID != "" {
			out = append(out, nr)
		}
	}
	f.out = out
	for k := range out {
		f.at[out[k].NodeID] = k
	}
	return out
}

// FoldNodeResults folds a whole checkpoint log (see NodeResultFold).
func FoldNodeResults(log []Checkpoint) ([]NodeResult, error) {
	var f NodeResultFold
	for k := range log {
		if err := f.Add(&log[k]); err != nil {
			return nil, fmt.Errorf("checkpoint entry %d: %w", k, err)
		}
	}
	return f.Results(), nil
}
