package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

func testCheckpointRoundTrip(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	mem := engine.NewMemoryCheckpointer()
	const id = "cp-run"
	batches := CheckpointLog(id)

	// Unknown run: both refuse the same way.
	for _, cp := range []engine.Checkpointer{mem, db} {
		var ce *engine.ChainCheckpointError
		if _, err := cp.Load(ctx, id); !errors.As(err, &ce) {
			t.Fatalf("%T load unknown: %v", cp, err)
		}
		if _, err := cp.ClaimInterrupt(ctx, id, ""); !errors.As(err, &ce) {
			t.Fatalf("%T claim unknown: %v", cp, err)
		}
	}
	for i, b := range batches {
		for _, cp := range []engine.Checkpointer{mem, db} {
			if err := cp.Append(ctx, id, b); err != nil {
				t.Fatal(err)
			}
		}
		if i == 1 {
			// Paused: the run row says so, and the node shows the prompt.
			r, err := db.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != chain.StatusPaused || len(r.Nodes) != 2 || r.Nodes[1].Status != engine.PhasePaused || r.Nodes[1].Prompt != "approve?" {
				t.Fatalf("paused run %+v", r)
			}
			for _, cp := range []engine.Checkpointer{mem, db} {
				n, err := cp.ClaimInterrupt(ctx, id, "")
				if err != nil || n != "n1" {
					t.Fatalf("%T claim: %q %v", cp, n, err)
				}
				_, err = cp.ClaimInterrupt(ctx, id, "")
				if !errors.Is(err, engine.ErrAlreadyResumed) {
					t.Fatalf("%T second claim: %v", cp, err)
				}
			}
		}
	}
	ml, _ := mem.Load(ctx, id)
	dl, err := db.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	JSONEqual(t, dl, ml)
	if len(dl) != 8 {
		t.Fatalf("%d entries", len(dl))
	}

	r, err := db.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != chain.StatusFailed || r.Error == nil || r.Error.Code != engine.CodeNodeError || r.Error.NodeID != "n2" ||
		r.NodesRun != 3 || r.ChainName != "cp chain" || r.Input["q"] != "x" || r.Ended.IsZero() || r.DurationMS != 3603000 {
		t.Fatalf("ended run %+v", r)
	}
	JSONEqual(t, r.FinalOutput, map[string]any{"last": "yes"})
	JSONEqual(t, r.Outputs, map[string]any{"n0": map[string]any{"echo": "a"}, "n1": "yes"})
	if len(r.Nodes) != 3 {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	n0, n1, n2 := r.Nodes[0], r.Nodes[1], r.Nodes[2]
	if n0.NodeID != "n0" || n0.Status != engine.PhaseDone || n0.Attempts != 1 || !n0.Ended.Equal(n0.Started.Add(time.Second)) {
		t.Fatalf("n0 %+v", n0)
	}
	JSONEqual(t, n0.Input, map[string]any{"text": "a"})
	if n1.Status != engine.PhaseDone || n1.Output != "yes" || n1.Prompt != nil {
		t.Fatalf("n1 %+v", n1)
	}
	if n2.Status != engine.PhaseError || n2.Error != "boom" || n2.Attempts != 3 {
		t.Fatalf("n2 %+v", n2)
	}

	// A listing carries the final output (never the input or the outputs);
	// a brief one leaves it out too and says the same of the run.
	for _, brief := range []bool{false, true} {
		p, err := db.ListRunsPage(ctx, store.RunFilter{Limit: 1000, Brief: brief})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(p.Runs, func(x store.Run) bool { return x.ID == id })
		if i < 0 {
			t.Fatalf("brief %v: run %s not listed", brief, id)
		}
		l := p.Runs[i]
		if l.Status != chain.StatusFailed || l.NodesRun != 3 || l.Error == nil || l.Error.NodeID != "n2" || l.Input != nil || l.Outputs != nil {
			t.Fatalf("brief %v: listed %+v", brief, l)
		}
		if brief {
			if l.FinalOutput != nil {
				t.Fatalf("a brief listing has the final output %v", l.FinalOutput)
			}
		} else {
			JSONEqual(t, l.FinalOutput, map[string]any{"last": "yes"})
		}
	}
}

func testEndClearsInterrupts(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	mem := engine.NewMemoryCheckpointer()
	b := CheckpointLog("r")
	// Two pauses, then the run is cancelled: nothing is left to claim.
	extra := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointPause, Pause: &engine.PauseRecord{NodeID: "n2"}}
	cancel := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, End: &engine.EndRecord{Status: chain.StatusCancelled}}
	for _, cp := range []engine.Checkpointer{mem, db} {
		cp.Append(ctx, "r", b[0])
		cp.Append(ctx, "r", append(append([]engine.Checkpoint{}, b[1][:2]...), extra))
		cp.Append(ctx, "r", []engine.Checkpoint{b[1][2]})
	}
	for _, cp := range []engine.Checkpointer{mem, db} {
		if n, err := cp.ClaimInterrupt(ctx, "r", ""); err != nil || n != "n1" {
			t.Fatalf("%T: oldest pause first: %q %v", cp, n, err)
		}
		cp.Append(ctx, "r", []engine.Checkpoint{cancel})
		if _, err := cp.ClaimInterrupt(ctx, "r", ""); !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("%T: claim after cancel: %v", cp, err)
		}
	}
}

