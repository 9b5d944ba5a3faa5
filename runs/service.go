// Package runs is the run service: it starts, resumes, re-runs, cancels and
// tracks the runs of this process, and shuts them down. It owns how a run
// executes: the engine with its sinks (the durable event log, the live hub,
// an observer) and its checkpointer. Transports (the HTTP API, the A2E host,
// a future queue worker) call the Service; none of them builds an engine.
package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
	"github.com/google/uuid"
)

// ErrShutdown is the cause runs are cancelled with when the studio stops;
// they are checkpointed and can be resumed after the restart. Start and
// Resume return it once Shutdown has begun.
var ErrShutdown = store.Errorf(store.EUNAVAILABLE, "the studio is shutting down; resume the run after restart")

// Store is the part of a storage backend (store.Backend) the service uses:
// it records runs, reads a run's row and highest event seq, resolves chains
// by name, keeps checkpoint logs, and gives the buffered event writer every
// event goes through.
type Store interface {
	CreateRun(ctx context.Context, r store.Run) (*store.Run, error)
	GetRunInfo(ctx context.Context, id string) (*store.Run, error)
	// MaxSeq is the highest event seq stored for a run (0 for none).
	MaxSeq(ctx context.Context, runID string) (int64, error)
	// EventsAfterBytes reads a run's stored events after a seq, bounded by
	// count and by stored bytes (store.EventStore).
	EventsAfterBytes(ctx context.Context, runID string, afterSeq int64, limit int, maxBytes int64) ([]engine.Event, error)
	// ResolveChain finds a saved chain by name (skill nodes call chains).
	ResolveChain(ctx context.Context, name string) (*chain.Chain, error)
	NewEventWriter(opts store.EventWriterOptions) store.EventWriter
	store.CheckpointStore
}

// Observer hears what the service does, for metrics. Its Emit sees every
// event of every run.
type Observer interface {
	engine.EventSink
	RunStarted(kind string)
	// RunFinished is called once per run the service launched; err is set
	// when the run could not execute at all.
	RunFinished(runID string, res *engine.Result, err error)
	// StoreCall reports the latency of one store call (op names it).
	StoreCall(op string, took time.Duration)
}

// Options configure a Service. Store and Registry are required.
type Options struct {
	Store    Store
	Registry *engine.Registry
	// Agent runs agent nodes. When nil and Agents is set, agent nodes run on
	// the agent runtime over the loaded agents.
	Agent  engine.AgentRunner
	Agents *agent.Set // loaded agents; their compiled chains resolve by name
	// ModelHTTP makes the agents' model calls: builtin.ModelHTTPClient,
	// behind the address guard. Nil is http.DefaultClient, unguarded
	// (tests' loopback fakes).
	ModelHTTP *http.Client
	Limits    chain.Limits
	// ExprBudget bounds each expression evaluation (zero: the default).
	ExprBudget expr.Budget
	Logger     *slog.Logger
	Observer   Observer // nil: nothing observes
	// Tracer traces runs (OpenTelemetry, internal/telemetry); nil: none.
	// Store must then also be a store.UsageStore (the runs' trace contexts).
	Tracer Tracer
	// HubBuffer is how many events a live watcher may fall behind before it
	// is cut loose; default 4096.
	HubBuffer int
	// Events configure the event writer the service opens on Store.
	Events store.EventWriterOptions
	// Now stamps the runs the service creates (Run.Started); default
	// time.Now. Tests set it to order runs without waiting for the clock.
	Now func() time.Time
	// Queue decides when recorded runs execute; default a FIFO of
	// MaxRunning slots and MaxQueued waiting places.
	Queue Queue
	// MaxRunning is how many runs execute at once (default
	// DefaultMaxRunning()); MaxQueued how many more may wait (default 1000).
	MaxRunning int
	MaxQueued  int
	// MaxMemory is the process's memory budget in bytes (0: none): new runs
	// wait as queued while the live heap is over 3/4 of it and another run
	// executes (MemoryBudget). Only the in-process FIFO holds runs back.
	MaxMemory int64
	// MaxWatchers and MaxWatchersPerRun cap the live event subscriptions,
	// in all and per run (defaults 2000 and 200).
	MaxWatchers       int
	MaxWatchersPerRun int
	// Executor is where the saved runs, re-runs and resumes execute;
	// default Embedded(), this process's Queue. Ad-hoc runs (A2E, agents)
	// block their caller and always stay in this process's Queue.
	Executor Executor
	// Budgets hold the runs' model calls to limits in tokens and cost
	// (zero: none).
	Budgets Budgets
	// Prices price model calls for budgets in cost (nil: a call under one
	// is refused as unpriced).
	Prices *pricing.Prices
	// Credentials resolves the stored credentials a run's tools name; nil:
	// a tool that names one fails with tool.ErrNoCredentials.
	Credentials Credentials
	// TriggerBudgets and CredentialBudgets read the day budgets of
	// schedules and webhooks, and of stored credentials (nil: none).
	TriggerBudgets    TriggerBudgets
	CredentialBudgets CredentialBudgets
	// Conversations keeps the conversations of agents with memory; nil:
	// memory is off (such an agent runs without and warns).
	Conversations store.ConversationStore
}

