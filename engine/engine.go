// Package engine is Chain Studio's runtime: it runs a plan that package
// chain compiled (routing, event-driven execution, checkpoints, resume) and
// never checks a chain itself. It has no HTTP and no SQL in it; hosts plug
// in tools, a checkpointer, an event sink, a resolver for sub-chains and
// the compiler of the chains it meets without a plan.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/google/uuid"
)

// ChainResolver finds a saved chain by name, for skill nodes.
type ChainResolver func(ctx context.Context, name string) (*chain.Chain, error)

// AgentRunner executes agent nodes (the agent-chaining runtime plugs in here).
type AgentRunner func(ctx context.Context, node *chain.Node, input map[string]any, emit tool.Emitter) (any, error)

// Options configure an Engine. Every field is optional.
type Options struct {
	Registry       *Registry
	Checkpointer   Checkpointer // default: in memory
	Sink           EventSink    // receives every run's events
	Chains         ChainResolver
	Agent          AgentRunner
	Limits         chain.Limits
	MaxConcurrency int // per run, when the chain sets none
	// ExprBudget bounds each expression evaluation of a run (zero fields:
	// expr.DefaultBudget); it reaches tools through the run's context.
	ExprBudget expr.Budget
	// AttemptContext, when set, gives the context one attempt of a node
	// executes under (tracing: it carries the attempt's span and a
	// tool.Tracer). nil: the run's context, at no cost.
	AttemptContext func(ctx context.Context, a AttemptInfo) context.Context
	// OnRun, when set, hears each run (and each resume or takeover of one)
	// begin executing, with the chain it executes: what a tracer needs to
	// describe nodes that never execute an attempt (routers, skips).
	OnRun func(runID string, c *chain.Chain)
	// RunContext, when set, gives the context a run (and each resume or
	// takeover of one) executes under, from the chain it executes: what
	// holds its model calls to the chain's budgets. nil: the caller's.
	RunContext func(ctx context.Context, runID string, c *chain.Chain) context.Context
	// Compile checks a chain the runtime meets without a plan against the
	// host's environment: a skill's sub-chain, and the chain a run being
	// resumed, taken over or re-run recorded at its start. nil: the chain
	// rules and Limits alone. It returns a plan even when the chain has
	// errors (see Compile).
	Compile func(ctx context.Context, c *chain.Chain) (*chain.Plan, error)
}

// AttemptInfo names one attempt of a node executing in a run, for
// Options.AttemptContext. Its start event has been emitted already.
type AttemptInfo struct {
	RunID   string
	NodeID  string
	Kind    chain.Kind
	Name    string // the tool, agent or sub-chain
	Item    *int   // map body: the item index
	Attempt int
}

// Engine runs chains. It is safe for concurrent use; one Engine serves many runs.
type Engine struct {
	opts   Options
	active runSet // runs executing in this process
}

// New returns an engine.
func New(opts Options) *Engine {
	if opts.Registry == nil {
		opts.Registry = NewRegistry()
	}
	if opts.Checkpointer == nil {
		opts.Checkpointer = NewMemoryCheckpointer()
	}
	if opts.Sink == nil {
		opts.Sink = discard{}
	}
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = chain.DefaultMaxConcurrency
	}
	opts.Limits = opts.Limits.WithDefaults()
	return &Engine{opts: opts}
}

// runSet is the set of run ids executing in this process.
type runSet struct {
	mu    sync.Mutex
	m     map[string]struct{}
	boxes map[string]*mailbox // the running runs that take answers
}

// Load reports whether id is in the set.
func (s *runSet) Load(id string) (struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[id]
	return struct{}{}, ok
}

// LoadOrStore adds id unless present; it reports whether it was present.
func (s *runSet) LoadOrStore(id string, v struct{}) (struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[id]; ok {
		return v, true
	}
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	s.m[id] = v
	return v, false
}

// Delete removes id.
func (s *runSet) Delete(id string) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// Registry returns the engine's tool registry.
func (e *Engine) Registry() *Registry { return e.opts.Registry }

// Checkpointer returns the engine's checkpointer.
func (e *Engine) Checkpointer() Checkpointer { return e.opts.Checkpointer }

// RunOptions configure one run.
type RunOptions struct {
	RunID       string    // default: a new UUID
	ParentRunID string    // sub-chains
	Sink        EventSink // extra sink for this run only (after the engine's)
	// ModifiedState is merged into the run's state before any node runs; on
	// a re-run it wins over the state writes of the reused nodes.
	ModifiedState map[string]any
	// PatchedBy names who sent ModifiedState (kept in the start entry and
	// its state_patch event).
	PatchedBy string
	// Mocks maps node ids to outputs given instead of running the node: a
	// mocked node's tool, program, sub-chain or agent is never called (its
	// input is still built). Chain tests use it (engine/chaintest).
	Mocks map[string]any
	// MockErrors maps node ids to the error message the node fails with
	// instead of running (its on_error applies; it is not retried).
	MockErrors map[string]string
	// UsePins: pinned nodes (chain.Chain.PinnedOutputs) give their pin
	// instead of running, as a mock does, and their events and records say
	// pinned: the designer's runs of the draft. The start entry records it
	// (StartRecord.UsesPins), so a resume, a takeover or a re-run of the run
	// uses the pins of the document it runs; a sub-chain's run never does.
	// A mock of the same node wins over its pin.
	UsePins   bool
	depth     int
	rerunFrom string
	reuse     map[string]*NodeRecord // re-run from a node: outputs kept from an earlier run
}

