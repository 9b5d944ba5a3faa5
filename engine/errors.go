package engine

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes, A2E style: A2E's error table (chain_cycle, chain_node_error) plus the
// ones this engine adds (docs/chain-format.md, "A2E compatibility").
const (
	CodeCycle          = "chain_cycle"
	CodeNodeError      = "chain_node_error"
	CodeRouting        = "chain_routing"
	CodeCheckpoint     = "chain_checkpoint"
	CodeResume         = "chain_resume"
	CodeAlreadyResumed = "already_resumed"
	CodeTimeout        = "chain_timeout"
	CodeCancelled      = "chain_cancelled"
)

// Coded is implemented by every engine error: Code returns its A2E-style code.
type Coded interface {
	error
	Code() string
}

// CodeOf returns the code of the first Coded error in err's chain, or "".
func CodeOf(err error) string {
	var c Coded
	if errors.As(err, &c) {
		return c.Code()
	}
	return ""
}

// ChainCycleError reports a cycle without a cap, or a loop edge that reached
// its cap with on_max_reached "error".
type ChainCycleError struct {
	Path          []string // node ids along the cycle, first repeated at the end
	EdgeID        string
	MaxIterations int
}

func (e *ChainCycleError) Code() string { return CodeCycle }
func (e *ChainCycleError) Error() string {
	if e.EdgeID != "" {
		return fmt.Sprintf("loop edge %s reached max_iterations %d", e.EdgeID, e.MaxIterations)
	}
	return "cycle without max_iterations: " + strings.Join(e.Path, " -> ")
}

// ChainNodeError is a node's failure after its retries.
type ChainNodeError struct {
	NodeID  string
	Attempt int
	Err     error
}

func (e *ChainNodeError) Code() string { return CodeNodeError }
func (e *ChainNodeError) Error() string {
	if e.Attempt > 1 {
		return fmt.Sprintf("node %q failed after %d attempts: %v", e.NodeID, e.Attempt, e.Err)
	}
	return fmt.Sprintf("node %q failed: %v", e.NodeID, e.Err)
}
func (e *ChainNodeError) Unwrap() error { return e.Err }

// ChainRoutingError is raised under strict_routing when no outgoing edge matched.
type ChainRoutingError struct {
	NodeID  string
	Matched string   // the handle a condition node matched, if any
	Labels  []string // labels of the node's outgoing edges
}

func (e *ChainRoutingError) Code() string { return CodeRouting }
func (e *ChainRoutingError) Error() string {
	labels := "none"
	if len(e.Labels) > 0 {
		labels = strings.Join(e.Labels, ", ")
	}
	if e.Matched != "" {
		return fmt.Sprintf("strict routing: node %q matched %q but no edge is labelled %q, \"default\" or unlabelled (edge labels: %s)", e.NodeID, e.Matched, e.Matched, labels)
	}
	return fmt.Sprintf("strict routing: no outgoing edge of node %q matched (edge labels: %s)", e.NodeID, labels)
}

// ChainCheckpointError: no checkpoint for the run, or it cannot be read.
type ChainCheckpointError struct {
	RunID string
	Msg   string
}

func (e *ChainCheckpointError) Code() string { return CodeCheckpoint }
func (e *ChainCheckpointError) Error() string {
	return fmt.Sprintf("checkpoint for run %q: %s", e.RunID, e.Msg)
}

// ChainResumeError: the run cannot be resumed as asked (an interrupted run
// resumed without a value, a completed run resumed without one). It is a
// ChainCheckpointError, so callers that only know that type still catch it.
type ChainResumeError struct {
	ChainCheckpointError
}

func (e *ChainResumeError) Code() string { return CodeResume }

// As lets errors.As(err, **ChainCheckpointError) match a resume error.
func (e *ChainResumeError) As(target any) bool {
	if t, ok := target.(**ChainCheckpointError); ok {
		*t = &e.ChainCheckpointError
		return true
	}
	return false
}

// AlreadyResumedError: a resume value was given but nothing is pending: the run
// was never interrupted, or another resume already claimed the interrupt.
type AlreadyResumedError struct {
	RunID   string
	PauseID string // the pause asked for, when one was named
}

func (e *AlreadyResumedError) Code() string { return CodeAlreadyResumed }
func (e *AlreadyResumedError) Error() string {
	if e.PauseID != "" {
		return fmt.Sprintf("pause %q of run %q is not pending: it was already answered", e.PauseID, e.RunID)
	}
	return fmt.Sprintf("run %q has no pending interrupt: it was never interrupted or was already resumed", e.RunID)
}

// ErrAlreadyResumed matches any *AlreadyResumedError with errors.Is.
var ErrAlreadyResumed = errors.New("already resumed")

func (e *AlreadyResumedError) Is(target error) bool { return target == ErrAlreadyResumed }
