package engine

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/chain"
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
	CheckpointSlots  = "slots"  // map items or branches of a paused node finished
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
	Slots    *SlotsRecord  `json:"slots,omitempty"`
}

// Checkpointer persists runs' checkpoint logs.
//
// Append adds entries to a run's log, in order; the engine batches entries so
// one call may carry several. Append must not keep the slice (the engine
// reuses its array); the records it points to are never modified. Load returns the whole log, or a
// *ChainCheckpointError when the run is unknown. ClaimInterrupt atomically
// claims the unclaimed pause pauseID of the run (PauseRecord.ID), or with
// pauseID "" the oldest unclaimed one, and returns its pause id; when that
// pause is not pending it returns an *AlreadyResumedError. Of concurrent
// claims of one pause exactly one succeeds.
type Checkpointer interface {
	Append(ctx context.Context, runID string, cps []Checkpoint) error
	Load(ctx context.Context, runID string) ([]Checkpoint, error)
	ClaimInterrupt(ctx context.Context, runID, pauseID string) (claimed string, err error)
}

// MemoryCheckpointer keeps checkpoint logs in memory.
type MemoryCheckpointer struct {
	mu      sync.Mutex
	logs    map[string][]Checkpoint
	pending map[string][]string // run → unclaimed pause ids, oldest first
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
			m.pending[runID] = append(m.pending[runID], cp.Pause.ID())
		case CheckpointEnd:
			if cp.End.Status != chain.StatusPaused {
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

func (m *MemoryCheckpointer) ClaimInterrupt(_ context.Context, runID, pauseID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.logs[runID]; !ok {
		return "", &ChainCheckpointError{RunID: runID, Msg: "no such run"}
	}
	p := m.pending[runID]
	k := 0
	if pauseID != "" {
		k = slices.Index(p, pauseID)
	}
	if k < 0 || len(p) == 0 {
		return "", &AlreadyResumedError{RunID: runID, PauseID: pauseID}
	}
	id := p[k]
	m.pending[runID] = slices.Delete(slices.Clone(p), k, k+1)
	return id, nil
}
