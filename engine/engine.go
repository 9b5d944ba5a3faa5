package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/google/uuid"
)

// Defaults used when a chain or host sets none.
const (
	DefaultTimeout        = 300 // seconds, as in A2E
	DefaultMaxConcurrency = 64
	DefaultMaxDepth       = 5
)

// ChainResolver finds a saved chain by name, for skill nodes.
type ChainResolver func(ctx context.Context, name string) (*Chain, error)

// AgentRunner executes agent nodes (the agent-chaining runtime plugs in here).
type AgentRunner func(ctx context.Context, node *Node, input map[string]any, emit tool.Emitter) (any, error)

// Options configure an Engine. Every field is optional.
type Options struct {
	Registry       *Registry
	Checkpointer   Checkpointer // default: in memory
	Sink           EventSink    // receives every run's events
	Chains         ChainResolver
	Agent          AgentRunner
	Limits         Limits
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
	OnRun func(runID string, c *Chain)
}

// AttemptInfo names one attempt of a node executing in a run, for
// Options.AttemptContext. Its start event has been emitted already.
type AttemptInfo struct {
	RunID   string
	NodeID  string
	Kind    Kind
	Name    string // the tool, agent or sub-chain
	Item    *int   // map body: the item index
	Attempt int
}

// Engine runs chains. It is safe for concurrent use; one Engine serves many runs.
type Engine struct {
	opts       Options
	active     runSet // runs executing in this process
	checkTools bool   // the host gave its tools: validation refuses a tool it lacks
}

// New returns an engine.
func New(opts Options) *Engine {
	checkTools := opts.Registry != nil
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
		opts.MaxConcurrency = DefaultMaxConcurrency
	}
	opts.Limits = opts.Limits.withDefaults()
	return &Engine{opts: opts, checkTools: checkTools}
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
	depth      int
	rerunFrom  string
	reuse      map[string]*NodeRecord // re-run from a node: outputs kept from an earlier run
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

// Prepared is a chain checked and indexed once, ready to run many times (like
// a prepared statement). It must not be modified while in use.
type Prepared struct {
	chain  *Chain
	g      *graph
	issues []Issue
	plan   *plan
}

// Issues returns the validation issues found when preparing.
func (p *Prepared) Issues() []Issue { return p.issues }

// Chain returns the prepared chain.
func (p *Prepared) Chain() *Chain { return p.chain }

// Prepare validates and indexes a chain.
func (e *Engine) Prepare(ctx context.Context, c *Chain) *Prepared {
	g := newGraph(c)
	issues := validateGraph(g, e.validateOptions(ctx))
	p := &Prepared{chain: c, g: g, issues: issues}
	if !HasErrors(issues) {
		p.plan = newPlan(g, e.opts.Registry)
	}
	return p
}

func (e *Engine) validateOptions(ctx context.Context) ValidateOptions {
	vo := ValidateOptions{Limits: e.opts.Limits, SkipTests: true}
	if e.checkTools {
		// A tool the host lacks, or a static input its schema refuses, is
		// refused before the run starts (unknown_tool, input_schema), on
		// every door, not found failing at its node.
		vo.Tools = e.opts.Registry.Has
		vo.ToolUnavailable = e.opts.Registry.Unavailable
		vo.Schemas = e.opts.Registry.NodeSchemas(nil)
		vo.Check = e.opts.Registry.NodeCheck
	}
	if e.opts.Chains != nil {
		vo.Resolve = func(name string) (*Chain, bool) {
			c, err := e.opts.Chains(ctx, name)
			return c, err == nil && c != nil
		}
	}
	return vo
}

// Run validates and runs a chain to completion, pause or failure. The error is
// non-nil only when the host failed (a checkpointer error); how the chain
// ended is in Result.Status and Result.Error, and Result.Err() returns it as
// a typed error.
func (e *Engine) Run(ctx context.Context, c *Chain, input map[string]any, opts RunOptions) (*Result, error) {
	return e.RunPrepared(ctx, e.Prepare(ctx, c), input, opts)
}

// RunPrepared runs a prepared chain.
func (e *Engine) RunPrepared(ctx context.Context, p *Prepared, input map[string]any, opts RunOptions) (*Result, error) {
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

	r := newRun(ctx, e, p, opts.RunID, normalizeMap(input), opts.Sink)
	r.depth = opts.depth
	sr := &StartRecord{Chain: p.chain, Input: r.scope.input, ParentRunID: opts.ParentRunID, Depth: opts.depth, RerunFrom: opts.rerunFrom}
	if len(opts.ModifiedState) > 0 {
		sr.ModifiedState, sr.PatchedBy = normalizeMap(opts.ModifiedState), opts.PatchedBy
		r.rerun.statePatch = sr.ModifiedState
		r.scope.writeState(r.rerun.statePatch)
	}
	r.addCheckpoint(Checkpoint{Kind: CheckpointStart, Start: sr})
	if sr.ModifiedState != nil { // the timeline says what was patched, and by whom
		r.emit(statePatchEvent(sr.ModifiedState, sr.PatchedBy))
	}
	if p.plan == nil {
		verr := &ValidationError{Issues: p.issues}
		r.outcome.invalid = true
		r.fail(&RunError{Code: CodeInvalid, Message: verr.Error(), Issues: ErrorsOnly(p.issues)}, verr)
		return r.finishRun()
	}
	if opts.reuse != nil {
		r.rerun.reuse = opts.reuse
	}
	r.rerun.mocks, r.rerun.mockErrs = opts.Mocks, opts.MockErrors
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
