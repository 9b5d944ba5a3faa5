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
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/expr"
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
	// ResolveChain finds a saved chain by name (skill nodes call chains).
	ResolveChain(ctx context.Context, name string) (*engine.Chain, error)
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
	Limits    engine.Limits
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
	// MaxWatchers and MaxWatchersPerRun cap the live event subscriptions,
	// in all and per run (defaults 2000 and 200).
	MaxWatchers       int
	MaxWatchersPerRun int
	// Dispatcher, when set, hands saved runs, re-runs and resumes to
	// workers in any process (River on PostgreSQL) instead of Queue; Store
	// must then also be a RemoteStore. Ad-hoc runs (A2E, agents) block
	// their caller and stay in this process's Queue.
	Dispatcher Dispatcher
	// RemotePoll is how often the events of a run executing in another
	// process are read for this process's watchers; default 1s.
	RemotePoll time.Duration
	// LeaseTTL is how long a run executing here through the Dispatcher
	// stays this process's without a heartbeat (renewed every LeaseTTL/3);
	// default DefaultLeaseTTL. Another process takes the run over once it
	// passed.
	LeaseTTL time.Duration
	// LeaseHeartbeat is how often the lease is renewed and the run's cancel
	// flag read; default LeaseTTL/3. It must be shorter than half the TTL.
	LeaseHeartbeat time.Duration
	// Owner names this process in the runs it owns; default host, pid and
	// a random suffix.
	Owner string
	// EventHints, when set, says that some process stored new events
	// (PostgreSQL's LISTEN/NOTIFY): the watched remote runs are read at
	// once rather than at the next poll.
	EventHints <-chan struct{}
	// Credentials resolves the stored credentials a run's tools name; nil:
	// a tool that names one fails with tool.ErrNoCredentials.
	Credentials Credentials
}

// DefaultLeaseTTL is how long a run's lease lasts without a heartbeat.
const DefaultLeaseTTL = 15 * time.Second

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
	log    *slog.Logger
	obs    Observer
	tracer Tracer
	traces store.UsageStore
	creds  Credentials
	valid  validation // the checks a chain passes before it runs
	now    func() time.Time

	queue Queue

	disp    Dispatcher
	remote  RemoteStore
	leases  store.LeaseStore
	ttl     time.Duration
	beat    time.Duration
	owner   string
	poll    time.Duration
	pollers map[string]struct{} // runs whose events are polled for watchers here
	running atomic.Int64        // dispatched runs executing here (Execute)
	hintMu  sync.Mutex
	hintC   chan struct{} // closed (and replaced) at each event hint

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
		opts.Queue = NewFIFO(opts.MaxRunning, opts.MaxQueued)
	}
	base, stop := context.WithCancelCause(context.Background())
	s := &Service{store: opts.Store, hub: NewHub(opts.HubBuffer), queue: opts.Queue, events: opts.Store.NewEventWriter(opts.Events),
		log: opts.Logger, obs: opts.Observer, creds: opts.Credentials, now: opts.Now, base: base, stop: stop, active: map[string]context.CancelCauseFunc{},
		disp: opts.Dispatcher, poll: opts.RemotePoll, pollers: map[string]struct{}{}, valid: newValidation(opts)}
	if s.poll <= 0 {
		s.poll = time.Second
	}
	if s.disp != nil {
		rs, ok := opts.Store.(RemoteStore)
		if !ok {
			stop(nil)
			s.events.Close()
			return nil, errors.New("runs: a Dispatcher needs a Store that is also a RemoteStore")
		}
		s.remote = rs
		ls, ok := opts.Store.(store.LeaseStore)
		if !ok {
			stop(nil)
			s.events.Close()
			return nil, errors.New("runs: a Dispatcher needs a Store that is also a store.LeaseStore")
		}
		s.leases = ls
		s.ttl, s.owner = opts.LeaseTTL, opts.Owner
		if s.ttl <= 0 {
			s.ttl = DefaultLeaseTTL
		}
		s.beat = opts.LeaseHeartbeat
		if s.beat <= 0 {
			s.beat = s.ttl / 3
		}
		if s.beat*2 > s.ttl {
			stop(nil)
			s.events.Close()
			return nil, fmt.Errorf("runs: a lease heartbeat of %v is too slow for a lease TTL of %v (at most half of it)", s.beat, s.ttl)
		}
		if s.owner == "" {
			host, _ := os.Hostname()
			s.owner = fmt.Sprintf("%s pid %d %s", host, os.Getpid(), uuid.NewString()[:8])
		}
	}
	s.hintC = make(chan struct{})
	if opts.EventHints != nil {
		go s.relayHints(opts.EventHints)
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
	var onRun func(string, *engine.Chain)
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
	if s.base.Err() != nil {
		return "", ErrShutdown // recording it would leave a run that never starts
	}
	if err := s.CheckRun(ctx, ch.ID, ch.Doc); err != nil {
		return "", err
	}
	id := uuid.NewString()
	if input == nil {
		input = map[string]any{}
	}
	run := store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, ChainName: ch.Name, Kind: store.KindRun, Input: input, Started: s.now(),
		TriggerKind: trig.Kind, TriggerID: trig.ID, TriggerTick: trig.Tick}
	doc := ch.Doc
	return s.startRecorded(ctx, run, Task{RunID: id, Kind: store.KindRun, ChainID: ch.ID, ChainVersion: ch.Version},
		func(ctx context.Context) (*engine.Result, error) {
			return s.eng.Run(ctx, doc, input, engine.RunOptions{RunID: id})
		})
}

