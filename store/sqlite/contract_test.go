package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/storetest"
)

// The helpers the contract suite and these tests share.
var (
	sampleChain   = storetest.SampleChain
	jsonEqual     = storetest.JSONEqual
	mkEvents      = storetest.Events
	checkpointLog = storetest.CheckpointLog
	testTools     = storetest.Tools
	linearChain   = storetest.LinearChain
)

// TestContract: the SQLite backend passes the contract every backend passes.
func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Backend {
		db, _ := openTest(t)
		return db
	})
}

// TestPruneRunsLeavesNoRows: a prune deletes every row of the runs it prunes,
// in every table, and leaves the file consistent.
func TestPruneRunsLeavesNoRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openTest(t)
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		if _, err := db.CreateRun(ctx, store.Run{ID: id, Status: chain.StatusCompleted, Started: time.Now().Add(-48 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := db.AppendEvents(ctx, mkEvents(id, 1, 3)); err != nil {
			t.Fatal(err)
		}
		for _, b := range checkpointLog(id)[:2] { // paused: one pending interrupt
			if err := db.Append(ctx, id, b); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Append(ctx, id, []engine.Checkpoint{{RunID: id, Kind: engine.CheckpointEnd, End: &engine.EndRecord{Status: chain.StatusCompleted}}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := db.PruneRuns(ctx, store.Retention{OlderThan: time.Hour}); err != nil || n != 3 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	for _, tbl := range []string{"runs", "event_batches", "checkpoints", "run_interrupts"} {
		var c int
		if err := db.r.QueryRow(`SELECT COUNT(*) FROM ` + tbl).Scan(&c); err != nil {
			t.Fatal(err)
		}
		if c != 0 {
			t.Fatalf("%s: %d rows of pruned runs left", tbl, c)
		}
	}
	integrityCheck(t, db)
}
