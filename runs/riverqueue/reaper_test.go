package riverqueue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// The reaper takes over exactly the runs whose worker is gone: lease
// passed and newest job still marked running since more than a TTL. Each
// gets a new epoch and a takeover job with its task, once; a run with a
// live lease, or whose job was fetched a moment ago, is left alone; while
// another process holds the round's lock, this one does nothing.
func TestReaperTakesOverExpiredRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	q, err := New(db, Options{LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// dead: its worker took it and died; live: its worker renews; fresh:
	// fetched just now, not taken yet.
	for _, id := range []string{"dead", "live", "fresh"} {
		run := store.Run{ID: id, ChainID: "c1", ChainVersion: 3, Kind: store.KindRun, Input: map[string]any{}, Started: time.Now()}
		if err := q.Create(ctx, run, runs.Task{RunID: id, Kind: store.KindRun, ChainID: "c1", ChainVersion: 3}); err != nil {
			t.Fatal(err)
		}
		ago := "1 minute"
		if id == "fresh" {
			ago = "0 seconds"
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - $2::interval WHERE args->>'run_id' = $1`, id, ago); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.TakeRun(ctx, "dead", "gone", time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.TakeRun(ctx, "live", "alive", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)

	// Another process holds this round's lock: nothing here.
	other, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, hashtext(current_schema()))`, reaperLock); err != nil {
		t.Fatal(err)
	}
	if n, err := q.reapOnce(ctx); err != nil || n != 0 {
		t.Fatalf("while another reaper holds the round: %d, %v", n, err)
	}
	other.Rollback(ctx)

	if n, err := q.reapOnce(ctx); err != nil || n != 1 {
		t.Fatalf("reap: %d runs, %v; want 1 (dead)", n, err)
	}
	var epoch int64
	var owner *string
	if err := db.Pool().QueryRow(ctx, `SELECT epoch, owner FROM runs WHERE id = 'dead'`).Scan(&epoch, &owner); err != nil {
		t.Fatal(err)
	}
	if epoch != 2 || owner != nil {
		t.Fatalf("the dead run after the takeover: epoch %d owner %v, want 2 and none (its old owner fenced out)", epoch, owner)
	}
	var args []byte
	var state string
	if err := db.Pool().QueryRow(ctx, `SELECT args, state FROM river_job WHERE args->>'run_id' = 'dead' ORDER BY id DESC LIMIT 1`).Scan(&args, &state); err != nil {
		t.Fatal(err)
	}
	var task runs.Task
	if err := json.Unmarshal(args, &task); err != nil {
		t.Fatal(err)
	}
	if state != "available" || !task.Takeover || task.Kind != store.KindRun || task.ChainID != "c1" || task.ChainVersion != 3 {
		t.Fatalf("the takeover job: %s %+v", state, task)
	}
	for _, id := range []string{"live", "fresh"} {
		var jobs int
		db.Pool().QueryRow(ctx, `SELECT count(*) FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&jobs)
		if jobs != 1 {
			t.Errorf("run %s has %d jobs, want its own only", id, jobs)
		}
	}
	// Its takeover job waits: the run is not taken over twice.
	if n, err := q.reapOnce(ctx); err != nil || n != 0 {
		t.Fatalf("a second round: %d, %v; want nothing", n, err)
	}
	// A cancel of the running run sets its flag for the heartbeat.
	if _, err := q.Cancel(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	if asked, err := db.RenewRun(ctx, "live", 1, time.Minute); err != nil || !asked {
		t.Fatalf("the live run's heartbeat after a cancel: %v, %v", asked, err)
	}
	if info, _ := db.GetRunInfo(ctx, "live"); info.Status != chain.StatusRunning {
		t.Fatalf("a cancelled running run is %s before its worker stops it", info.Status)
	}
}
