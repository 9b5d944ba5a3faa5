package store

import (
	"context"
	"time"

	"github.com/chainstudio/studio/engine"
)

// UsageStore keeps what observability needs beyond events: the model calls
// of agent nodes with their tokens (indexed from the model_usage progress
// events as they are appended, in the same write), and the trace context of
// each run.
type UsageStore interface {
	// RunUsage returns a run's model calls in seq order.
	RunUsage(ctx context.Context, runID string) ([]ModelCall, error)
	// Usage sums model calls by chain or agent, model and time bucket.
	Usage(ctx context.Context, f UsageFilter) ([]UsageRow, error)
	// SetRunTrace records the W3C traceparent of a run's first span; a run
	// that has one keeps it (the first execution wins).
	SetRunTrace(ctx context.Context, runID, traceparent string) error
	// RunTrace returns the traceparent SetRunTrace recorded, "" for none.
	RunTrace(ctx context.Context, runID string) (string, error)
}

// ModelCall is one call an agent node made to a model.
type ModelCall struct {
	RunID        string    `json:"run_id"`
	Seq          int64     `json:"seq"` // of the usage event
	NodeID       string    `json:"node_id"`
	Agent        string    `json:"agent"`
	Model        string    `json:"model"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	Reported     bool      `json:"reported"` // false: the server reported no usage
	Time         time.Time `json:"time"`
}

// ModelCallOf is the model call a model_usage progress event records, as
// the store indexes it (false: ev is no such event).
func ModelCallOf(ev *engine.Event) (ModelCall, bool) {
	u, ok := engine.UsageOf(ev)
	if !ok {
		return ModelCall{}, false
	}
	at := ev.Time
	if at.IsZero() {
		at = time.Now()
	}
	return ModelCall{RunID: ev.RunID, Seq: ev.Seq, NodeID: cut(ev.NodeID, 256), Agent: cut(u.Agent, 256), Model: cut(u.Model, 256),
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Reported: u.Reported, Time: at}, true
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Usage groupings (UsageFilter.By).
const (
	UsageByChain = "chain"
	UsageByAgent = "agent"
)

// UsageFilter selects and groups model calls for Usage.
type UsageFilter struct {
	By     string        // UsageByChain or UsageByAgent
	Since  time.Time     // calls at or after (zero: any)
	Until  time.Time     // calls before (zero: any)
	Bucket time.Duration // width of the time buckets, at least a minute
	Key    string        // only this chain id (ad-hoc runs: "") or agent; "" with All
	All    bool          // every chain or agent (Key ignored)
	Limit  int           // rows, default 1000, at most 10000
}

// UsageRow is the sum of the model calls of one chain or agent to one model
// in one time bucket.
type UsageRow struct {
	Key          string    `json:"key"`  // chain id ("" for ad-hoc runs) or agent name
	Name         string    `json:"name"` // chain name or agent name
	Model        string    `json:"model"`
	Bucket       time.Time `json:"bucket"` // start of the bucket
	Calls        int64     `json:"calls"`
	Runs         int64     `json:"runs"`
	InputTokens  int64     `json:"input_tokens"`
	OutputTokens int64     `json:"output_tokens"`
	Unreported   int64     `json:"unreported"` // calls whose answer carried no usage
}