// DefaultMaxRunning is how many runs execute at once when no flag says:
// eight per core, at least 8. A run mostly waits (on models, HTTP, delays),
// so a slot is cheap, but each holds its goroutines and outputs.
func DefaultMaxRunning() int { return max(8, 8*runtime.NumCPU()) }

// Service runs chains in the background and tells the hub's watchers when
// each run stops.
type Service struct {
	eng    *engine.Engine
	store  Store
	hub    *Hub
	events store.EventWriter
	// buffered shows the events the writer has not stored yet (nil: it
	// stores each as it comes).
	buffered store.BufferReader
	log      *slog.Logger
	obs      Observer
	tracer   Tracer
	traces   store.UsageStore
	creds    Credentials
	budgets  Budgets
	book     *budgetBook // the chains', triggers' and credentials' budgets
	valid    validation  // the checks a chain passes before it runs
	now      func() time.Time

	queue Queue
	exec  Executor // where recorded runs execute

	base   context.Context
	stop   context.CancelCauseFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	active map[string]context.CancelCauseFunc // running and queued runs
	closed sync.Once
	cerr   error
}

// New opens the event writer on the store and builds the engine, its sinks
// (event writer, live hub, observer) and its checkpointer (the store), and
// returns the service that runs chains on them. Close the service before the
// store.
func New(opts Options) (*Service, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("runs: Options.Store is required")
	case opts.Registry == nil:
		return nil, errors.New("runs: Options.Registry is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HubBuffer <= 0 {
		opts.HubBuffer = 4096
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = DefaultMaxRunning()
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 1000
	}
	if opts.Queue == nil {
		f := NewFIFO(opts.MaxRunning, opts.MaxQueued)
		if opts.MaxMemory > 0 {
			f.SetMemoryBudget(&MemoryBudget{Limit: opts.MaxMemory})
		}
		opts.Queue = f
	}
	if opts.Executor == nil {
		opts.Executor = Embedded()
	}
	base, stop := context.WithCancelCause(context.Background())
	s := &Service{store: opts.Store, hub: NewHub(opts.HubBuffer), queue: opts.Queue, exec: opts.Executor, events: opts.Store.NewEventWriter(opts.Events),
		log: opts.Logger, obs: opts.Observer, creds: opts.Credentials, now: opts.Now, base: base, stop: stop, active: map[string]context.CancelCauseFunc{},
		valid: newValidation(opts)}
	s.buffered, _ = s.events.(store.BufferReader)
	if err := s.exec.bind(s); err != nil {
		stop(nil)
		s.events.Close()
		return nil, err
	}
	sink := engine.MultiSink{s.events, s.hub}
	var cp engine.Checkpointer = opts.Store
	if s.obs != nil {
		sink = append(sink, s.obs)
		cp = timedCheckpointer{cp, s.obs}
	}
	// A run's events are stored before its end entry: other processes read
	// them as soon as its row says it stopped, and a run that lost some
	// (the disk full) does not end as if its history were whole: the end
	// entry is refused, and the run ends failed (storage_unavailable).
	flush := func(ctx context.Context, _ string) error { return s.events.Flush(ctx) }
	if rf, ok := s.events.(store.RunFlusher); ok {
		flush = rf.FlushRun
	}
	cp = flushingCheckpointer{cp, flush}
	var attemptCtx func(context.Context, engine.AttemptInfo) context.Context
	var onRun func(string, *chain.Chain)
	if opts.Tracer != nil {
		ts, ok := opts.Store.(store.UsageStore)
		if !ok {
			stop(nil)
			s.events.Close()
			return nil, errors.New("runs: a Tracer needs a Store that is also a store.UsageStore")
		}
		s.tracer, s.traces = opts.Tracer, ts
		sink = append(sink, opts.Tracer)
		attemptCtx, onRun = opts.Tracer.AttemptContext, opts.Tracer.OnRun
	}
	s.budgets = opts.Budgets
	usage, _ := opts.Store.(store.UsageStore)
	// A store that keeps triggers' and credentials' budgets holds runs to
	// them unless the host says otherwise.
	if ts, ok := opts.Store.(interface {
		TriggerBudget(context.Context, string) (store.DayBudget, error)
	}); ok && opts.TriggerBudgets == nil {
		opts.TriggerBudgets = func(ctx context.Context, id string) (spend.Limit, error) {
			b, err := ts.TriggerBudget(ctx, id)
			return spend.Limit{Tokens: b.Tokens, Cost: b.Cost}, err
		}
	}
	if cs, ok := opts.Store.(interface {
		CredentialBudget(context.Context, string) (store.DayBudget, error)
	}); ok && opts.CredentialBudgets == nil {
		opts.CredentialBudgets = func(ctx context.Context, name string) (spend.Limit, error) {
			b, err := cs.CredentialBudget(ctx, name)
			return spend.Limit{Tokens: b.Tokens, Cost: b.Cost}, err
		}
	}
	s.book = newBudgetBook(opts, usage, opts.Store.GetRunInfo)
	agentRunner, chains := s.agentHooks(opts)
	s.hub.SetLimits(opts.MaxWatchers, opts.MaxWatchersPerRun)
	s.eng = engine.New(engine.Options{
		Registry:     opts.Registry,
		Checkpointer: cp,
		Sink:         sink,
		Chains:       chains,
		Agent:        agentRunner,
		Limits:       opts.Limits,
		ExprBudget:   opts.ExprBudget,

		AttemptContext: attemptCtx,
		OnRun:          onRun,
		RunContext:     s.book.runContext,
		Compile:        s.engineCompile,
	})
	return s, nil
}

