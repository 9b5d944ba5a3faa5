package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Phase is a node's execution phase, as carried by events.
type Phase string

const (
	PhaseStart    Phase = "start"
	PhaseDone     Phase = "done"
	PhaseSkip     Phase = "skip"
	PhaseError    Phase = "error"
	PhasePaused   Phase = "paused"
	PhaseProgress Phase = "progress" // a tool's emit, or a map node's item count
	// PhaseStatePatch: the run's state was patched (a re-run's or a failed
	// run's resume modified_state) before its nodes ran on. The event has
	// no node; its output is {"patch": the patch as merged, "by": who sent
	// it, as the host knows them (left out when unknown)}.
	PhaseStatePatch Phase = "state_patch"
)

// statePatchEvent is the event that records a state patch and its sender.
func statePatchEvent(patch map[string]any, by string) Event {
	out := map[string]any{"patch": patch}
	if by != "" {
		out["by"] = by
	}
	return Event{Phase: PhaseStatePatch, Output: out}
}

type senderKey struct{}

// WithSender names who sends the request ctx carries (a user, "token",
// "local"), so that a state patch the engine records says who sent it.
func WithSender(ctx context.Context, by string) context.Context {
	return context.WithValue(ctx, senderKey{}, by)
}

// SenderOf is the sender WithSender named ("" none).
func SenderOf(ctx context.Context) string {
	s, _ := ctx.Value(senderKey{}).(string)
	return s
}

// Skip reasons carried by skip events and node results.
const (
	ReasonConditionFalse  = "condition_false"  // no incoming edge fired: every guard was false
	ReasonBranchNotTaken  = "branch_not_taken" // a branch/condition node chose another edge
	ReasonUpstreamStopped = "upstream_stopped" // the run stopped before the node could run
	ReasonOnErrorSkip     = "on_error_skip"    // the node failed with on_error: skip
	ReasonNotNeeded       = "not_needed"       // an error handler whose owners did not fail, or a node opted out with reachable: false
	ReasonGuardFailed     = "guard_failed"     // routing all: the guard of the edge into the node could not be evaluated; the node never ran, its on_error applied
)

// ReasonRetrying is the reason on an error event that another attempt of the
// node follows.
const ReasonRetrying = "retrying"

// Event is one phase change of one node in one run. Seq is monotonic per run.
type Event struct {
	RunID   string `json:"run_id"`
	Seq     int64  `json:"seq"`
	NodeID  string `json:"node_id"`
	Phase   Phase  `json:"phase"`
	Output  any    `json:"output,omitempty"`
	Error   string `json:"error,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Matched string `json:"matched,omitempty"` // condition/branch nodes: the handle taken
	// Attempt counts the node's attempts, this one included: on a start,
	// the attempt starting; on done or error, how many were made. "attempts"
	// as in node results (NodeResult.Attempts); events stored before the
	// rename said "attempt" and still read (UnmarshalJSON).
	Attempt   int      `json:"attempts,omitempty"`
	Iteration int      `json:"iteration,omitempty"` // 1-based run count of a node inside a loop
	Item      *int     `json:"item,omitempty"`      // map body: the item index
	Progress  any      `json:"progress,omitempty"`
	Prompt    any      `json:"prompt,omitempty"`   // paused: what the node asks for
	PauseID   string   `json:"pause_id,omitempty"` // paused: the pause's id, when it is not the node id
	Edges     []string `json:"edges,omitempty"`    // on done/skip/error: ids of the outgoing edges that fired
	Reused    bool     `json:"reused,omitempty"`   // on start/done of a re-run: the output was kept from the earlier run, the node did not execute
	Pinned    bool     `json:"pinned,omitempty"`   // on start/done: the output is the chain's pin (RunOptions.UsePins), the node did not execute
	// Credentialed: on done/skip/error, the node's call sent a stored
	// credential (an http request's auth), so its output is a server's
	// answer to that credential; hosts hide it from viewers by default.
	Credentialed bool      `json:"credentialed,omitempty"`
	Time         time.Time `json:"time"`

	// Decisions: on done/skip/error, and on the progress event of a
	// sequential link, the routing decisions taken (what each condition
	// read, its result, the rule; see decision.go).
	Decisions []Decision `json:"decisions,omitempty"`

	// OutputJSON: on a node's done/skip/error event, shared with its
	// checkpoint record (NodeRecord.OutputJSON), so a store encodes Output
	// once. Not part of the event.
	OutputJSON *OutputJSON `json:"-"`
}

// UnmarshalJSON reads an event, taking the attempt count from the key
// "attempt" that events were stored with before it was named "attempts".
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var aux struct {
		plain
		Legacy int `json:"attempt"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*e = Event(aux.plain)
	if e.Attempt == 0 {
		e.Attempt = aux.Legacy
	}
	return nil
}

// EventSink receives a run's events in seq order. Emit is called from the
// run's goroutines under the run's event lock; it must not block for long
// (buffer, or drop and let the subscriber catch up from storage).
type EventSink interface {
	Emit(Event)
}

// SinkFunc adapts a function to EventSink.
type SinkFunc func(Event)

func (f SinkFunc) Emit(e Event) { f(e) }

// MultiSink fans events out to several sinks, in order.
type MultiSink []EventSink

func (m MultiSink) Emit(e Event) {
	for _, s := range m {
		s.Emit(e)
	}
}

// MemorySink keeps every event, for tests and headless runs. Events are
// stored in fixed-size chunks so a long run never copies what it already has.
type MemorySink struct {
	mu     sync.Mutex
	chunks [][]Event
	n      int
}

const memorySinkChunk = 512

func (m *MemorySink) Emit(e Event) {
	m.mu.Lock()
	if k := len(m.chunks); k == 0 || len(m.chunks[k-1]) == cap(m.chunks[k-1]) {
		size := 32 // most runs are small; chunks double up to memorySinkChunk
		if k > 0 {
			size = min(2*cap(m.chunks[k-1]), memorySinkChunk)
		}
		m.chunks = append(m.chunks, make([]Event, 0, size))
	}
	last := &m.chunks[len(m.chunks)-1]
	*last = append(*last, e)
	m.n++
	m.mu.Unlock()
}

// Events returns a copy of the events received so far.
func (m *MemorySink) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Event, 0, m.n)
	for _, c := range m.chunks {
		out = append(out, c...)
	}
	return out
}

// discard is the sink used when none is configured.
type discard struct{}

func (discard) Emit(Event) {}

// Flusher is implemented by sinks that buffer: the engine calls Flush when a
// run pauses or ends, so that everything emitted is stored before Run returns.
type Flusher interface {
	Flush(ctx context.Context) error
}
