package sqlite

import (
	"context"
	"testing"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
)

// A designer's run with pins (kind pinned) still queued when the studio
// stopped is not queued again at start-up, as a plain run of a saved
// version is: its row does not say that it uses the pins, so it ends
// interrupted_before_start ("start it again") instead of running its
// pinned nodes for real.
func TestRecoveryDoesNotRequeuePinnedRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	ch, err := db.CreateChain(ctx, sampleChain("pinned recovery", 2), "", true)
	if err != nil {
		t.Fatal(err)
	}
	for id, kind := range map[string]string{"plain": store.KindRun, "pins": store.KindPinned} {
		if _, err := db.CreateRun(ctx, store.Run{ID: id, ChainID: ch.ID, ChainVersion: ch.Version, Kind: kind, Status: chain.StatusQueued}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	plain, _ := db.GetRunInfo(ctx, "plain")
	pins, _ := db.GetRunInfo(ctx, "pins")
	if plain.Status != chain.StatusQueued {
		t.Errorf("the plain run is %s, want queued (requeued at start-up)", plain.Status)
	}
	if pins.Status != chain.StatusFailed || pins.Error == nil || pins.Error.Code != store.CodeInterruptedBeforeStart {
		t.Errorf("the pinned run is %s %+v, want failed %s", pins.Status, pins.Error, store.CodeInterruptedBeforeStart)
	}
}