// Engine returns the engine runs execute on (for hosts and tests).
func (s *Service) Engine() *engine.Engine { return s.eng }

// Start runs a saved chain version in the background and returns the run id.
func (s *Service) Start(ctx context.Context, ch *store.Chain, input map[string]any) (string, error) {
	return s.StartTriggered(ctx, ch, input, Trigger{})
}

// Trigger says what started a run other than a person or program calling
// the API: a schedule's tick, a webhook's call, an A2E session
// (store.Trigger*).
type Trigger struct {
	Kind string
	ID   string
	// Tick is a schedule's cron tick: the run is recorded only if the
	// (schedule, tick) firing was not recorded before, in the same
	// transaction (store.ErrAlreadyFired otherwise, and nothing is written).
	Tick time.Time
}

// StartTriggered is Start for a run a trigger started: the run records the
// trigger, and its firing is stored with it. A chain with validation errors
// is refused (*InvalidChainError) and nothing is recorded.
func (s *Service) StartTriggered(ctx context.Context, ch *store.Chain, input map[string]any, trig Trigger) (string, error) {
	return s.start(ctx, ch, input, trig, false)
}

// StartWithPins is Start for the designer's runs of the draft: the
// version's pinned outputs stand in for their nodes (engine.RunOptions.
// UsePins) and the run is of kind pinned. A version without pins runs as
// Start runs it; one whose pins have problems (chain.PinIssues) is refused
// with them (*InvalidChainError), since the engine would ignore such a pin
// and call the node after all. Nothing else (triggers, runs by name, skill
// calls, MCP tools, A2E) ever uses the pins.
func (s *Service) StartWithPins(ctx context.Context, ch *store.Chain, input map[string]any) (string, error) {
	return s.start(ctx, ch, input, Trigger{}, true)
}

