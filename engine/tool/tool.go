// Package tool holds the contract between the engine and the tools it calls.
// It is a leaf package so that tool implementations (engine/builtin, or a host's
// own) do not depend on the scheduler.
package tool

import (
	"context"
	"errors"
	"fmt"
)

// Func is a tool: it receives the node's resolved input and returns a
// JSON-compatible output (map[string]any, []any, string, float64, bool, nil;
// other numeric types are normalised by the engine). A tool must not mutate
// its input: the engine may share it with other nodes.
//
// emit reports progress; each call becomes a "progress" event of the node.
type Func func(ctx context.Context, input map[string]any, emit Emitter) (any, error)

// Emitter reports progress from inside a running tool.
type Emitter func(progress any)

type ctxKey int

const (
	attemptKey ctxKey = iota
	resumeKey
	nodeKey
)

// WithAttempt returns a context that carries the 1-based attempt number.
func WithAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, attemptKey, attempt)
}

// Attempt returns the 1-based attempt number of the current call (1 when unknown).
func Attempt(ctx context.Context) int {
	if a, ok := ctx.Value(attemptKey).(int); ok && a > 0 {
		return a
	}
	return 1
}

// resumed wraps a resume value so that a nil value can still be "present".
type resumed struct{ value any }

// WithResume returns a context carrying the value a paused node was resumed with.
func WithResume(ctx context.Context, value any) context.Context {
	return context.WithValue(ctx, resumeKey, resumed{value})
}

// Resume returns the value the node was resumed with, and whether it was resumed.
func Resume(ctx context.Context) (any, bool) {
	r, ok := ctx.Value(resumeKey).(resumed)
	return r.value, ok
}

// WithNode returns a context naming the node being run (for error messages).
func WithNode(ctx context.Context, nodeID string) context.Context {
	return context.WithValue(ctx, nodeKey, nodeID)
}

// Node returns the id of the node being run, or "".
func Node(ctx context.Context) string {
	s, _ := ctx.Value(nodeKey).(string)
	return s
}

// InterruptError asks the engine to pause the run at the calling node until a
// person (or program) resumes it with a value. Return it from a tool with
// Interrupt(prompt).
type InterruptError struct {
	Prompt any
	// Approve makes the pause an approval: a person approves Proposed (or
	// a value they edited) or rejects it, as at an interrupt node, instead
	// of answering with a value of their own.
	Approve  bool
	Proposed any
	// State is what the tool needs to carry on where it stopped. It is
	// stored with the pause, never shown, and handed back in Answer.State
	// when the node runs again; it must be a JSON value.
	State any
}

func (e *InterruptError) Error() string { return fmt.Sprintf("interrupt: %v", e.Prompt) }

// Interrupt returns an error that pauses the run with the given prompt.
func Interrupt(prompt any) error { return &InterruptError{Prompt: prompt} }

// ApprovalInterrupt returns an error that pauses the run for a person to
// approve proposed (or reject it); state comes back in Answer.State.
func ApprovalInterrupt(prompt, proposed, state any) error {
	return &InterruptError{Prompt: prompt, Approve: true, Proposed: proposed, State: state}
}

// Answer is how a pause a tool asked for was answered, handed to the tool
// when its node runs again.
type Answer struct {
	// Action is approve, reject or respond.
	Action  string
	Value   any // the approved (maybe edited) value, or the response
	Comment string
	By      string
	// State is the InterruptError's State.
	State any
}

type answerKey struct{}

// WithAnswer returns a context carrying the answer to the node's pause.
func WithAnswer(ctx context.Context, a Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, a)
}

// AnswerFrom returns the answer the node was resumed with, when it paused
// itself (InterruptError) and was answered.
func AnswerFrom(ctx context.Context) (Answer, bool) {
	a, ok := ctx.Value(answerKey{}).(Answer)
	return a, ok
}

// IsInterrupt reports whether err asks for a pause, and returns the request.
func IsInterrupt(err error) (*InterruptError, bool) {
	var ie *InterruptError
	if errors.As(err, &ie) {
		return ie, true
	}
	return nil, false
}

// ErrDenied is wrapped by tools that refuse an operation the host has not
// allowed (a path outside the workspace, an executable not on the allow-list,
// a forbidden network address).
var ErrDenied = errors.New("denied by host policy")

// Execution names one execution of a node in a run. It is the same for
// every attempt of that execution and when the run is resumed or taken
// over after a crash, so a tool can key what it must do once (an append
// to a store) by it.
type Execution struct {
	RunID  string
	Chain  string // the chain's name
	NodeID string
	// Iteration counts the node's executions in the run (loops); Item is
	// the map item index, -1 outside a map body.
	Iteration int
	Item      int
}

// Key is the execution's idempotency key: run, node, iteration and item.
func (e Execution) Key() string {
	return fmt.Sprintf("%s/%s/%d/%d", e.RunID, e.NodeID, e.Iteration, e.Item)
}

type executionKey struct{}

// WithExecution returns a context naming the node execution it runs.
func WithExecution(ctx context.Context, e Execution) context.Context {
	return context.WithValue(ctx, executionKey{}, e)
}

// ExecutionFrom returns the node execution ctx names, if any.
func ExecutionFrom(ctx context.Context) (Execution, bool) {
	e, ok := ctx.Value(executionKey{}).(Execution)
	return e, ok
}
