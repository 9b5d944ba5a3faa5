package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
)

// Executor is where the saved runs, re-runs and resumes a Service records
// execute, and everything that follows from that: how a run is handed on,
// cancelled, seen active and watched when it is not executing here. The
// service calls it wherever the answer depends on it and never asks which
// one it has; the wiring chooses (Options.Executor):
//
//   - Embedded: this process's Queue, the only executor of its store (the
//     SQLite studio, which holds the database's lock). The default.
//   - Distributed: jobs any process sharing the database may execute, over
//     a Dispatcher, with leases that fence a run's executors.
//
// Its methods are unexported: an executor works on the service's tracking,
// queue and hub.
type Executor interface {
	// bind attaches the executor to the service New builds; an executor
	// serves one service.
	bind(s *Service) error
	// start records a saved chain's run and has it executed: fn in this
	// process, or task by whoever takes it.
	start(ctx context.Context, run store.Run, task Task, fn runFunc) error
	// resume continues a run that value answers (StartResume with ropts),
	// unless the run executing here takes the answer.
	resume(ctx context.Context, runID string, value *engine.ResumeValue, modified map[string]any, ropts engine.ResumeOptions) error
	// cancel cancels a run nothing in this process tracks, and reports
	// whether there was one to cancel.
	cancel(runID string) bool
	// active reports whether a run nothing in this process tracks is queued
	// or executing elsewhere.
	active(runID string) bool
	// subscribed hears that a watcher subscribed to a run, to feed the hub
	// when the run executes elsewhere.
	subscribed(runID string)
	// stranded hears that a run here stopped with err, the engine unable to
	// go on; it reports whether it took the run's untrack and hub end over
	// (it ends the run itself, later).
	stranded(id string, err error, t *ticket) bool
	// requeue queues again the runs a previous process accepted and never
	// started (Service.Requeue).
	requeue(ctx context.Context, st RequeueStore) (int, error)
	// executing counts the runs executing here outside the Queue.
	executing() int
}

// Task is a recorded run as a worker in any process executes it: what to
// run, never the closure. It travels as a job's arguments, so it holds ids
// and small values only (a run's input stays in its row).
type Task struct {
	RunID        string         `json:"run_id"`
	Kind         string         `json:"kind"` // run, pinned (a run that uses the pins), rerun, node, resume
	ChainID      string         `json:"chain_id,omitempty"`
	ChainVersion int            `json:"chain_version,omitempty"`
	ParentRunID  string         `json:"parent_run_id,omitempty"` // rerun: the run re-run
	FromNode     string         `json:"from_node,omitempty"`
	Modified     map[string]any `json:"modified,omitempty"`   // rerun: the state patch; node: the state given
	PatchedBy    string         `json:"patched_by,omitempty"` // rerun: who sent the state patch
	// NodeID and Pinned: a node run alone (kind node), its upstream outputs
	// given explicitly; ParentRunID is then the run the rest comes from.
	NodeID string         `json:"node_id,omitempty"`
	Pinned map[string]any `json:"pinned,omitempty"`
	// Resume is an accepted resume with a value, its interrupt claimed in
	// the transaction that inserted this job; the worker writes its entry.
	Resume *engine.ResumeRecord `json:"resume,omitempty"`
	// Takeover: the run's previous executor stopped without ending it (its
	// lease expired); the worker continues the run from its stored log, or
	// starts it as above when nothing was logged.
	Takeover bool `json:"takeover,omitempty"`
	// TraceParent is the W3C trace context of the request that started the
	// run, which its trace continues (tracing on).
	TraceParent string `json:"traceparent,omitempty"`
}

// Embedded returns the executor of a process that is its store's only
// one: runs wait in the service's Queue and execute in this process; a run
// whose row says running or queued while nothing here tracks it is an
// orphan, and a run whose end the store refused is ended here once it
// takes writes again.
func Embedded() Executor { return &embedded{} }

type embedded struct{ s *Service }

func (e *embedded) bind(s *Service) error {
	if e.s != nil {
		return errors.New("runs: an Executor serves one Service")
	}
	e.s = s
	return nil
}

// start admits the run to the queue, records it and launches fn.
func (e *embedded) start(ctx context.Context, run store.Run, _ Task, fn runFunc) error {
	s := e.s
	status, err := s.admit()
	if err != nil {
		return err
	}
	run.Status = status
	if _, err := s.createRun(ctx, run); err != nil {
		return fmt.Errorf("create run: %w", err)
	}
	_, err = s.launch(ctx, run.ID, run.Kind, fn)
	return err
}

func (e *embedded) resume(ctx context.Context, runID string, value *engine.ResumeValue, modified map[string]any, ropts engine.ResumeOptions) error {
	s := e.s
	rs, err := s.eng.StartResume(ctx, runID, value, modified, ropts)
	if err != nil {
		return err
	}
	if rs.Delivered() {
		return nil // the run executing here took the answer
	}
	if t, err := s.launch(ctx, runID, store.KindResume, rs.Run); err != nil {
		if t == nil {
			rs.Release()
		}
		return err
	}
	return nil
}

func (e *embedded) cancel(runID string) bool { return e.s.cancelOrphan(runID) }

func (e *embedded) active(string) bool { return false }

func (e *embedded) subscribed(string) {}

func (e *embedded) stranded(id string, err error, t *ticket) bool {
	if errors.Is(err, ErrShutdown) || refused(err) {
		return false
	}
	// The engine could not store the run's end (the store refused a
	// write): the run's row still says running. It ends failed here, now
	// or once the store takes writes again.
	return e.s.endStranded(id, err, t)
}

func (e *embedded) requeue(ctx context.Context, st RequeueStore) (int, error) {
	return e.s.requeueQueued(ctx, st)
}

func (e *embedded) executing() int { return 0 }
