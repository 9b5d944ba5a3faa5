package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// pausedRun stores a run of ch paused at node with approval, the pause
// written at at.
func pausedRun(t *testing.T, db store.Backend, id string, ch *store.Chain, node string, prompt any, a *engine.ApprovalInfo, at time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, ChainName: ch.Name, Status: chain.StatusRunning, Started: at}); err != nil {
		t.Fatal(err)
	}
	log := []engine.Checkpoint{
		{RunID: id, Kind: engine.CheckpointStart, Time: at, Start: &engine.StartRecord{Chain: ch.Doc}},
		{RunID: id, Kind: engine.CheckpointPause, EventSeq: 2, Time: at, Pause: &engine.PauseRecord{NodeID: node, Prompt: prompt, Approval: a}},
		{RunID: id, Kind: engine.CheckpointEnd, EventSeq: 2, Time: at, End: &engine.EndRecord{Status: chain.StatusPaused}},
	}
	if err := db.Append(ctx, id, log); err != nil {
		t.Fatal(err)
	}
}

// testInterruptsInbox: pending interrupts of paused runs, filtered by chain,
// run and text, sorted by waiting time or deadline, bounded; an answered or
// ended pause leaves the inbox.
func testInterruptsInbox(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	exp, err := db.CreateChain(ctx, SampleChain("Expenses", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	hire, err := db.CreateChain(ctx, SampleChain("Hiring", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	late := &engine.ApprovalInfo{Deadline: t0.Add(48 * time.Hour), OnTimeout: chain.OnTimeoutReject, Proposed: map[string]any{"amount": 10.0},
		Schema: map[string]any{"type": "object"}, Approvers: []string{"finance"}}
	soon := &engine.ApprovalInfo{Deadline: t0.Add(time.Hour), OnTimeout: chain.OnTimeoutEdge}
	pausedRun(t, db, "a", exp, "ask", "Pay 10 % to bob?", late, t0)
	pausedRun(t, db, "b", hire, "offer", map[string]any{"question": "Hire Ada?"}, soon, t0.Add(time.Minute))
	pausedRun(t, db, "c", exp, "ask", "Pay carol?", nil, t0.Add(2*time.Minute))

	ids := func(list []store.Interrupt) string {
		s := ""
		for _, it := range list {
			s += it.RunID
		}
		return s
	}
	list, err := db.ListInterrupts(ctx, store.InterruptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if ids(list) != "abc" {
		t.Fatalf("waiting order: %s", ids(list))
	}
	a := list[0]
	if a.ChainID != exp.ID || a.ChainName != "Expenses" || a.NodeID != "ask" || a.Prompt != "Pay 10 % to bob?" || !a.Since.Equal(t0) || !a.Deadline.Equal(late.Deadline) {
		t.Errorf("interrupt a = %+v", a)
	}
	JSONEqual(t, a.Approval, late)
	if list[2].Approval != nil || !list[2].Deadline.IsZero() {
		t.Errorf("interrupt c = %+v", list[2])
	}
	for _, tc := range []struct {
		f    store.InterruptFilter
		want string
	}{
		{store.InterruptFilter{Sort: store.SortDeadline}, "bac"},
		{store.InterruptFilter{ChainID: exp.ID}, "ac"},
		{store.InterruptFilter{RunID: "b"}, "b"},
		{store.InterruptFilter{Text: "ADA"}, "b"},    // inside an object prompt
		{store.InterruptFilter{Text: "hiring"}, "b"}, // the chain's name
		{store.InterruptFilter{Text: "10 %"}, "a"},   // % is literal
		{store.InterruptFilter{Text: "_"}, ""},       // so is _
		{store.InterruptFilter{Limit: 2}, "ab"},
		{store.InterruptFilter{Limit: 100000}, "abc"}, // bounded, not refused
	} {
		got, err := db.ListInterrupts(ctx, tc.f)
		if err != nil || ids(got) != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.f, ids(got), err, tc.want)
		}
	}
	if _, err := db.ListInterrupts(ctx, store.InterruptFilter{Sort: "random"}); store.ErrorCode(err) != store.EINVALID {
		t.Errorf("bad sort: %v", err)
	}

	// Deadlines: only b's has passed an hour and a minute later.
	due, err := db.DueInterrupts(ctx, t0.Add(61*time.Minute), 10)
	if err != nil || ids(due) != "b" {
		t.Fatalf("due: %s %v", ids(due), err)
	}
	due, _ = db.DueInterrupts(ctx, t0.Add(72*time.Hour), 1)
	if ids(due) != "b" {
		t.Errorf("due, limit 1, nearest deadline first: %s", ids(due))
	}

	// Answered: claimed, it leaves the inbox (and the sweeper's view), and
	// the answer's audit entry reads back.
	if n, err := db.ClaimInterrupt(ctx, "b", ""); err != nil || n != "offer" {
		t.Fatalf("claim: %q %v", n, err)
	}
	ans := engine.ResumeRecord{NodeID: "offer", Value: map[string]any{"salary": 1.0}, HasValue: true, Action: engine.ActionApprove,
		Comment: "ok", By: "token", Address: "10.0.0.7", At: t0.Add(time.Hour).UTC()}
	if err := db.Append(ctx, "b", []engine.Checkpoint{{RunID: "b", Kind: engine.CheckpointResume, EventSeq: 2, Time: t0.Add(time.Hour), Resume: &ans}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Answers(ctx, "b")
	if err != nil || len(got) != 1 {
		t.Fatalf("answers: %v %v", got, err)
	}
	JSONEqual(t, got[0], ans)
	if got, _ := db.Answers(ctx, "a"); len(got) != 0 {
		t.Errorf("answers of unanswered a: %v", got)
	}
	list, _ = db.ListInterrupts(ctx, store.InterruptFilter{})
	if ids(list) != "ac" {
		t.Errorf("after answering b: %s", ids(list))
	}
	if due, _ := db.DueInterrupts(ctx, t0.Add(72*time.Hour), 10); ids(due) != "a" {
		t.Errorf("due after answering b: %s", ids(due))
	}
}

// testEscalations: each notification of an escalation webhook is due once,
// and of concurrent claims exactly one wins.
func testEscalations(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, err := db.CreateChain(ctx, SampleChain("Esc", 1), "", true)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	pausedRun(t, db, "e", ch, "ask", "ok?", &engine.ApprovalInfo{Deadline: t0.Add(time.Hour), OnTimeout: "reject",
		Escalation: "http://127.0.0.1:9/hook", NotifyBefore: 600}, t0)
	pausedRun(t, db, "quiet", ch, "ask", "ok?", &engine.ApprovalInfo{Deadline: t0.Add(time.Hour), OnTimeout: "reject"}, t0)

	stages := func(now time.Time) string {
		t.Helper()
		es, err := db.DueEscalations(ctx, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, e := range es {
			if e.RunID != "e" || e.URL != "http://127.0.0.1:9/hook" {
				t.Errorf("escalation %+v", e)
			}
			s += e.Stage
		}
		return s
	}
	if got := stages(t0); got != store.EscalationPaused {
		t.Fatalf("at the pause: %q", got)
	}
	claim := func(stage string, now time.Time) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := db.ClaimEscalation(ctx, "e", mustN(t, db, "e"), stage, now)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return won
	}
	if won := claim(store.EscalationPaused, t0); won != 1 {
		t.Fatalf("paused claimed %d times", won)
	}
	if got := stages(t0.Add(49 * time.Minute)); got != "" {
		t.Errorf("before notify_at: %q", got)
	}
	if got := stages(t0.Add(50 * time.Minute)); got != store.EscalationDeadlineNear {
		t.Fatalf("at notify_at: %q", got)
	}
	if won := claim(store.EscalationDeadlineNear, t0.Add(50*time.Minute)); won != 1 {
		t.Fatalf("deadline_near claimed %d times", won)
	}
	if got := stages(t0.Add(2 * time.Hour)); got != "" {
		t.Errorf("after both: %q", got)
	}
	if _, err := db.ClaimEscalation(ctx, "e", 1, "other", t0); store.ErrorCode(err) != store.EINVALID {
		t.Errorf("unknown stage: %v", err)
	}
}

// mustN returns the log entry of run id's pending interrupt.
func mustN(t *testing.T, db store.Backend, id string) int64 {
	list, err := db.ListInterrupts(context.Background(), store.InterruptFilter{RunID: id})
	if err != nil || len(list) != 1 {
		t.Fatalf("interrupt of %s: %v %v", id, list, err)
	}
	return list[0].N
}