// ResumeValue is the value a paused run is resumed with. A nil *ResumeValue
// means "no value" (the resume table in docs/chain-format.md, "Interrupts
// and resume", treats the two differently).
type ResumeValue struct {
	Value any `json:"value"`
	// The answer's action (approve, reject, respond, timeout; "" is
	// respond), comment and audit fields (approval.go).
	Action  string `json:"action,omitempty"`
	Comment string `json:"comment,omitempty"`
	By      string `json:"by,omitempty"`
	Address string `json:"address,omitempty"`
}

// ResumeOptions configure a resume.
type ResumeOptions struct {
	NextSeq int64     // the seq of the first event this leg emits; default: after the last checkpointed one
	Sink    EventSink // extra sink for this leg
	// Claim, when set, replaces the checkpointer's ClaimInterrupt for a
	// resume with a value, and takes the resume entry with it: the host
	// claims the interrupt and hands rec (NodeID filled in) to whoever
	// continues the run, in one transaction, and that one writes the entry
	// (ContinueResume with the record). StartResume then writes nothing.
	// A resume of a failed run (no value) goes the same way: the host
	// claims the run itself (rec.HasValue false, the node id ignored).
	Claim func(ctx context.Context, runID string, rec ResumeRecord) (pauseID string, err error)
	// PauseID names the pause a resume with a value answers; it may be
	// empty when exactly one is pending (choosePause).
	PauseID string
}

// compile checks a chain the runtime meets without a plan with the host's
// Options.Compile. The error is the host's failing to check it; a chain
// with errors gives a plan that is not Valid.
func (e *Engine) compile(ctx context.Context, c *chain.Chain) (*chain.Plan, error) {
	if e.opts.Compile == nil {
		p, _ := chain.Compile(c, chain.ValidateOptions{Limits: e.opts.Limits})
		return p, nil
	}
	p, err := e.opts.Compile(ctx, c)
	if p != nil {
		return p, nil
	}
	if err == nil {
		err = errors.New("the host compiled no plan")
	}
	return nil, fmt.Errorf("engine: compile chain %q: %w", c.Name, err)
}

// Run runs a compiled chain to completion, pause or failure; a plan with
// validation errors is recorded as a run refused (CodeInvalid). The error is
// non-nil only when the host failed (a checkpointer error); how the chain
// ended is in Result.Status and Result.Error, and Result.Err() returns it as
// a typed error.
func (e *Engine) Run(ctx context.Context, p *chain.Plan, input map[string]any, opts RunOptions) (*Result, error) {
	if p == nil || p.Chain() == nil {
		return nil, errors.New("engine: Run needs a plan from chain.Compile")
	}
	if opts.RunID == "" {
		opts.RunID = uuid.NewString()
	}
	if input == nil {
		input = map[string]any{}
	}
	if _, busy := e.active.LoadOrStore(opts.RunID, struct{}{}); busy {
		return nil, fmt.Errorf("engine: run %q is already executing", opts.RunID)
	}
	defer e.active.Delete(opts.RunID)

	r := newRun(ctx, e, p, opts.RunID, chain.NormalizeMap(input), opts.Sink)
	r.depth = opts.depth
	sr := &StartRecord{Chain: p.Chain(), Input: r.scope.input, ParentRunID: opts.ParentRunID, Depth: opts.depth, RerunFrom: opts.rerunFrom,
		UsesPins: opts.UsePins && len(p.Chain().PinnedOutputs) > 0}
	if len(opts.ModifiedState) > 0 {
		sr.ModifiedState, sr.PatchedBy = chain.NormalizeMap(opts.ModifiedState), opts.PatchedBy
		r.rerun.statePatch = sr.ModifiedState
		r.scope.writeState(r.rerun.statePatch)
	}
	r.addCheckpoint(Checkpoint{Kind: CheckpointStart, Start: sr})
	if sr.ModifiedState != nil { // the timeline says what was patched, and by whom
		r.emit(statePatchEvent(sr.ModifiedState, sr.PatchedBy))
	}
	if !p.Valid() {
		verr := &chain.ValidationError{Issues: p.Issues()}
		r.outcome.invalid = true
		r.fail(&RunError{Code: chain.CodeInvalid, Message: verr.Error(), Issues: chain.ErrorsOnly(p.Issues())}, verr)
		return r.finishRun()
	}
	if opts.reuse != nil {
		r.rerun.reuse = opts.reuse
	}
	r.rerun.mocks, r.rerun.mockErrs = opts.Mocks, opts.MockErrors
	if sr.UsesPins {
		r.rerun.pins = p.Chain().PinnedOutputs
	}
	if r.ctx.Err() != nil {
		// Cancelled before it started (a queued run cancelled while it
		// waited, or the studio stopping): recorded, no node runs, it ends
		// cancelled and can be resumed.
		r.stopFromContext()
	} else {
		r.seedRoots()
	}
	r.loop()
	return r.finishRun()
}

// Err returns how the run failed as a typed error (nil when it did not fail).
func (r *Result) Err() error {
	if r.err != nil {
		return r.err
	}
	if r.Error == nil {
		return nil
	}
	return errors.New(r.Error.Message)
}