func (s *Service) start(ctx context.Context, ch *store.Chain, input map[string]any, trig Trigger, usePins bool) (string, error) {
	if s.base.Err() != nil {
		return "", ErrShutdown // recording it would leave a run that never starts
	}
	plan, err := s.compile(ctx, ch.ID, ch.Version, true, ch.Doc)
	if err != nil {
		return "", err
	}
	kind := store.KindRun
	if usePins = usePins && len(ch.Doc.PinnedOutputs) > 0; usePins {
		if issues := chain.PinIssues(ch.Doc); chain.HasErrors(issues) {
			return "", &InvalidChainError{Issues: issues}
		}
		kind = store.KindPinned
	}
	id := uuid.NewString()
	if input == nil {
		input = map[string]any{}
	}
	run := store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, ChainName: ch.Name, Kind: kind, Input: input, Started: s.now(),
		TriggerKind: trig.Kind, TriggerID: trig.ID, TriggerTick: trig.Tick}
	return s.startRecorded(ctx, run, Task{RunID: id, Kind: kind, ChainID: ch.ID, ChainVersion: ch.Version},
		func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, plan, input, engine.RunOptions{RunID: id, UsePins: usePins})
		})
}

// startRecorded records a run and has the executor execute it: fn in this
// process, or task wherever the executor sends it. It returns the run id.
func (s *Service) startRecorded(ctx context.Context, run store.Run, task Task, fn runFunc) (string, error) {
	if err := s.exec.start(ctx, run, task, fn); err != nil {
		return "", err
	}
	return run.ID, nil
}

// runFunc executes a recorded run on the engine.
type runFunc = func(context.Context) (*engine.Result, error)

// RunAdHoc runs a chain that is not saved (A2E requests, agent runs), with an
// extra sink for this run's events. It blocks until the run stops; it stops
// early when ctx ends.
func (s *Service) RunAdHoc(ctx context.Context, doc *chain.Chain, input map[string]any, kind string, sink engine.EventSink) (*engine.Result, error) {
	return s.RunAdHocTriggered(ctx, doc, input, kind, Trigger{}, sink)
}

// RunAdHocTriggered is RunAdHoc for a run that trig started (an A2E
// session: store.TriggerA2ESession and its id); the run records it. Only
// schedules and webhooks have firings. A chain with validation errors is
// refused (*InvalidChainError, see CheckAdHoc) and nothing is recorded.
func (s *Service) RunAdHocTriggered(ctx context.Context, doc *chain.Chain, input map[string]any, kind string, trig Trigger, sink engine.EventSink) (*engine.Result, error) {
	plan, err := s.compile(ctx, "", 0, false, doc)
	if err != nil {
		return nil, err
	}
	status, err := s.admit()
	if err != nil {
		return nil, err
	}
	id := uuid.NewString()
	run := store.Run{ID: id, ChainName: doc.Name, Kind: kind, Input: input, Status: status, Started: s.now(),
		TriggerKind: trig.Kind, TriggerID: trig.ID}
	if _, err := s.createRun(ctx, run); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	var res *engine.Result
	t, err := s.launch(ctx, id, kind, func(rctx context.Context) (*engine.Result, error) {
		var err error
		res, err = s.eng.Run(rctx, plan, input, engine.RunOptions{RunID: id, Sink: sink})
		return res, err
	})
	if err != nil {
		return nil, err
	}
	// The caller going away cancels the run, waiting or executing.
	stopWithCaller := context.AfterFunc(ctx, func() { s.cancelRun(id, context.Cause(ctx)) })
	defer stopWithCaller()
	<-t.done
	return res, t.err
}

// Resume checks a resume against the resume contract and, when it is
// allowed, continues the run in the background. The error is the engine's
// typed resume error, or ErrShutdown.
func (s *Service) Resume(ctx context.Context, runID string, value *engine.ResumeValue, modified map[string]any) error {
	return s.ResumePause(ctx, runID, "", value, modified)
}

