package chain

// RunStatus is a run's status.
type RunStatus string

const (
	StatusRunning   RunStatus = "running"
	StatusQueued    RunStatus = "queued"    // recorded, waiting for a free slot; the engine never reports it
	StatusCompleted RunStatus = "completed" // every node that ran finished cleanly
	StatusPartial   RunStatus = "partial"   // errors were handled (skip, continue, handler) and the run went on
	StatusFailed    RunStatus = "failed"
	StatusPaused    RunStatus = "paused"
	StatusCancelled RunStatus = "cancelled"
	StatusTimedOut  RunStatus = "timed_out"
)

// Terminal reports whether the run will not continue without a resume.
func (s RunStatus) Terminal() bool { return s != StatusRunning && s != StatusQueued }
