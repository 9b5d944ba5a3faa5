package engine

import (
	"context"
	"sync"
	"time"
)

// Checkpoint kinds. A run's checkpoints form an append-only log: each entry
// records only what changed, so writing one costs what that node did, never
// the size of the run so far. Replaying the log rebuilds the run exactly.
const (
	CheckpointStart  = "start"  // the run began (chain, input)
	CheckpointNode   = "node"   // a node finished: output, state writes, edge decisions, loop counts
	CheckpointPause  = "pause"  // a node asked for a human; the run is paused when nothing else runs
	CheckpointResume = "resume" // a resume began (value or state patch)
	CheckpointEnd    = "end"    // the run ended with a status
	CheckpointEdges  = "edges"  // sequential dispatch decided more of a node's edges
)

// Checkpoint is one entry of a run's log. Exactly one of the record pointers
// is set, matching Kind. Records hold JSON-safe values only.
type Checkpoint struct {
	RunID    string        `json:"run_id"`
	Kind     string        `json:"kind"`
	EventSeq int64         `json:"event_seq"` // the last event seq emitted before this entry
	Time     time.Time     `json:"time"`
	Start    *StartRecord  `json:"start,omitempty"`
	Node     *NodeRecord   `json:"node,omitempty"`
	Pause    *PauseRecord  `json:"pause,omitempty"`
	Resume   *ResumeRecord `json:"resume,omitempty"`
	End      *EndRecord    `json:"end,omitempty"`
	Edges    *EdgesRecord  `json:"edges,omitempty"`
}

// EdgesRecord: edges of a node decided after its completion (routing "all"
// with dispatch "sequential" decides one link at a time).
type EdgesRecord struct {
	Source string            `json:"source"`
	Fired  []string          `json:"fired,omitempty"`
	Pruned []string          `json:"pruned,omitempty"`
	Failed map[string]string `json:"failed,omitempty"` // edge id → guard error: the target fails without running
}

// StartRecord opens a run's log.
type StartRecord struct {
	Chain       *Chain         `json:"chain"`
	Input       map[string]any `json:"input"`
	ParentRunID string         `json:"parent_run_id,omitempty"`
	Depth       int            `json:"depth,omitempty"` // sub-chain nesting
	// A re-run: the node it re-runs from, and the state patch merged into
	// the state before any node runs.
	RerunFrom     string         `json:"rerun_from,omitempty"`
	ModifiedState map[string]any `json:"modified_state,omitempty"`
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
}

// PauseRecord: a node is waiting for a resume value.
type PauseRecord struct {
	NodeID    string `json:"node_id"`
	Prompt    any    `json:"prompt,omitempty"`
	Input     any    `json:"input,omitempty"`
	Attempts  int    `json:"attempts,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
}

// ResumeRecord: a resume claimed the run.
type ResumeRecord struct {
	NodeID        string         `json:"node_id,omitempty"` // the interrupted node, when resuming one
	Value         any            `json:"value,omitempty"`
	HasValue      bool           `json:"has_value"`
	ModifiedState map[string]any `json:"modified_state,omitempty"`
}

// EndRecord closes a run (or one leg of it, before a resume).
type EndRecord struct {
	Status   RunStatus `json:"status"`
	Error    *RunError `json:"error,omitempty"`
	Final    any       `json:"final_output,omitempty"`
	NodesRun int       `json:"nodes_run"`
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

// Checkpointer persists runs' checkpoint logs.
//
// Append adds entries to a run's log, in order; the engine batches entries so
// one call may carry several. Append must not keep the slice (the engine
// reuses its array); the records it points to are never modified. Load returns the whole log, or a
// *ChainCheckpointError when the run is unknown. ClaimInterrupt atomically
// claims the oldest unclaimed pause of the run and returns its node id; when
// none is pending it returns an *AlreadyResumedError. Of concurrent claims of
// one pause exactly one succeeds.
type Checkpointer interface {
	Append(ctx context.Context, runID string, cps []Checkpoint) error
	Load(ctx context.Context, runID string) ([]Checkpoint, error)
	ClaimInterrupt(ctx context.Context, runID string) (nodeID string, err error)
}

// MemoryCheckpointer keeps checkpoint logs in memory.
type MemoryCheckpointer struct {
	mu      sync.Mutex
	logs    map[string][]Checkpoint
	pending map[string][]string // run → unclaimed paused node ids, oldest first
}

// NewMemoryCheckpointer returns an empty in-memory checkpointer.
func NewMemoryCheckpointer() *MemoryCheckpointer {
	return &MemoryCheckpointer{logs: map[string][]Checkpoint{}, pending: map[string][]string{}}
}

func (m *MemoryCheckpointer) Append(_ context.Context, runID string, cps []Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	log := m.logs[runID]
	if log == nil {
		log = make([]Checkpoint, 0, max(16, len(cps)))
	}
	m.logs[runID] = append(log, cps...)
	for _, cp := range cps {
		switch cp.Kind {
		case CheckpointPause:
			m.pending[runID] = append(m.pending[runID], cp.Pause.NodeID)
		case CheckpointEnd:
			if cp.End.Status != StatusPaused {
				delete(m.pending, runID)
			}
		}
	}
	return nil
}

func (m *MemoryCheckpointer) Load(_ context.Context, runID string) ([]Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	log, ok := m.logs[runID]
	if !ok {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "no such run"}
	}
	return append([]Checkpoint(nil), log...), nil
}

func (m *MemoryCheckpointer) ClaimInterrupt(_ context.Context, runID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.logs[runID]; !ok {
		return "", &ChainCheckpointError{RunID: runID, Msg: "no such run"}
	}
	p := m.pending[runID]
	if len(p) == 0 {
		return "", &AlreadyResumedError{RunID: runID}
	}
	m.pending[runID] = p[1:]
	return p[0], nil
}
