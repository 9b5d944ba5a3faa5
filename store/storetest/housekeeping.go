package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func testRecoverInterrupted(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	b := CheckpointLog("paused")
	db.Append(ctx, "paused", b[0])
	db.Append(ctx, "paused", b[1])
	// A run that was mid-flight.
	db.Append(ctx, "mid", CheckpointLog("mid")[0])
	db.Append(ctx, "mid", CheckpointLog("mid")[1][:1])
	db.AppendEvents(ctx, Events("mid", 1, 4))
	// A finished one.
	for _, bb := range CheckpointLog("done") {
		db.Append(ctx, "done", bb)
	}
	// Runs still waiting in the queue when the process died (the store
	// keeps the status queued). An ad-hoc one and a re-run cannot be
	// queued again (what they run lived in the process): they fail, saying
	// to start them again, not to resume.
	if _, err := db.CreateRun(ctx, store.Run{ID: "waiting", Status: chain.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.GetRunInfo(ctx, "waiting"); r == nil || r.Status != chain.StatusQueued {
		t.Fatalf("queued run stored as %+v", r)
	}
	ch, err := db.CreateChain(ctx, SampleChain("saved", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateRun(ctx, store.Run{ID: "rerun", ChainID: ch.ID, ChainVersion: 1, ParentRunID: "done", Kind: store.KindRerun, Status: chain.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	// A saved chain's runs that never started, one queued, one given a
	// slot but killed before its start entry: both stay queued, to be
	// queued again with their input.
	for _, id := range []string{"saved-queued", "saved-running"} {
		st := chain.StatusQueued
		if id == "saved-running" {
			st = chain.StatusRunning
		}
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: ch.ID, ChainVersion: 1, Kind: store.KindRun, Input: map[string]any{"q": id}, Status: st}); err != nil {
			t.Fatal(err)
		}
	}
	// Events but no start entry: it did start, but nothing resumes it.
	if _, err := db.CreateRun(ctx, store.Run{ID: "saved-events", ChainID: ch.ID, ChainVersion: 1, Kind: store.KindRun, Status: chain.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	db.AppendEvents(ctx, Events("saved-events", 1, 2))
	n, err := db.RecoverInterrupted(ctx)
	if err != nil || n != 4 {
		t.Fatalf("recovered %d, %v", n, err)
	}
	for _, id := range []string{"waiting", "rerun", "saved-events"} {
		r, _ := db.GetRunInfo(ctx, id)
		if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != store.CodeInterruptedBeforeStart || strings.Contains(r.Error.Message, "resume it") {
			t.Fatalf("never-started %s after recovery: %+v", id, r)
		}
		if !strings.Contains(r.Error.Message, "start it again") {
			t.Fatalf("never-started %s: message %q does not say to start it again", id, r.Error.Message)
		}
	}
	for _, id := range []string{"saved-queued", "saved-running"} {
		r, _ := db.GetRunInfo(ctx, id)
		if r.Status != chain.StatusQueued || r.Error != nil || r.Input["q"] != id {
			t.Fatalf("saved run %s after recovery: %+v, want queued with its input", id, r)
		}
	}
	r, _ := db.GetRun(ctx, "mid")
	if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != store.CodeInterruptedByRestart ||
		!strings.Contains(r.Error.Message, "resume it to continue") || r.NodesRun != 1 {
		t.Fatalf("recovered run %+v", r)
	}
	log, _ := db.Load(ctx, "mid")
	last := log[len(log)-1]
	if last.Kind != engine.CheckpointEnd || last.End.Status != chain.StatusFailed || last.EventSeq != 4 || last.End.Error.Code != store.CodeInterruptedByRestart {
		t.Fatalf("end entry %+v", last)
	}
	if r, _ := db.GetRun(ctx, "paused"); r.Status != chain.StatusPaused {
		t.Fatalf("paused run touched: %s", r.Status)
	}
	if n, err := db.ClaimInterrupt(ctx, "paused", ""); err != nil || n != "n1" {
		t.Fatalf("paused run's interrupt: %q %v", n, err)
	}
	if r, _ := db.GetRun(ctx, "done"); r.Status != chain.StatusFailed || r.Error.Code != engine.CodeNodeError {
		t.Fatalf("finished run touched: %+v", r)
	}
	if n, _ := db.RecoverInterrupted(ctx); n != 0 {
		t.Fatalf("second recovery marked %d", n)
	}
	if r, _ := db.GetRunInfo(ctx, "saved-queued"); r.Status != chain.StatusQueued {
		t.Fatalf("second recovery changed a requeued run: %+v", r)
	}
}

func testPruneRuns(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	a, _ := db.CreateChain(ctx, SampleChain("a", 1), "", true)
	b, _ := db.CreateChain(ctx, SampleChain("b", 1), "", true)
	mk := func(id, chain string, age time.Duration, status chain.RunStatus) {
		t.Helper()
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: chain, Status: status, Started: now.Add(-age)}); err != nil {
			t.Fatal(err)
		}
		db.AppendEvents(ctx, Events(id, 1, 3))
		for _, bb := range CheckpointLog(id)[:2] {
			db.Append(ctx, id, bb)
		}
		db.Append(ctx, id, []engine.Checkpoint{{RunID: id, Kind: engine.CheckpointEnd, End: &engine.EndRecord{Status: status}}})
	}
	for i := 0; i < 5; i++ {
		mk(fmt.Sprintf("a%d", i), a.ID, time.Duration(i)*24*time.Hour, chain.StatusCompleted)
	}
	mk("b0", b.ID, 10*24*time.Hour, chain.StatusCompleted)
	mk("b1", b.ID, 11*24*time.Hour, chain.StatusPaused)
	mk("adhoc", "", 30*24*time.Hour, chain.StatusFailed)

	if _, err := db.PruneRuns(ctx, store.Retention{}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("unlimited prune: %v", err)
	}
	// Older than 2.5 days, but keep the newest 4 of each chain: only a4 goes
	// (a3 is the 4th newest of a; b and the ad-hoc runs are within 4).
	n, err := db.PruneRuns(ctx, store.Retention{OlderThan: 60 * time.Hour, KeepPerChain: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("pruned %d", n)
	}
	// Older than 5 days: b0 and adhoc go; b1 is paused and stays.
	if n, err = db.PruneRuns(ctx, store.Retention{OlderThan: 5 * 24 * time.Hour}); err != nil || n != 2 {
		t.Fatalf("age prune: %d %v", n, err)
	}
	left, _, _ := db.ListRuns(ctx, store.RunFilter{Limit: 100})
	var ids []string
	for _, r := range left {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "a0,a1,a2,a3,b1" {
		t.Fatalf("left %v", ids)
	}
	// Nothing of a pruned run is left: row, events, checkpoint log, pauses.
	for _, id := range []string{"a4", "adhoc", "b0"} {
		if _, err := db.GetRunInfo(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("pruned run %s: %v", id, err)
		}
		if n, err := db.MaxSeq(ctx, id); err != nil || n != 0 {
			t.Fatalf("events of pruned run %s: max seq %d %v", id, n, err)
		}
		var ce *engine.ChainCheckpointError
		if _, err := db.Load(ctx, id); !errors.As(err, &ce) {
			t.Fatalf("checkpoint log of pruned run %s: %v", id, err)
		}
	}
	n, _ = db.PruneRuns(ctx, store.Retention{KeepPerChain: 1})
	if n != 3 { // a1, a2, a3
		t.Fatalf("keep-1 pruned %d", n)
	}
	if _, err := db.GetChain(ctx, a.ID); err != nil {
		t.Fatal("chain pruned")
	}
}
