package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/store/postgres/pgtest"
	"github.com/chainstudio/studio/web/api"
)

// Three serving processes on one PostgreSQL database each run the
// scheduler: an every-minute schedule fires each tick exactly once (one run,
// one River job, one firing row; the losers write nothing), and the runs
// execute. It waits for two real ticks (up to ~2 minutes): by the second
// one every process has read the schedule, so all three race for it.
func TestClusterScheduleFiresOnceAcross3(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the studio and runs three processes on PostgreSQL for two minutes (make test runs it)")
	}
	dsn := pgtest.Schema(t)
	bin := builtStudio(t)
	var ps []*studioProc
	for range 3 {
		p := startStudioDB(t, bin, dsn)
		t.Cleanup(func() {
			if p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		})
		ps = append(ps, p)
	}
	doc := saveChain(t, ps[0], map[string]any{"name": "every minute", "nodes": []any{
		map[string]any{"node_id": "a", "kind": "tool", "name": "echo", "input_map": map[string]any{"who": "input.who"}}}})
	code, sc := ps[1].do(t, "POST", "/v1/chains/"+doc+"/schedules", map[string]any{"cron": "* * * * *", "overlap": "allow", "input": map[string]any{"who": "cron"}})
	if code != 201 {
		t.Fatalf("create schedule: %d %v", code, sc)
	}
	// Meanwhile a webhook created through one process and called through
	// another starts a run that a worker executes.
	code, hook := ps[0].do(t, "POST", "/v1/chains/"+doc+"/hooks", map[string]any{"sync": true, "sync_timeout_ms": 20000})
	if code != 201 {
		t.Fatalf("create hook: %d %v", code, hook)
	}
	body := []byte(`{"who":"hook"}`)
	code, out := ps[2].do(t, "POST", "/v1/hooks/"+hook["id"].(string), json.RawMessage(body),
		api.HookSignatureHeader, api.SignHook(hook["secret"].(string), time.Now(), body))
	if code != 200 || out["status"] != "completed" || out["final_output"].(map[string]any)["who"] != "hook" {
		t.Fatalf("signed call to the hook: %d %v", code, out)
	}
	if _, r := ps[1].do(t, "GET", "/v1/runs/"+out["run_id"].(string), nil); r["started_by"] != "webhook" || r["trigger_id"] != hook["id"] {
		t.Fatalf("the hook's run: %v", r)
	}
	code, _ = ps[1].do(t, "POST", "/v1/hooks/"+hook["id"].(string), json.RawMessage(body), api.HookSignatureHeader, api.SignHook("wrong", time.Now(), body))
	if code != 401 {
		t.Fatalf("wrongly signed call: %d", code)
	}

	var firings []any
	deadline := time.Now().Add(150 * time.Second)
	for {
		_, m := ps[2].do(t, "GET", "/v1/chains/"+doc+"/triggers", nil)
		firings = m["schedules"].([]any)[0].(map[string]any)["firings"].([]any)
		if len(firings) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d firings after 150s:\n%s", len(firings), ps[0].logs())
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second) // a late loser would have written by now

	db := pgConnect(t, dsn)
	ctx := context.Background()
	var ticks, fired, runs, jobs int
	if err := db.QueryRow(ctx, `SELECT COUNT(DISTINCT tick), COUNT(*) FROM trigger_firings WHERE trigger_id = $1`, sc["id"]).Scan(&ticks, &fired); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM runs WHERE chain_id = $1 AND trigger_kind = 'schedule' AND trigger_id = $2`, doc, sc["id"]).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'studio_run'`).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	jobs-- // the webhook's run
	if ticks < 2 || fired != ticks || runs != ticks || jobs != ticks {
		t.Fatalf("%d ticks, %d firing rows, %d runs, %d River jobs: want one of each per tick", ticks, fired, runs, jobs)
	}
	won := 0
	for i, p := range ps {
		n := strings.Count(p.logs(), "scheduler: tick fired")
		t.Logf("process %d fired %d tick(s)", i, n)
		won += n
	}
	if won != ticks {
		t.Fatalf("the processes report %d firings for %d ticks", won, ticks)
	}
	for _, f := range firings {
		id := f.(map[string]any)["run_id"].(string)
		var st string
		for range 100 {
			_, r := ps[0].do(t, "GET", "/v1/runs/"+id, nil)
			if st = fmt.Sprint(r["status"]); st == "completed" {
				if r["started_by"] != "schedule" || r["input"].(map[string]any)["who"] != "cron" {
					t.Fatalf("run %s: %v", id, r)
				}
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st != "completed" {
			t.Fatalf("run %s is %s", id, st)
		}
	}
}
