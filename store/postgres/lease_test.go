package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/store/storetest"
)

// twoProcesses opens two stores on one schema: two studio processes.
func twoProcesses(t *testing.T) (a, b *DB) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	var err error
	if a, err = Open(ctx, dsn, Options{MaxConns: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = Open(ctx, dsn, Options{MaxConns: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}

func bodiesOf(t *testing.T, evs []engine.Event) []string {
	t.Helper()
	out := make([]string, len(evs))
	for i := range evs {
		b, err := json.Marshal(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

func nodeEntry(id string, seq int64) []engine.Checkpoint {
	t0 := time.Now().UTC()
	return []engine.Checkpoint{{RunID: "r", Kind: engine.CheckpointNode, EventSeq: seq, Time: t0, Node: &engine.NodeRecord{
		NodeID: id, Status: engine.PhaseDone, Output: id, Attempts: 1, Started: t0, Ended: t0}}}
}

// Process a owns run r; process b takes it over. From then on every write
// of a's (a node entry on the one-statement path, an end entry on the
// transaction path, events direct and through the event writer) is refused
// with a lease-lost error, a hears it once, and nothing of those writes is
// stored, while b's writes and another run's events in a's same batch go in.
func TestStaleEpochWritesRefused(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx := context.Background()
	if _, err := a.CreateRun(ctx, store.Run{ID: "r", Status: chain.StatusQueued}); err != nil {
		t.Fatal(err)
	}
	var lost atomic.Int32
	la, err := a.TakeRun(ctx, "r", "a", time.Minute, func() { lost.Add(1) })
	if err != nil || la == nil || la.Epoch != 1 {
		t.Fatalf("take: %+v, %v; want epoch 1", la, err)
	}
	if info, _ := a.GetRunInfo(ctx, "r"); info.Status != chain.StatusRunning {
		t.Fatalf("a taken queued run is %s, want running", info.Status)
	}
	if err := a.Append(ctx, "r", storetest.CheckpointLog("r")[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "r", nodeEntry("n0", 1)); err != nil { // cached: the one-statement path
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, storetest.Events("r", 1, 3)); err != nil {
		t.Fatal(err)
	}

	lb, err := b.TakeRun(ctx, "r", "b", time.Minute, nil)
	if err != nil || lb.Epoch != 2 {
		t.Fatalf("takeover: %+v, %v; want epoch 2", lb, err)
	}
	if _, err := a.RenewRun(ctx, "r", la.Epoch, time.Minute); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renew of a stale lease: %v, want lease lost", err)
	}
	refused := func(what string, err error) {
		t.Helper()
		var le *store.LeaseLostError
		if !errors.As(err, &le) || le.RunID != "r" || le.Epoch != 1 || store.ErrorCode(err) != store.ELEASELOST {
			t.Fatalf("%s after the takeover: %v, want a lease-lost error of run r, epoch 1", what, err)
		}
	}
	refused("node entry", a.Append(ctx, "r", nodeEntry("n1", 4)))
	end := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, EventSeq: 4, Time: time.Now().UTC(),
		End: &engine.EndRecord{Status: chain.StatusFailed, Error: &engine.RunError{Code: "x", Message: "stale"}}}
	refused("end entry", a.Append(ctx, "r", []engine.Checkpoint{end}))
	refused("events", a.AppendEvents(ctx, storetest.Events("r", 4, 3)))
	// The event writer's batches mix runs: r's events are left out, the
	// other run's go in.
	mixed := append(storetest.Events("r", 4, 3), storetest.Events("other", 1, 2)...)
	bodies := bodiesOf(t, mixed)
	if err := a.WriteEventBatch(ctx, mixed, bodies); err != nil {
		t.Fatalf("a mixed batch: %v", err)
	}
	// A batch of the one run alone takes the one-round-trip path: left out
	// the same way.
	if err := a.WriteEventBatch(ctx, mixed[:3], bodies[:3]); err != nil {
		t.Fatalf("a batch of the lost run alone: %v", err)
	}
	if n := lost.Load(); n != 1 {
		t.Fatalf("the old owner heard of the lost lease %d times, want once", n)
	}

	// Nothing of a's refused writes is stored: the log is start + n0, the
	// run is still running, the events stop at 3.
	log, err := b.Load(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 2 || log[1].Node == nil || log[1].Node.NodeID != "n0" {
		t.Fatalf("the log after refused writes has %d entries, want start + n0", len(log))
	}
	if info, _ := b.GetRunInfo(ctx, "r"); info.Status != chain.StatusRunning {
		t.Fatalf("a refused end entry changed the run to %s", info.Status)
	}
	if n, _ := b.MaxSeq(ctx, "r"); n != 3 {
		t.Fatalf("max seq %d after refused events, want 3", n)
	}
	if n, _ := b.MaxSeq(ctx, "other"); n != 2 {
		t.Fatalf("the other run's events in the mixed batch: max seq %d, want 2", n)
	}
	// The new owner continues: entries and events after what is stored.
	if err := b.Append(ctx, "r", nodeEntry("n1", 4)); err != nil {
		t.Fatal(err)
	}
	// b's own batches (one round trip each): stored after what is there;
	// a seq already stored is refused, nothing of it kept.
	evs := storetest.Events("r", 4, 3)
	if err := b.WriteEventBatch(ctx, evs, bodiesOf(t, evs)); err != nil {
		t.Fatal(err)
	}
	var se *store.EventSeqError
	again := storetest.Events("r", 6, 2)
	if err := b.WriteEventBatch(ctx, again, bodiesOf(t, again)); !errors.As(err, &se) || se.After != 6 {
		t.Fatalf("a stored seq again: %v, want an event seq error after 6", err)
	}
	if n, _ := b.MaxSeq(ctx, "r"); n != 6 {
		t.Fatalf("max seq %d, want 6", n)
	}
	if err := b.ReleaseRun(ctx, "r", lb.Epoch); err != nil {
		t.Fatal(err)
	}
	// a releasing its stale lease changes nothing of b's.
	if err := a.ReleaseRun(ctx, "r", la.Epoch); err != nil {
		t.Fatal(err)
	}
	var owner *string
	var epoch int64
	if err := b.pool.QueryRow(ctx, `SELECT owner, epoch FROM runs WHERE id = 'r'`).Scan(&owner, &epoch); err != nil {
		t.Fatal(err)
	}
	if owner != nil || epoch != 2 {
		t.Fatalf("after release: owner %v epoch %d, want none and 2", owner, epoch)
	}
}

// A run that is neither queued nor running has nothing to take; a cancel
// flag set on a running run reaches its owner's heartbeat; a run whose
// lease is live is not failed by RecoverInterrupted, one whose lease
// expired is.
func TestTakeRenewRecover(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx := context.Background()
	if _, err := a.CreateRun(ctx, store.Run{ID: "done", Status: chain.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if l, err := a.TakeRun(ctx, "done", "a", time.Minute, nil); l != nil || err != nil {
		t.Fatalf("take of a completed run: %+v, %v; want nothing", l, err)
	}
	for _, id := range []string{"live", "dead"} {
		if _, err := a.CreateRun(ctx, store.Run{ID: id}); err != nil {
			t.Fatal(err)
		}
		if err := a.Append(ctx, id, storetest.CheckpointLog(id)[0]); err != nil {
			t.Fatal(err)
		}
	}
	live, err := a.TakeRun(ctx, "live", "a", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.TakeRun(ctx, "dead", "a", time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.WithTx(ctx, func(tx pgx.Tx) error { return a.RequestCancelTx(ctx, tx, "live") }); err != nil {
		t.Fatal(err)
	}
	if asked, err := a.RenewRun(ctx, "live", live.Epoch, time.Minute); err != nil || !asked {
		t.Fatalf("renew after a cancel: %v, %v; want the cancel", asked, err)
	}
	time.Sleep(5 * time.Millisecond)
	n, err := b.RecoverInterrupted(ctx)
	if err != nil || n != 1 {
		t.Fatalf("recover: %d, %v; want 1 (the run whose lease expired)", n, err)
	}
	for id, want := range map[string]chain.RunStatus{"live": chain.StatusRunning, "dead": chain.StatusFailed} {
		if info, _ := b.GetRunInfo(ctx, id); info.Status != want {
			t.Errorf("run %s after recover: %s, want %s", id, info.Status, want)
		}
	}
}

// A milestone append (several statements, pipelined on one connection) that
// fails half-way leaves nothing of itself and no transaction behind: a's
// cached position is stale (b appended meanwhile), so its node + end append
// hits the (run_id, n) key in its second round trip; Append retries from
// the database, and the entries go in after b's, the run row ends, and the
// connection that failed is not reused inside a dead transaction.
func TestPipelinedAppendFailsWhole(t *testing.T) {
	t.Parallel()
	a, b := twoProcesses(t)
	ctx := context.Background()
	if err := a.Append(ctx, "r", storetest.CheckpointLog("r")[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, "r", nodeEntry("n0", 1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(ctx, "r", nodeEntry("n1", 2)); err != nil { // a's cache still says 2
		t.Fatal(err)
	}
	end := engine.Checkpoint{RunID: "r", Kind: engine.CheckpointEnd, EventSeq: 4, Time: time.Now().UTC(), End: &engine.EndRecord{Status: chain.StatusCompleted, NodesRun: 3}}
	if err := a.Append(ctx, "r", append(nodeEntry("n2", 3), end)); err != nil {
		t.Fatalf("append after a stale position: %v", err)
	}
	log, err := b.Load(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, cp := range log {
		k := cp.Kind
		if cp.Node != nil {
			k += ":" + cp.Node.NodeID
		}
		kinds = append(kinds, k)
	}
	if fmt.Sprint(kinds) != "[start node:n0 node:n1 node:n2 end]" {
		t.Fatalf("log %v", kinds)
	}
	if info, _ := b.GetRunInfo(ctx, "r"); info.Status != chain.StatusCompleted {
		t.Fatalf("run is %s after its end entry, want completed", info.Status)
	}
	// Every connection of a's pool is usable (none left inside the failed
	// transaction).
	for i := 0; i < 12; i++ {
		if err := a.Append(ctx, fmt.Sprintf("other-%d", i), storetest.CheckpointLog(fmt.Sprintf("other-%d", i))[0]); err != nil {
			t.Fatalf("append %d after the failed one: %v", i, err)
		}
	}
}
