package web

import (
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/ops"
)

// A run's usage counts the model calls of the events the writer has not
// stored yet, each once, whether or not it was stored in between.
func TestUsageCountsBufferedCallsOnce(t *testing.T) {
	t.Parallel()
	usage := func(seq int64, model string) engine.Event {
		return engine.Event{RunID: "r", Seq: seq, NodeID: "a", Phase: engine.PhaseProgress,
			Progress: engine.ModelUsage{Model: model, InputTokens: 3, Reported: true}.Progress()}
	}
	stored := []store.ModelCall{{RunID: "r", Seq: 2, Model: "m1"}, {RunID: "r", Seq: 4, Model: "m2"}}
	buffered := []engine.Event{usage(4, "m2"), {RunID: "r", Seq: 5, Phase: engine.PhaseDone}, usage(6, "m3")}
	got := ops.WithBufferedCalls(stored, buffered)
	if len(got) != 3 || got[2].Seq != 6 || got[2].Model != "m3" || got[2].InputTokens != 3 || !got[2].Reported {
		t.Fatalf("calls %+v", got)
	}
}

// TestUsageAPIParameters: bad parameters are a 400 naming the parameter;
// an unknown run is a 404; an empty studio sums to nothing.
func TestUsageAPIParameters(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	for q, param := range map[string]string{
		"by=model":        "by",
		"bucket=month":    "bucket",
		"since=yesterday": "since",
		"until=2026-01-01T00:00:00Z&since=2026-02-01T00:00:00Z": "since",
		"since=2020-01-01T00:00:00Z&until=2026-01-01T00:00:00Z": "since",
		"limit=0": "limit",
	} {
		r := do(t, ts, "GET", "/v1/usage?"+q, nil)
		wantStatus(t, r, 400)
		if r.errCode(t) != "bad_parameter" || r.errDetails(t)["parameter"] != param {
			t.Errorf("%s: %s", q, r.body)
		}
	}
	r := do(t, ts, "GET", "/v1/usage?by=agent", nil)
	wantStatus(t, r, 200)
	m := r.json(t)
	if rows, _ := m["rows"].([]any); len(rows) != 0 || m["priced"] != false || m["total"].(map[string]any)["cost"] != nil {
		t.Fatalf("empty usage %s", r.body)
	}
	r = do(t, ts, "GET", "/v1/runs/nope/usage", nil)
	wantStatus(t, r, 404)
}