// ResumePause is Resume answering the pause pauseID of the run ("": the
// only one pending).
func (s *Service) ResumePause(ctx context.Context, runID, pauseID string, value *engine.ResumeValue, modified map[string]any) error {
	if _, err := s.admit(); err != nil {
		return err
	}
	start := time.Now()
	err := s.events.Flush(ctx)
	s.storeCall("event_flush", start)
	if err != nil {
		return fmt.Errorf("flush events: %w", err)
	}
	maxSeq, err := s.store.MaxSeq(ctx, runID)
	if err != nil {
		return err
	}
	return s.exec.resume(ctx, runID, value, modified, engine.ResumeOptions{NextSeq: maxSeq + 1, PauseID: pauseID})
}

// RunChain returns the chain document a run executed, from its start
// checkpoint (a re-run replays that document, not the chain's current one).
func (s *Service) RunChain(ctx context.Context, runID string) (*chain.Chain, error) {
	log, err := s.eng.Checkpointer().Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	var doc *chain.Chain
	for _, cp := range log {
		if cp.Kind == engine.CheckpointStart && cp.Start != nil {
			doc = cp.Start.Chain
		}
	}
	if doc == nil {
		return nil, &engine.ChainCheckpointError{RunID: runID, Msg: "the run has no start checkpoint to re-run from"}
	}
	return doc, nil
}

// Rerun starts a new run of runID's chain that keeps the outputs upstream of
// fromNode and executes from there, with modified merged into its state.
func (s *Service) Rerun(ctx context.Context, runID, fromNode string, input, modified map[string]any) (string, error) {
	return s.RerunWith(ctx, runID, RerunSpec{FromNode: fromNode, Input: input, Modified: modified})
}

// RerunSpec says what a re-run runs.
type RerunSpec struct {
	FromNode string
	Input    map[string]any // nil: the run's input
	Modified map[string]any // merged into the state before any node runs
	By       string         // who sent Modified (its state_patch event says so)
	// Version, when set, is the chain version to run instead of the run's
	// own: upstream nodes changed since run again (engine.RerunOn).
	Version *store.ChainVersion
}

// RerunWith starts a re-run as spec says (see Rerun). A re-run on another
// version than the run's is refused when that version has validation errors
// (*InvalidChainError); the run's own version is the one it ran.
func (s *Service) RerunWith(ctx context.Context, runID string, spec RerunSpec) (string, error) {
	if s.base.Err() != nil {
		return "", ErrShutdown
	}
	orig, err := s.store.GetRunInfo(ctx, runID)
	if err != nil {
		return "", err
	}
	var plan *chain.Plan // the run's own version (checked by the engine), unless one was chosen
	if spec.Version != nil {
		if plan, err = s.compile(ctx, orig.ChainID, spec.Version.Version, true, spec.Version.Doc); err != nil {
			return "", err
		}
	}
	id := uuid.NewString()
	input, fromNode, modified := spec.Input, spec.FromNode, spec.Modified
	if input == nil {
		input = orig.Input
	}
	version := orig.ChainVersion
	task := Task{RunID: id, Kind: store.KindRerun, ParentRunID: runID, FromNode: fromNode, Modified: modified, PatchedBy: spec.By}
	if v := spec.Version; v != nil {
		version = v.Version
		task.ChainID, task.ChainVersion = orig.ChainID, v.Version
	}
	run := store.Run{ID: id, ChainID: orig.ChainID, ChainVersion: version, ChainName: orig.ChainName,
		ParentRunID: runID, Kind: store.KindRerun, Input: input, Started: s.now()}
	return s.startRecorded(ctx, run, task, func(ctx context.Context) (*engine.Result, error) {
		return s.eng.RerunOn(ctx, runID, fromNode, plan, input, engine.RunOptions{RunID: id, ParentRunID: runID, ModifiedState: modified, PatchedBy: spec.By})
	})
}

// PlanNodeRun checks that a node of a saved chain version can run alone
// with the data src gives (engine.PlanNodeRun): nothing is recorded or run.
// A version with errors gives an *InvalidChainError.
func (s *Service) PlanNodeRun(ctx context.Context, ch *store.Chain, nodeID string, src engine.NodeRunSource) (*engine.NodeRun, error) {
	p, err := s.compile(ctx, ch.ID, ch.Version, true, ch.Doc)
	if err != nil {
		return nil, err
	}
	return s.eng.PlanNodeRun(ctx, p, nodeID, src)
}