// startRecorded records a run and has it executed: as a job with its task
// (a dispatcher: PostgreSQL workers), or admitted to this process's queue,
// recorded and launched with fn. It returns the run id.
func (s *Service) startRecorded(ctx context.Context, run store.Run, task Task, fn func(context.Context) (*engine.Result, error)) (string, error) {
	if s.disp != nil {
		if err := s.dispatchCreate(ctx, run, task); err != nil {
			return "", err
		}
		return run.ID, nil
	}
	status, err := s.admit()
	if err != nil {
		return "", err
	}
	run.Status = status
	if _, err := s.createRun(ctx, run); err != nil {
		return "", fmt.Errorf("create run: %w", err)
	}
	if _, err := s.launch(ctx, run.ID, run.Kind, fn); err != nil {
		return "", err
	}
	return run.ID, nil
}

// RunAdHoc runs a chain that is not saved (A2E requests, agent runs), with an
// extra sink for this run's events. It blocks until the run stops; it stops
// early when ctx ends.
func (s *Service) RunAdHoc(ctx context.Context, doc *engine.Chain, input map[string]any, kind string, sink engine.EventSink) (*engine.Result, error) {
	return s.RunAdHocTriggered(ctx, doc, input, kind, Trigger{}, sink)
}

// RunAdHocTriggered is RunAdHoc for a run that trig started (an A2E
// session: store.TriggerA2ESession and its id); the run records it. Only
// schedules and webhooks have firings. A chain with validation errors is
// refused (*InvalidChainError, see CheckAdHoc) and nothing is recorded.
func (s *Service) RunAdHocTriggered(ctx context.Context, doc *engine.Chain, input map[string]any, kind string, trig Trigger, sink engine.EventSink) (*engine.Result, error) {
	if issues := s.CheckAdHoc(ctx, doc); engine.HasErrors(issues) {
		return nil, &InvalidChainError{Issues: issues}
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
		res, err = s.eng.Run(rctx, doc, input, engine.RunOptions{RunID: id, Sink: sink})
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
	ropts := engine.ResumeOptions{NextSeq: maxSeq + 1, PauseID: pauseID}
	if s.disp != nil {
		// The claim (a pause's interrupt, a failed run's status) and the
		// job that continues the run commit together; the worker that
		// takes the job writes the resume entry.
		ropts.Claim = func(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error) {
			return s.disp.Claim(ctx, runID, rec)
		}
	}
	rs, err := s.eng.StartResume(ctx, runID, value, modified, ropts)
	if err != nil {
		return err
	}
	if rs.Delivered() {
		return nil // the run executing here took the answer
	}
	if s.disp != nil {
		rs.Release()
		return nil // handed on with the claim
	}
	if t, err := s.launch(ctx, runID, store.KindResume, rs.Run); err != nil {
		if t == nil {
			rs.Release()
		}
		return err
	}
	return nil
}

// RunChain returns the chain document a run executed, from its start
// checkpoint (a re-run replays that document, not the chain's current one).
func (s *Service) RunChain(ctx context.Context, runID string) (*engine.Chain, error) {
	log, err := s.eng.Checkpointer().Load(ctx, runID)
	if err != nil {
		return nil, err
	}
	var chain *engine.Chain
	for _, cp := range log {
		if cp.Kind == engine.CheckpointStart && cp.Start != nil {
			chain = cp.Start.Chain
		}
	}
	if chain == nil {
		return nil, &engine.ChainCheckpointError{RunID: runID, Msg: "the run has no start checkpoint to re-run from"}
	}
	return chain, nil
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
	if spec.Version != nil {
		if err := s.CheckRun(ctx, orig.ChainID, spec.Version.Doc); err != nil {
			return "", err
		}
	}
	id := uuid.NewString()
	input, fromNode, modified := spec.Input, spec.FromNode, spec.Modified
	if input == nil {
		input = orig.Input
	}
	version := orig.ChainVersion
	var doc *engine.Chain
	task := Task{RunID: id, Kind: store.KindRerun, ParentRunID: runID, FromNode: fromNode, Modified: modified, PatchedBy: spec.By}
	if v := spec.Version; v != nil {
		version, doc = v.Version, v.Doc
		task.ChainID, task.ChainVersion = orig.ChainID, v.Version
	}
	run := store.Run{ID: id, ChainID: orig.ChainID, ChainVersion: version, ChainName: orig.ChainName,
		ParentRunID: runID, Kind: store.KindRerun, Input: input, Started: s.now()}
	return s.startRecorded(ctx, run, task, func(ctx context.Context) (*engine.Result, error) {
		return s.eng.RerunOn(ctx, runID, fromNode, doc, input, engine.RunOptions{RunID: id, ParentRunID: runID, ModifiedState: modified, PatchedBy: spec.By})
	})
}

// PlanNodeRun checks that a node of doc can run alone with the data src
// gives (engine.PlanNodeRun): nothing is recorded or run.
func (s *Service) PlanNodeRun(ctx context.Context, doc *engine.Chain, nodeID string, src engine.NodeRunSource) (*engine.NodeRun, error) {
	return s.eng.PlanNodeRun(ctx, s.eng.Prepare(ctx, doc), nodeID, src)
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
	if err := s.CheckRun(ctx, ch.ID, ch.Doc); err != nil {
		return "", err
	}
	nr, err := s.PlanNodeRun(ctx, ch.Doc, nodeID, src)
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
// was executing or waiting in this process.
func (s *Service) Cancel(runID string) bool {
	if s.cancelRun(runID, errors.New("cancelled by a user")) {
		return true
	}
	if s.disp == nil {
		return s.cancelOrphan(runID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := s.disp.Cancel(ctx, runID)
	if err != nil {
		s.log.Warn("cancel: the run's job could not be cancelled", "run_id", runID, "err", err)
	}
	return ok
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

// QueueStats returns what the run queue holds now.
func (s *Service) QueueStats() QueueStats { return s.queue.Stats() }

// admit refuses a new run when the queue is full, before anything is
// recorded, and says which status the run starts in: running when a slot is
// free, queued otherwise.
func (s *Service) admit() (engine.RunStatus, error) {
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
	case st.Running < st.Slots && st.Waiting == 0:
		return engine.StatusRunning, nil
	}
	return engine.StatusQueued, nil
}

// Active reports whether a run is executing or queued in this process.
func (s *Service) Active(runID string) bool {
	if s.localActive(runID) {
		return true
	}
	return s.disp != nil && s.remoteActive(runID)
}

func (s *Service) localActive(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.active[runID]
	return ok
}

// ActiveCount returns how many runs are executing in this process (queued
// ones not counted).
func (s *Service) ActiveCount() int { return s.queue.Stats().Running + int(s.running.Load()) }

// Watchers returns the number of live subscriptions.
func (s *Service) Watchers() int { return s.hub.Watchers() }

// Flush waits until every event emitted so far is stored, so that a read of
// the store sees them.
func (s *Service) Flush(ctx context.Context) error { return s.events.Flush(ctx) }

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
	log := s.log.With("run_id", id, "kind", kind)
	log.InfoContext(ctx, "run started")
	res, err := fn(ctx)
	cancel(nil)
	t.err = err
	s.finished(ctx, log, id, res, err)
	if endSpan != nil {
		endSpan(res, err)
	}
	if err != nil && s.disp == nil && !errors.Is(err, ErrShutdown) && !refused(err) {
		// The engine could not store the run's end (the store refused a
		// write): the run's row still says running. It ends failed here,
		// now or once the store takes writes again (a River job is retried
		// instead: its worker takes the run over).
		if s.endStranded(id, err, t) {
			return
		}
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