func testClaimInterruptConcurrent(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	b := CheckpointLog("race")
	for _, batch := range b[:2] {
		if err := db.Append(ctx, "race", batch); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, already := 0, 0
	start := make(chan struct{})
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			n, err := db.ClaimInterrupt(ctx, "race", "")
			mu.Lock()
			defer mu.Unlock()
			var ae *engine.AlreadyResumedError
			switch {
			case err == nil && n == "n1":
				wins++
			case errors.As(err, &ae):
				already++
			default:
				t.Errorf("claim: %q %v", n, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 || already != 19 {
		t.Fatalf("wins %d, already resumed %d", wins, already)
	}
}

// testClaimPauseByID: a run with several pauses (map items, a sub-chain's)
// has each claimed by its pause id, once; concurrent claims of different
// pauses all win, and a second claim of one pause is AlreadyResumed.
func testClaimPauseByID(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	mem := engine.NewMemoryCheckpointer()
	b := CheckpointLog("multi")
	ids := []string{"review[0]", "review[1]", "review[2]", "sk/ask"}
	var pauses []engine.Checkpoint
	for k, id := range ids {
		node, slot := "review", k
		rec := &engine.PauseRecord{NodeID: node, PauseID: id, Slot: &slot, Prompt: "p" + id}
		if id == "sk/ask" {
			rec = &engine.PauseRecord{NodeID: "sk", PauseID: id, SubRunID: "sub-1"}
		}
		pauses = append(pauses, engine.Checkpoint{RunID: "multi", Kind: engine.CheckpointPause, Pause: rec})
	}
	for _, cp := range []engine.Checkpointer{mem, db} {
		if err := cp.Append(ctx, "multi", b[0]); err != nil {
			t.Fatal(err)
		}
		if err := cp.Append(ctx, "multi", pauses); err != nil {
			t.Fatal(err)
		}
		// The log keeps what a replay needs: the pause ids, slot and sub-run.
		log, err := cp.Load(ctx, "multi")
		if err != nil {
			t.Fatal(err)
		}
		last := log[len(log)-1].Pause
		if last == nil || last.ID() != "sk/ask" || last.SubRunID != "sub-1" || log[len(log)-2].Pause.Slot == nil || *log[len(log)-2].Pause.Slot != 2 {
			t.Fatalf("%T: logged pause %+v", cp, last)
		}
		if len(engine.PendingPauses(log)) != 4 {
			t.Fatalf("%T: pending %+v", cp, engine.PendingPauses(log))
		}
		var wg sync.WaitGroup
		got := make([]string, len(ids))
		errs := make([]error, len(ids))
		for k := range ids {
			k := len(ids) - 1 - k // out of order
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[k], errs[k] = cp.ClaimInterrupt(ctx, "multi", ids[k])
			}()
		}
		wg.Wait()
		for k := range ids {
			if errs[k] != nil || got[k] != ids[k] {
				t.Fatalf("%T: claim %s: %q %v", cp, ids[k], got[k], errs[k])
			}
		}
		var ae *engine.AlreadyResumedError
		if _, err := cp.ClaimInterrupt(ctx, "multi", "review[1]"); !errors.As(err, &ae) || ae.PauseID != "review[1]" {
			t.Fatalf("%T: second claim of review[1]: %v", cp, err)
		}
		if _, err := cp.ClaimInterrupt(ctx, "multi", ""); !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("%T: claim with all answered: %v", cp, err)
		}
	}
}