// RunNode runs one node of a saved chain version alone, its upstream data
// pinned (src), in the background, and returns the run id. The request is
// checked first: an *InvalidChainError, a *engine.NodeRunError or the
// source run's checkpoint error comes back before anything is recorded.
// The run is of kind node; its parent is the source run.
func (s *Service) RunNode(ctx context.Context, ch *store.Chain, nodeID string, src engine.NodeRunSource) (string, error) {
	if s.base.Err() != nil {
		return "", ErrShutdown
	}
	nr, err := s.PlanNodeRun(ctx, ch, nodeID, src)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	run := store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, ChainName: ch.Name, ParentRunID: src.FromRun,
		Kind: store.KindNode, Input: nr.Input(), Started: s.now()}
	t := Task{RunID: id, Kind: store.KindNode, ChainID: ch.ID, ChainVersion: ch.Version, NodeID: nodeID,
		ParentRunID: src.FromRun, Pinned: src.Pinned, Modified: src.State}
	return s.startRecorded(ctx, run, t, func(ctx context.Context) (*engine.Result, error) {
		return nr.Run(ctx, engine.RunOptions{RunID: id})
	})
}

// Cancel stops a running or queued run; it ends `cancelled` and can be
// resumed. A queued run leaves the queue at once. It reports whether the run
// was executing or waiting in this process, or else whether the executor
// found it to cancel.
func (s *Service) Cancel(runID string) bool {
	if s.cancelRun(runID, errors.New("cancelled by a user")) {
		return true
	}
	return s.exec.cancel(runID)
}

func (s *Service) cancelRun(runID string, cause error) bool {
	s.mu.Lock()
	cancel, ok := s.active[runID]
	s.mu.Unlock()
	if !ok {
		return false
	}
	cancel(cause)
	if j, waiting := s.queue.Remove(runID); waiting {
		// Out of line, without a slot: with its context cancelled the
		// engine records it and ends it cancelled before any node runs.
		go j.Run()
	}
	return true
}

// QueuePosition is a queued run's place in line (1 is next), 0 when it is
// not waiting.
func (s *Service) QueuePosition(runID string) int { return s.queue.Position(runID) }

// MemoryWait says why queued runs wait when it is the memory budget
// (--max-memory) rather than the slots; "" when it is not.
func (s *Service) MemoryWait() string {
	if f, ok := s.queue.(*FIFO); ok {
		return f.MemoryWait()
	}
	return ""
}

// QueueStats returns what the run queue holds now.
func (s *Service) QueueStats() QueueStats { return s.queue.Stats() }

// admit refuses a new run when the queue is full, before anything is
// recorded, and says which status the run starts in: running when a slot is
// free, queued otherwise.
func (s *Service) admit() (chain.RunStatus, error) {
	if s.base.Err() != nil {
		return "", ErrShutdown // recording it would leave a run that never starts
	}
	st := s.queue.Stats()
	switch {
	case st.Waiting >= st.MaxWaiting:
		if f, ok := s.queue.(*FIFO); ok {
			return "", f.full()
		}
		return "", &BusyError{Code: "queue_full", RetryAfter: 5 * time.Second, Message: "the run queue is full; try again later"}
	case st.Running < st.Slots && st.Waiting == 0 && s.MemoryWait() == "":
		return chain.StatusRunning, nil
	}
	return chain.StatusQueued, nil
}

// Active reports whether a run is executing or queued: in this process, or
// where the executor sends runs, as it sees them.
func (s *Service) Active(runID string) bool {
	return s.localActive(runID) || s.exec.active(runID)
}

func (s *Service) localActive(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.active[runID]
	return ok
}

// ActiveCount returns how many runs are executing in this process (queued
// ones not counted).
func (s *Service) ActiveCount() int { return s.queue.Stats().Running + s.exec.executing() }

// Watchers returns the number of live subscriptions.
func (s *Service) Watchers() int { return s.hub.Watchers() }

