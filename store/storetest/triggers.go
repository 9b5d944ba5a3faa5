package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// Schedules and hooks round-trip; a hook's secret is read by GetHook only;
// a run started by a trigger says so and records its firing; deleting a
// chain takes its schedules off the scheduler's list and its hooks off
// GetHook.
func testTriggers(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("triggered", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSchedule(ctx, store.Schedule{ID: "s-nochain", ChainID: "nope", Cron: "* * * * *"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("schedule of an unknown chain: %v, want not found", err)
	}
	s, err := db.CreateSchedule(ctx, store.Schedule{ID: "s1", ChainID: ch.ID, Cron: "*/5 * * * *", TimeZone: "Europe/Paris",
		Input: map[string]any{"n": 1.0}, Overlap: store.OverlapSkip, CatchUp: store.CatchUpOnce, Enabled: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Cron != "*/5 * * * *" || s.TimeZone != "Europe/Paris" || s.Input["n"] != 1.0 || !s.Enabled || s.Created.IsZero() || !s.LastTick.IsZero() {
		t.Fatalf("created schedule: %+v", s)
	}
	s.Cron, s.Enabled = "0 * * * *", false
	if s, err = db.UpdateSchedule(ctx, *s); err != nil || s.Cron != "0 * * * *" || s.Enabled {
		t.Fatalf("update: %+v %v", s, err)
	}
	if _, err := db.UpdateSchedule(ctx, store.Schedule{ID: "s1", ChainID: "other"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update through another chain: %v", err)
	}
	if all, err := db.ListSchedules(ctx, ""); err != nil || len(all) != 0 {
		t.Fatalf("a disabled schedule is on the scheduler's list: %v %v", all, err)
	}
	s.Enabled = true
	if _, err := db.UpdateSchedule(ctx, *s); err != nil {
		t.Fatal(err)
	}

	h, err := db.CreateHook(ctx, store.Hook{ID: "h1", ChainID: ch.ID, Secret: "sekrit", Sync: true, SyncTimeout: 7 * time.Second})
	if err != nil || h.Secret != "sekrit" || !h.Sync || h.SyncTimeout != 7*time.Second {
		t.Fatalf("create hook: %+v %v", h, err)
	}
	hs, err := db.ListHooks(ctx, ch.ID)
	if err != nil || len(hs) != 1 || hs[0].Secret != "" {
		t.Fatalf("ListHooks must not return secrets: %+v %v", hs, err)
	}

	// A webhook run and a schedule run record their firings with the run.
	tick := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, r := range []store.Run{
		{ID: "r-hook", ChainID: ch.ID, ChainVersion: 1, TriggerKind: store.TriggerWebhook, TriggerID: "h1"},
		{ID: "r-sched", ChainID: ch.ID, ChainVersion: 1, TriggerKind: store.TriggerSchedule, TriggerID: "s1", TriggerTick: tick},
	} {
		r.Started = tick.Add(time.Duration(i) * time.Second)
		if _, err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.GetRunInfo(ctx, "r-sched")
	if err != nil || got.TriggerKind != store.TriggerSchedule || got.TriggerID != "s1" {
		t.Fatalf("run started by a schedule reads back as %+v (%v)", got, err)
	}
	runs, _, err := db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID})
	if err != nil || len(runs) != 2 || runs[1].TriggerKind != store.TriggerWebhook || runs[1].TriggerID != "h1" {
		t.Fatalf("listed runs: %+v %v", runs, err)
	}
	fs, err := db.ListFirings(ctx, "s1", 0)
	if err != nil || len(fs) != 1 || fs[0].RunID != "r-sched" || !fs[0].Tick.Equal(tick) || fs[0].Outcome != store.FiringStarted {
		t.Fatalf("schedule firings: %+v %v", fs, err)
	}
	if h, err := db.GetHook(ctx, "h1"); err != nil || !h.LastFired.Equal(tick) {
		t.Fatalf("hook last fired: %+v %v", h, err)
	}
	if ss, err := db.ListSchedules(ctx, ""); err != nil || len(ss) != 1 || !ss[0].LastTick.Equal(tick) {
		t.Fatalf("schedule last tick: %+v %v", ss, err)
	}
	// Busy: both runs are "running" (CreateRun's default).
	if busy, err := db.ChainBusy(ctx, ch.ID); err != nil || !busy {
		t.Fatalf("ChainBusy with running runs: %v %v", busy, err)
	}
	if busy, err := db.ChainBusy(ctx, "other"); err != nil || busy {
		t.Fatalf("ChainBusy of a chain without runs: %v %v", busy, err)
	}

	// History is bounded: the newest MaxFiringsKept stay, the newest tick too.
	for i := range store.MaxFiringsKept + 5 {
		f := store.Firing{TriggerID: "s1", Tick: tick.Add(time.Duration(i+1) * time.Minute), Outcome: store.FiringSkipped,
			Created: tick.Add(time.Duration(i+1) * time.Minute)}
		if err := db.RecordFiring(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	fs, err = db.ListFirings(ctx, "s1", 1000)
	if err != nil || len(fs) != store.MaxFiringsKept || !fs[0].Tick.Equal(tick.Add(time.Duration(store.MaxFiringsKept+5)*time.Minute)) {
		t.Fatalf("bounded history: %d firings, newest %+v, %v", len(fs), fs[0], err)
	}

	if err := db.DeleteChain(ctx, ch.ID, 0); err != nil {
		t.Fatal(err)
	}
	if ss, err := db.ListSchedules(ctx, ""); err != nil || len(ss) != 0 {
		t.Fatalf("a deleted chain's schedule is still listed: %+v %v", ss, err)
	}
	if _, err := db.GetHook(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted chain's hook: %v", err)
	}
	if err := db.DeleteSchedule(ctx, ch.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSchedule(ctx, ch.ID, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if fs, _ := db.ListFirings(ctx, "s1", 0); len(fs) != 0 {
		t.Fatalf("firings outlive their schedule: %d", len(fs))
	}
}

// A schedule tick fires once: of many concurrent CreateRun calls for the
// same (schedule, tick) exactly one writes, the others get ErrAlreadyFired
// and leave no run; a skipped tick cannot fire afterwards either.
func testScheduleTickFiresOnce(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("once", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSchedule(ctx, store.Schedule{ID: "s", ChainID: ch.ID, Cron: "* * * * *", Overlap: store.OverlapAllow, CatchUp: store.CatchUpSkip, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = db.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), ChainID: ch.ID, ChainVersion: 1,
				TriggerKind: store.TriggerSchedule, TriggerID: "s", TriggerTick: tick})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, store.ErrAlreadyFired) && store.ErrorCode(err) == store.ECONFLICT:
			if _, err := db.GetRunInfo(ctx, fmt.Sprintf("r%d", i)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("run r%d was refused but stored: %v", i, err)
			}
		default:
			t.Errorf("r%d: %v", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent firings of one tick wrote a run, want 1", ok, len(errs))
	}
	next := tick.Add(time.Minute)
	if err := db.RecordFiring(ctx, store.Firing{TriggerID: "s", Tick: next, Outcome: store.FiringSkipped, Message: "busy"}); err != nil {
		t.Fatal(err)
	}
	_, err = db.CreateRun(ctx, store.Run{ID: "late", ChainID: ch.ID, TriggerKind: store.TriggerSchedule, TriggerID: "s", TriggerTick: next})
	if !errors.Is(err, store.ErrAlreadyFired) {
		t.Fatalf("firing a tick recorded as skipped: %v", err)
	}
	if err := db.RecordFiring(ctx, store.Firing{TriggerID: "s", Tick: next, Outcome: store.FiringMissed}); !errors.Is(err, store.ErrAlreadyFired) {
		t.Fatalf("recording a tick twice: %v", err)
	}
}

// A webhook signature is accepted once within its window: a second use is
// ErrSignatureUsed (ECONFLICT) whoever asks, of concurrent uses exactly one
// wins, an expired digest may be used again, and pruning deletes only the
// expired ones.
func testHookSignatures(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	now := time.Now().Truncate(time.Second)
	digest := func(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }
	if err := db.UseHookSignature(ctx, "h1", digest("a"), now, now.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	err := db.UseHookSignature(ctx, "h1", digest("a"), now.Add(time.Minute), now.Add(6*time.Minute))
	if !errors.Is(err, store.ErrSignatureUsed) || store.ErrorCode(err) != store.ECONFLICT {
		t.Fatalf("the same signature again within its window: %v, want ErrSignatureUsed", err)
	}
	if err := db.UseHookSignature(ctx, "h1", digest("b"), now, now.Add(5*time.Minute)); err != nil {
		t.Fatalf("another signature: %v", err)
	}
	if err := db.UseHookSignature(ctx, "h1", []byte("short"), now, now.Add(time.Minute)); store.ErrorCode(err) != store.EINVALID {
		t.Fatalf("a digest that is no SHA-256: %v, want invalid", err)
	}

	// Ten callers at once with one signature: one is accepted.
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = db.UseHookSignature(ctx, "h2", digest("c"), now, now.Add(5*time.Minute))
		}(i)
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			accepted++
		case !errors.Is(err, store.ErrSignatureUsed):
			t.Fatalf("concurrent use: %v", err)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d of 10 concurrent uses of one signature accepted, want 1", accepted)
	}

	// Past its expiry a digest is free again, pruned or not.
	later := now.Add(5*time.Minute + time.Second)
	if err := db.UseHookSignature(ctx, "h1", digest("a"), later, later.Add(5*time.Minute)); err != nil {
		t.Fatalf("an expired digest used again: %v", err)
	}
	if err := db.UseHookSignature(ctx, "h1", digest("a"), later, later.Add(5*time.Minute)); !errors.Is(err, store.ErrSignatureUsed) {
		t.Fatalf("the digest taken over is not remembered: %v", err)
	}
	// b and c expire at now+5m; a now expires at later+5m.
	if n, err := db.PruneHookSignatures(ctx, later); err != nil || n != 2 {
		t.Fatalf("prune: %d %v, want 2 expired digests deleted", n, err)
	}
	if err := db.UseHookSignature(ctx, "h1", digest("a"), later, later.Add(5*time.Minute)); !errors.Is(err, store.ErrSignatureUsed) {
		t.Fatalf("pruning deleted a live digest: %v", err)
	}
	if n, err := db.PruneHookSignatures(ctx, later); err != nil || n != 0 {
		t.Fatalf("second prune: %d %v", n, err)
	}
}

// A run an A2E session started records the session (TriggerA2ESession and
// its id) and reads back with it, listed too; a session has no firings.
func testA2ESessionRun(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	const session = "0123456789abcdef0123456789abcdef"
	started := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	if _, err := db.CreateRun(ctx, store.Run{ID: "r-a2e", ChainName: "pipeline", Kind: store.KindA2E, Status: chain.StatusRunning,
		Input: map[string]any{}, Started: started, TriggerKind: store.TriggerA2ESession, TriggerID: session}); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetRunInfo(ctx, "r-a2e")
	if err != nil || got.TriggerKind != store.TriggerA2ESession || got.TriggerID != session || got.Kind != store.KindA2E {
		t.Fatalf("run started by an A2E session reads back as %+v (%v)", got, err)
	}
	runs, _, err := db.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 || runs[0].TriggerKind != store.TriggerA2ESession || runs[0].TriggerID != session {
		t.Fatalf("listed runs: %+v %v", runs, err)
	}
	if fs, err := db.ListFirings(ctx, session, 0); err != nil || len(fs) != 0 {
		t.Fatalf("an A2E session's run recorded firings: %+v %v", fs, err)
	}
}
