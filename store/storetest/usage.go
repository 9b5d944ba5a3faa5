package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// usageEvent is the model_usage progress event of one model call.
func usageEvent(run string, seq int64, node, agent, model string, in, out int64, at time.Time) engine.Event {
	return engine.Event{RunID: run, Seq: seq, NodeID: node, Phase: engine.PhaseProgress, Time: at,
		Progress: engine.ModelUsage{Agent: agent, Model: model, InputTokens: in, OutputTokens: out, Reported: true}.Progress()}
}

// testUsage: model_usage events are indexed as they are appended (once,
// whatever else the write holds), summed per chain and per agent in time
// buckets, pruned with their run; a run keeps the first trace it is given.
func testUsage(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("priced", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"u1", "u2"} {
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: ch.ID, ChainVersion: 1, ChainName: "priced", Status: chain.StatusCompleted, Started: day}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateRun(ctx, store.Run{ID: "adhoc", ChainName: "a2e", Kind: "a2e", Status: chain.StatusCompleted, Started: day}); err != nil {
		t.Fatal(err)
	}
	plain := Events("u1", 1, 2)
	evs := append(plain, usageEvent("u1", 3, "ask", "writer", "m-large", 100, 20, day.Add(time.Hour)),
		usageEvent("u1", 4, "ask", "writer", "m-large", 50, 5, day.Add(2*time.Hour)))
	evs = append(evs, usageEvent("u2", 1, "ask", "writer", "m-large", 7, 3, day.Add(25*time.Hour)),
		usageEvent("adhoc", 1, "n", "critic", "m-small", 1, 1, day.Add(time.Hour)))
	// A progress event of another step is not a model call.
	evs = append(evs, engine.Event{RunID: "u2", Seq: 2, NodeID: "ask", Phase: engine.PhaseProgress, Progress: map[string]any{"step": "model_call"}, Time: day})
	if err := db.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	calls, err := db.RunUsage(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Seq != 3 || calls[0].InputTokens != 100 || calls[0].OutputTokens != 20 ||
		calls[0].NodeID != "ask" || calls[0].Agent != "writer" || calls[0].Model != "m-large" || !calls[0].Reported ||
		!calls[1].Time.Equal(day.Add(2*time.Hour)) {
		t.Fatalf("run usage %+v", calls)
	}
	if c, _ := db.RunUsage(ctx, "u2"); len(c) != 1 {
		t.Fatalf("run u2 usage %+v", c)
	}

	rows, err := db.Usage(ctx, store.UsageFilter{By: store.UsageByChain, All: true, Bucket: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Newest bucket first: day 2 (u2), then day 1 (the ad-hoc run, key "", and u1).
	if len(rows) != 3 {
		t.Fatalf("by chain %+v", rows)
	}
	if r := rows[0]; r.Key != ch.ID || r.Name != "priced" || !r.Bucket.Equal(day.Add(24*time.Hour)) || r.Calls != 1 || r.InputTokens != 7 {
		t.Fatalf("day 2 %+v", r)
	}
	if r := rows[1]; r.Key != "" || r.Name != "a2e" || r.Model != "m-small" || r.Calls != 1 {
		t.Fatalf("day 1 ad hoc %+v", r)
	}
	if r := rows[2]; r.Key != ch.ID || !r.Bucket.Equal(day) || r.Calls != 2 || r.Runs != 1 || r.InputTokens != 150 || r.OutputTokens != 25 || r.Unreported != 0 {
		t.Fatalf("day 1 chain %+v", r)
	}
	rows, err = db.Usage(ctx, store.UsageFilter{By: store.UsageByAgent, Key: "writer", Bucket: 7 * 24 * time.Hour, Since: day, Until: day.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Key != "writer" || rows[0].Calls != 2 || rows[0].InputTokens != 150 {
		t.Fatalf("agent writer on day 1 %+v", rows)
	}
	if _, err := db.Usage(ctx, store.UsageFilter{By: "model", All: true, Bucket: time.Hour}); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("bad grouping: %v", err)
	}

	if tp, err := db.RunTrace(ctx, "u1"); err != nil || tp != "" {
		t.Fatalf("trace before any: %q %v", tp, err)
	}
	first := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if err := db.SetRunTrace(ctx, "u1", first); err != nil {
		t.Fatal(err)
	}
	if err := db.SetRunTrace(ctx, "u1", "00-11111111111111111111111111111111-2222222222222222-01"); err != nil {
		t.Fatal(err)
	}
	if tp, _ := db.RunTrace(ctx, "u1"); tp != first {
		t.Fatalf("trace %q, want the first one", tp)
	}

	// Pruned with their runs.
	if n, err := db.PruneRuns(ctx, store.Retention{OlderThan: 24 * time.Hour}); err != nil || n != 3 {
		t.Fatalf("pruned %d: %v", n, err)
	}
	for _, id := range []string{"u1", "u2", "adhoc"} {
		if c, err := db.RunUsage(ctx, id); err != nil || len(c) != 0 {
			t.Fatalf("run %s after pruning: %+v %v", id, c, err)
		}
	}
	if tp, err := db.RunTrace(ctx, "u1"); err != nil || tp != "" {
		t.Fatalf("trace after pruning: %q %v", tp, err)
	}
}