// Events returns up to limit events of a run after seq after, in seq order
// (limit <= 0: 1000), reading about maxBytes of stored events at most (<= 0:
// by count only): those stored, then those the event writer holds and has
// not stored yet. A read sees every event emitted before it, without
// waiting for the writer: readers never flush it (a flush would take a
// write failure meant for the run's end).
func (s *Service) Events(ctx context.Context, runID string, after int64, limit int, maxBytes int64) ([]engine.Event, error) {
	var buffered []engine.Event
	if s.buffered != nil {
		// Taken before the store is read: an event is in one or the other.
		buffered = s.buffered.Buffered(runID, after, nil)
	}
	stored, err := s.store.EventsAfterBytes(ctx, runID, after, limit, maxBytes)
	if err != nil {
		return nil, err
	}
	return store.MergeBuffered(stored, buffered, after, limit), nil
}

// Buffered returns the events of a run after seq after that the event
// writer holds and may not have stored yet, in seq order. Take them before
// a read of the store that depends on the events (the model calls, say) to
// see what it has not stored yet.
func (s *Service) Buffered(runID string, after int64) []engine.Event {
	if s.buffered == nil {
		return nil
	}
	return s.buffered.Buffered(runID, after, nil)
}

// EventsDropped counts events the event log could not store.
func (s *Service) EventsDropped() uint64 { return s.events.Dropped() }

// Shutdown cancels every running run (they are checkpointed and end
// `cancelled`, resumable after restart) and waits for them to stop. New runs
// are refused from the first call on. The event log stays open: watchers
// still reading the store need it until Close.
//
// Queued runs leave the queue and end `cancelled` the same way, recorded
// with their start checkpoint, so that a resume after the restart runs them
// from the start.
func (s *Service) Shutdown(ctx context.Context) error {
	s.stop(ErrShutdown)
	s.mu.Lock()
	for _, cancel := range s.active {
		cancel(ErrShutdown)
	}
	s.mu.Unlock()
	for _, j := range s.queue.Close() {
		go j.Run()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs still stopping at shutdown: %w", ctx.Err())
	}
}

// Close stops the service for good: it refuses new runs and closes the event
// writer, storing every buffered event. Call it after Shutdown and before the
// store closes; later calls return the first result.
func (s *Service) Close() error {
	s.closed.Do(func() {
		s.stop(ErrShutdown)
		s.cerr = s.events.Close()
	})
	return s.cerr
}

func (s *Service) track(id string, cancel context.CancelCauseFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base.Err() != nil {
		return false
	}
	s.active[id] = cancel
	s.wg.Add(1)
	return true
}

func (s *Service) untrack(id string) {
	s.mu.Lock()
	delete(s.active, id)
	s.mu.Unlock()
	s.wg.Done()
}

// createRun records a run, timing the store call.
func (s *Service) createRun(ctx context.Context, run store.Run) (*store.Run, error) {
	defer s.storeCall("create_run", time.Now())
	return s.store.CreateRun(ctx, run)
}

func (s *Service) storeCall(op string, start time.Time) {
	if s.obs != nil {
		s.obs.StoreCall(op, time.Since(start))
	}
}

// finished logs a run's end (every line carries its run id) and reports it.
func (s *Service) finished(ctx context.Context, log *slog.Logger, id string, res *engine.Result, err error) {
	if err != nil {
		log.ErrorContext(ctx, "run failed to execute", "err", err)
	} else if res != nil {
		log.InfoContext(ctx, "run stopped", "status", res.Status, "duration_ms", res.DurationMS, "nodes_run", res.NodesRun)
	}
	if s.obs != nil {
		s.obs.RunFinished(id, res, err)
	}
}

// ticket is a launched run: done closes when it stopped, err is set when
// it could not execute at all.
type ticket struct {
	done chan struct{}
	err  error
}

// launch hands a recorded run to the queue; it executes under the
// service's context as soon as a slot is free. kind is what started it
// (run, resume, rerun, a2e, agent), for the logs and the observer. A queued
// run is active (Active, Cancel see it) from now on. fn is called (and the
// ticket returned) unless the service is shut down.
func (s *Service) launch(req context.Context, id, kind string, fn func(context.Context) (*engine.Result, error)) (*ticket, error) {
	return s.launchOn(req, id, kind, fn, s.queue.Enqueue)
}

