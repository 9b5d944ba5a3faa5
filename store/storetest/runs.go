package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func testRunsKeysetPaging(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, _ := db.CreateChain(ctx, SampleChain("c", 1), "", true)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := 0; i < 25; i++ {
		// Several runs share a start time, to exercise the id tie-break.
		r := store.Run{ID: fmt.Sprintf("run-%02d", i), ChainID: ch.ID, ChainVersion: 1, Input: map[string]any{"i": float64(i)},
			Started: base.Add(time.Duration(i/3) * time.Second)}
		if _, err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.CreateRun(ctx, store.Run{ID: "adhoc", Kind: store.KindA2E, Started: base}); err != nil {
		t.Fatal(err)
	}
	// Expected order: started DESC, id ASC.
	for g := 8; g >= 0; g-- {
		for i := g * 3; i < g*3+3 && i < 25; i++ {
			want = append(want, fmt.Sprintf("run-%02d", i))
		}
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		runs, next, err := db.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 7, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range runs {
			got = append(got, r.ID)
			if r.Status != chain.StatusRunning || r.Kind != store.KindRun || r.ChainVersion != 1 {
				t.Fatalf("run %+v", r)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !reflect.DeepEqual(got, want) || pages != 4 {
		t.Fatalf("paged %d pages:\n%v\nwant\n%v", pages, got, want)
	}
	all, next, _ := db.ListRuns(ctx, store.RunFilter{Limit: 100})
	if len(all) != 26 || next != "" {
		t.Fatalf("all runs: %d %q", len(all), next)
	}
	if _, _, err := db.ListRuns(ctx, store.RunFilter{Before: "!!"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad cursor: %v", err)
	}
	r, err := db.GetRun(ctx, "run-05")
	if err != nil {
		t.Fatal(err)
	}
	if r.Input["i"] != float64(5) || r.ChainID != ch.ID || !r.Started.Equal(base.Add(time.Second)) {
		t.Fatalf("get run %+v", r)
	}
	if _, err := db.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
}

// Seven runs, pages of two: older and newer walk the same pages both ways,
// and the status filter applies to every page.
func testListRunsPageBothWaysWithStatus(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 7; i++ {
		st := chain.StatusCompleted
		if i%2 == 1 {
			st = chain.StatusFailed
		}
		if _, err := db.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%d", i), ChainName: "c", Status: st, Started: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(p store.RunPage) string {
		s := ""
		for _, r := range p.Runs {
			s += r.ID + " "
		}
		return s
	}
	p1, err := db.ListRunsPage(ctx, store.RunFilter{Limit: 2})
	if err != nil || ids(p1) != "r6 r5 " || p1.Newer != "" || p1.Older == "" {
		t.Fatalf("page 1 = %q newer %q older %q err %v", ids(p1), p1.Newer, p1.Older, err)
	}
	p2, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, Before: p1.Older})
	if ids(p2) != "r4 r3 " || p2.Newer == "" || p2.Older == "" {
		t.Fatalf("page 2 = %q", ids(p2))
	}
	back, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, After: p2.Newer})
	if ids(back) != "r6 r5 " || back.Newer != "" || back.Older == "" {
		t.Fatalf("newer than page 2 = %q newer %q", ids(back), back.Newer)
	}
	p3, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, Before: p2.Older})
	p4, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, Before: p3.Older})
	if ids(p4) != "r0 " || p4.Older != "" {
		t.Fatalf("last page = %q older %q", ids(p4), p4.Older)
	}
	back3, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, After: p4.Newer})
	if ids(back3) != "r2 r1 " || back3.Newer == "" {
		t.Fatalf("newer than the last page = %q", ids(back3))
	}
	failed, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, Status: chain.StatusFailed})
	if ids(failed) != "r5 r3 " {
		t.Fatalf("failed = %q", ids(failed))
	}
	failed2, _ := db.ListRunsPage(ctx, store.RunFilter{Limit: 2, Status: chain.StatusFailed, Before: failed.Older})
	if ids(failed2) != "r1 " || failed2.Older != "" {
		t.Fatalf("failed page 2 = %q", ids(failed2))
	}
	if _, err := db.ListRunsPage(ctx, store.RunFilter{Before: "x", After: "y"}); err == nil {
		t.Fatal("before and after together accepted")
	}
}

