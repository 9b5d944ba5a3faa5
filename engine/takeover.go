package engine

import (
	"context"

	"github.com/chainstudio/studio/engine/chain"
)

// Takeover continues a run whose previous executor stopped without ending
// it (a process that died, or lost the run's lease to another), from log,
// the run's checkpoint log as stored now. The log is replayed, so a node
// with a checkpoint is never called again; a node that was in flight has
// none and runs again, as do the nodes that were ready. Nothing is written
// before the run goes on. opts.NextSeq continues the event numbering after
// the events stored.
//
// rec is the resume the run's job carried (its interrupt claimed when the
// job was inserted), nil for other jobs. A log that ends with the claimed
// pause (the previous executor died before writing the resume) continues
// as ContinueResume with rec; a log that ends with a resume entry as
// ContinueResume without one. A log that ends with an end entry has
// nothing to take over: *ChainResumeError.
func (e *Engine) Takeover(ctx context.Context, runID string, log []Checkpoint, rec *ResumeRecord, opts ResumeOptions) (*Result, error) {
	if len(log) == 0 {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log is empty"}
	}
	switch last := log[len(log)-1]; {
	case last.Kind == CheckpointEnd && last.End != nil:
		if rec != nil && handedOn(last, rec) { // a resume's job whose worker died before its entry
			return e.ContinueResume(ctx, runID, rec, opts)
		}
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run has ended (" + string(last.End.Status) + "); there is nothing to take over"}}
	case last.Kind == CheckpointResume:
		return e.ContinueResume(ctx, runID, nil, opts)
	}
	start, _ := inspectLog(log)
	if start == nil {
		return nil, &ChainCheckpointError{RunID: runID, Msg: "the checkpoint log has no start entry"}
	}
	if _, running := e.active.LoadOrStore(runID, struct{}{}); running {
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run is executing here already"}}
	}
	p, err := e.compile(ctx, start.Chain)
	if err != nil {
		e.active.Delete(runID)
		return nil, err
	}
	if !p.Valid() {
		e.active.Delete(runID)
		return nil, &ChainResumeError{ChainCheckpointError{RunID: runID, Msg: "the run's chain no longer validates: " + (&chain.ValidationError{Issues: p.Issues()}).Error()}}
	}
	// An empty record: nothing to apply, and a node whose failure stopped
	// the run just before the end entry (never written) runs again, as a
	// resume of a failed run would run it.
	rs := &Resumption{e: e, runID: runID, log: log, start: start, p: p, rec: &ResumeRecord{}, opts: opts}
	return rs.Run(ctx)
}