// launchOn is launch with the call that queues the job.
func (s *Service) launchOn(req context.Context, id, kind string, fn func(context.Context) (*engine.Result, error), enqueue func(Job) error) (*ticket, error) {
	parent := s.capture(req)
	ctx, cancel := context.WithCancelCause(s.base)
	if !s.track(id, cancel) {
		cancel(nil)
		return nil, ErrShutdown
	}
	t := &ticket{done: make(chan struct{})}
	run := func() { s.execute(id, kind, parent, ctx, cancel, fn, t) }
	if err := enqueue(Job{RunID: id, Kind: kind, Run: run}); err != nil {
		// Filled up since admit: the run is recorded, so it ends cancelled
		// with the reason rather than staying queued for ever.
		cancel(err)
		go run()
		return t, err
	}
	return t, nil
}

// execute runs a tracked run to its end and tells its watchers. parent is
// the trace context of the request that started it ("" for none).
func (s *Service) execute(id, kind, parent string, ctx context.Context, cancel context.CancelCauseFunc, fn func(context.Context) (*engine.Result, error), t *ticket) {
	if s.obs != nil {
		s.obs.RunStarted(kind)
	}
	var endSpan func(*engine.Result, error)
	if s.tracer != nil {
		ctx, endSpan = s.traceRun(ctx, id, kind, parent)
	}
	if s.creds != nil {
		ctx = tool.WithCredentials(ctx, &runCredentials{creds: s.creds, store: s.store, runID: id})
	}
	ctx = s.budgets.withBudgets(ctx)
	log := s.log.With("run_id", id, "kind", kind)
	log.InfoContext(ctx, "run started")
	res, err := fn(ctx)
	cancel(nil)
	t.err = err
	s.finished(ctx, log, id, res, err)
	if endSpan != nil {
		endSpan(res, err)
	}
	if err != nil && s.exec.stranded(id, err, t) {
		return
	}
	// Not active before the watchers hear the end, so that what they
	// read next (Active, the run's JSON) says it stopped.
	s.untrack(id)
	s.hub.End(id)
	close(t.done)
}

// refused reports whether err is a typed engine error (a resume or
// checkpoint refused before the run went on: the run is as it was), not a
// write the store failed.
func refused(err error) bool {
	var typed interface{ Code() string }
	return errors.As(err, &typed)
}

// flushingCheckpointer stores every event emitted so far before an end
// entry (stopped, paused) is written, and refuses the entry when events of
// the run were lost (flush answers *store.EventsLostError).
type flushingCheckpointer struct {
	engine.Checkpointer
	flush func(ctx context.Context, runID string) error
}

func (f flushingCheckpointer) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	for _, cp := range cps {
		if cp.Kind == engine.CheckpointEnd {
			if err := f.flush(context.WithoutCancel(ctx), runID); err != nil {
				return fmt.Errorf("store the run's events before its end: %w", err)
			}
			break
		}
	}
	return f.Checkpointer.Append(ctx, runID, cps)
}

// timedCheckpointer reports the latency of each checkpoint call.
type timedCheckpointer struct {
	engine.Checkpointer
	obs Observer
}

func (t timedCheckpointer) Append(ctx context.Context, runID string, cps []engine.Checkpoint) error {
	defer t.time("checkpoint_append", time.Now())
	return t.Checkpointer.Append(ctx, runID, cps)
}

func (t timedCheckpointer) Load(ctx context.Context, runID string) ([]engine.Checkpoint, error) {
	defer t.time("checkpoint_load", time.Now())
	return t.Checkpointer.Load(ctx, runID)
}

func (t timedCheckpointer) ClaimInterrupt(ctx context.Context, runID, pauseID string) (string, error) {
	defer t.time("checkpoint_claim", time.Now())
	return t.Checkpointer.ClaimInterrupt(ctx, runID, pauseID)
}

func (t timedCheckpointer) time(op string, start time.Time) { t.obs.StoreCall(op, time.Since(start)) }