// RunFilter.NodeID keeps the runs that reached a node, found from their
// checkpoints (a node entry other than a skip, or a pause), in the list's order and
// paged like it; runs of other chains and runs that did not get there are
// left out however old or new they are.
func testRunsThatReachedANode(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	ch, _ := db.CreateChain(ctx, SampleChain("reach", 3), "", true)
	other, _ := db.CreateChain(ctx, SampleChain("reach other", 3), "", true)
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := 0; i < 24; i++ {
		id := fmt.Sprintf("reach-%02d", i)
		chainID := ch.ID
		if i%4 == 3 {
			chainID = other.ID // reached n1 too, but of another chain
		}
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: chainID, ChainVersion: 1, Started: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
		at := t0.Add(time.Duration(i) * time.Minute)
		cps := []engine.Checkpoint{
			{RunID: id, Kind: engine.CheckpointStart, Time: at, Start: &engine.StartRecord{Chain: SampleChain("reach", 3)}},
			{RunID: id, Kind: engine.CheckpointNode, EventSeq: 1, Time: at, Node: &engine.NodeRecord{NodeID: "n0", Status: engine.PhaseDone, Output: "x", Attempts: 1, Started: at, Ended: at}},
		}
		reached := i%4 == 3
		switch i % 4 {
		case 0: // finished n1
			cps = append(cps, engine.Checkpoint{RunID: id, Kind: engine.CheckpointNode, EventSeq: 2, Time: at, Node: &engine.NodeRecord{NodeID: "n1", Status: engine.PhaseDone, Output: "y", Attempts: 1, Started: at, Ended: at}})
			reached = true
		case 1: // paused at n1
			cps = append(cps, engine.Checkpoint{RunID: id, Kind: engine.CheckpointPause, EventSeq: 2, Time: at, Pause: &engine.PauseRecord{NodeID: "n1", Prompt: "ok?"}})
			reached = true
		case 2: // decided n1 without getting there: a skip
			cps = append(cps, engine.Checkpoint{RunID: id, Kind: engine.CheckpointNode, EventSeq: 2, Time: at, Node: &engine.NodeRecord{NodeID: "n1", Status: engine.PhaseSkip, Reason: "branch_not_taken"}})
		}
		if reached {
			cps = append(cps, engine.Checkpoint{RunID: id, Kind: engine.CheckpointNode, EventSeq: 3, Time: at, Node: &engine.NodeRecord{NodeID: "n2", Status: engine.PhaseDone, Attempts: 1, Started: at, Ended: at}})
		}
		if err := db.Append(ctx, id, cps); err != nil {
			t.Fatal(err)
		}
		if chainID == ch.ID && reached {
			want = append([]string{id}, want...) // newest first
		}
	}
	var got []string
	cursor := ""
	pages := 0
	for {
		p, err := db.ListRunsPage(ctx, store.RunFilter{ChainID: ch.ID, NodeID: "n1", Limit: 5, Before: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range p.Runs {
			got = append(got, r.ID)
		}
		if p.Older == "" {
			break
		}
		cursor = p.Older
	}
	if !reflect.DeepEqual(got, want) || pages != 3 {
		t.Fatalf("runs that reached n1, %d pages:\n%v\nwant\n%v", pages, got, want)
	}
	if p, _ := db.ListRunsPage(ctx, store.RunFilter{ChainID: ch.ID, NodeID: "nope"}); len(p.Runs) != 0 {
		t.Fatalf("a node no run reached: %d runs", len(p.Runs))
	}
	// n0, which every run reached: the chain filter still applies
	if p, _ := db.ListRunsPage(ctx, store.RunFilter{ChainID: other.ID, NodeID: "n0", Limit: 100}); len(p.Runs) != 6 {
		t.Fatalf("runs of the other chain that reached n0: %d", len(p.Runs))
	}
}
