package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/google/uuid"
)

// errShutdown is the cause runs are cancelled with when the studio stops;
// they are checkpointed and can be resumed after the restart.
var errShutdown = errors.New("the studio is shutting down; resume the run after restart")

// Runner starts, resumes, re-runs and cancels runs in the background, and
// tells the hub when each one stops.
type Runner struct {
	eng    *engine.Engine
	db     store.Backend
	hub    *Hub
	events store.EventWriter
	log    *slog.Logger
	// metrics counts runs started and stopped; nil in hosts without metrics.
	metrics *Metrics

	base   context.Context
	stop   context.CancelCauseFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	active map[string]context.CancelCauseFunc
}

func newRunner(eng *engine.Engine, db store.Backend, hub *Hub, events store.EventWriter, log *slog.Logger) *Runner {
	base, stop := context.WithCancelCause(context.Background())
	return &Runner{eng: eng, db: db, hub: hub, events: events, log: log, base: base, stop: stop, active: map[string]context.CancelCauseFunc{}}
}

// Start runs a saved chain version in the background and returns the run id.
func (r *Runner) Start(ctx context.Context, ch *store.Chain, input map[string]any) (string, error) {
	id := uuid.NewString()
	if input == nil {
		input = map[string]any{}
	}
	run := store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, ChainName: ch.Name, Kind: store.KindRun,
		Input: input, Status: engine.StatusRunning, Started: time.Now()}
	if _, err := r.createRun(ctx, run); err != nil {
		return "", fmt.Errorf("create run: %w", err)
	}
	doc := ch.Doc
	r.launch(id, store.KindRun, func(ctx context.Context) (*engine.Result, error) {
		return r.eng.Run(ctx, doc, input, engine.RunOptions{RunID: id})
	})
	return id, nil
}

// StartAdHoc runs a chain that is not saved (A2E requests), with an extra sink
// for this run's events. It blocks until the run stops.
func (r *Runner) RunAdHoc(ctx context.Context, doc *engine.Chain, input map[string]any, kind string, sink engine.EventSink) (*engine.Result, error) {
	id := uuid.NewString()
	run := store.Run{ID: id, ChainName: doc.Name, Kind: kind, Input: input, Status: engine.StatusRunning, Started: time.Now()}
	if _, err := r.createRun(ctx, run); err != nil {
		return nil, fmt.Errorf("create run: %w", err)
	}
	rctx, cancel := context.WithCancelCause(r.base)
	defer cancel(nil)
	stopWithCaller := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stopWithCaller()
	if !r.track(id, cancel) {
		return nil, errShutdown
	}
	defer func() { r.untrack(id); r.hub.End(id) }() // not active before watchers hear the end
	if r.metrics != nil {
		r.metrics.runStarted(kind)
	}
	log := r.log.With("run_id", id, "kind", kind)
	log.Info("run started", "chain", doc.Name)
	res, err := r.eng.Run(rctx, doc, input, engine.RunOptions{RunID: id, Sink: sink})
	r.finished(log, id, res, err)
	return res, err
}

// Resume checks a resume against the resume contract and, when it is
// allowed, continues the run in the background. The error is the engine's
// typed resume error (404/409/422 in the API).
func (r *Runner) Resume(ctx context.Context, runID string, value *engine.ResumeValue, modified map[string]any) error {
	start := time.Now()
	err := r.events.Flush(ctx)
	r.observeStore("event_flush", start)
	if err != nil {
		return fmt.Errorf("flush events: %w", err)
	}
	maxSeq, err := r.db.MaxSeq(ctx, runID)
	if err != nil {
		return err
	}
	rs, err := r.eng.StartResume(ctx, runID, value, modified, engine.ResumeOptions{NextSeq: maxSeq + 1})
	if err != nil {
		return err
	}
	if !r.launch(runID, store.KindResume, rs.Run) {
		rs.Release()
		return errShutdown
	}
	return nil
}

// Rerun starts a new run of runID's chain that keeps the outputs upstream of
// fromNode and executes from there, with modified merged into its state.
func (r *Runner) Rerun(ctx context.Context, runID, fromNode string, input, modified map[string]any) (string, error) {
	orig, err := r.db.GetRunInfo(ctx, runID)
	if err != nil {
		return "", err
	}
	id := uuid.NewString()
	if input == nil {
		input = orig.Input
	}
	run := store.Run{ID: id, ChainID: orig.ChainID, ChainVersion: orig.ChainVersion, ChainName: orig.ChainName,
		ParentRunID: runID, Kind: store.KindRerun, Input: input, Status: engine.StatusRunning, Started: time.Now()}
	if _, err := r.createRun(ctx, run); err != nil {
		return "", fmt.Errorf("create run: %w", err)
	}
	r.launch(id, store.KindRerun, func(ctx context.Context) (*engine.Result, error) {
		return r.eng.RerunFrom(ctx, runID, fromNode, input, engine.RunOptions{RunID: id, ParentRunID: runID, ModifiedState: modified})
	})
	return id, nil
}

// Cancel stops a running run; it ends `cancelled` and can be resumed.
func (r *Runner) Cancel(runID string) bool {
	r.mu.Lock()
	cancel, ok := r.active[runID]
	r.mu.Unlock()
	if ok {
		cancel(errors.New("cancelled by a user"))
	}
	return ok
}

// Active reports whether a run is executing in this process.
func (r *Runner) Active(runID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.active[runID]
	return ok
}

func (r *Runner) track(id string, cancel context.CancelCauseFunc) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.base.Err() != nil {
		return false
	}
	r.active[id] = cancel
	r.wg.Add(1)
	return true
}

func (r *Runner) untrack(id string) {
	r.mu.Lock()
	delete(r.active, id)
	r.mu.Unlock()
	r.wg.Done()
}

// createRun records a run, timing the store call.
func (r *Runner) createRun(ctx context.Context, run store.Run) (*store.Run, error) {
	defer r.observeStore("create_run", time.Now())
	return r.db.CreateRun(ctx, run)
}

func (r *Runner) observeStore(op string, start time.Time) {
	if r.metrics != nil {
		r.metrics.observeStore(op, start)
	}
}

// ActiveCount returns how many runs are executing in this process.
func (r *Runner) ActiveCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.active)
}

// finished logs a run's end (every line carries its run id) and counts it.
func (r *Runner) finished(log *slog.Logger, id string, res *engine.Result, err error) {
	if err != nil {
		log.Error("run failed to execute", "err", err)
	} else if res != nil {
		log.Info("run stopped", "status", res.Status, "duration_ms", res.DurationMS, "nodes_run", res.NodesRun)
	}
	if r.metrics != nil {
		r.metrics.runFinished(id, res, err)
	}
}

// launch runs fn in the background under the runner's context. kind is
// what started it (run, resume, rerun), for the logs and metrics.
func (r *Runner) launch(id, kind string, fn func(context.Context) (*engine.Result, error)) bool {
	ctx, cancel := context.WithCancelCause(r.base)
	if !r.track(id, cancel) {
		cancel(nil)
		return false
	}
	if r.metrics != nil {
		r.metrics.runStarted(kind)
	}
	log := r.log.With("run_id", id, "kind", kind)
	log.Info("run started")
	go func() {
		res, err := fn(ctx)
		cancel(nil)
		r.finished(log, id, res, err)
		// Not active before the watchers hear the end, so that what they
		// read next (Active, the run's JSON) says it stopped.
		r.untrack(id)
		r.hub.End(id)
	}()
	return true
}

// Shutdown cancels every running run (they are checkpointed and end
// `cancelled`, resumable after restart) and waits for them to stop.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.stop(errShutdown)
	r.mu.Lock()
	for _, cancel := range r.active {
		cancel(errShutdown)
	}
	r.mu.Unlock()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs still stopping at shutdown: %w", ctx.Err())
	}
}
