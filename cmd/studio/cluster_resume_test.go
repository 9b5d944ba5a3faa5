package main

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// A cancelled run resumed through the API of a cluster: of two resumes
// sent at once one is accepted and the other refused (422 chain_resume),
// exactly one job continues the run, and the run completes without the
// node that finished before the cancel running again.
func TestClusterResumeCancelledRun(t *testing.T) {
	api, ws, _, db := failCluster(t, 1)
	doc := saveChain(t, api, slowChain("slow-resume", 3, 400))
	runID := startChainRun(t, api, doc, map[string]any{})
	api.waitStatusActive(t, runID, "running")
	waitNodeEntries(t, db, runID, 1) // s0 finished and is checkpointed
	if code, m := api.do(t, "POST", "/v1/runs/"+runID+"/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %v", code, m)
	}
	api.waitStatusActive(t, runID, "cancelled")

	codes := make([]int, 2)
	bodies := make([]map[string]any, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], bodies[i], errs[i] = postJSON(api.url+"/v1/runs/"+runID+"/resume", map[string]any{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(codes)
	if codes[0] != 200 || codes[1] != 422 {
		t.Fatalf("two resumes at once answered %v (%v), want one 200 and one 422", codes, bodies)
	}
	api.waitStatusActive(t, runID, "completed")

	var resumeJobs int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE args->>'run_id' = $1 AND args->>'kind' = 'resume'`, runID).Scan(&resumeJobs); err != nil {
		t.Fatal(err)
	}
	if resumeJobs != 1 {
		t.Fatalf("%d resume jobs, want 1", resumeJobs)
	}
	var s0 int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM checkpoints WHERE run_id = $1 AND kind = 'node' AND node_id = 's0'`, runID).Scan(&s0); err != nil {
		t.Fatal(err)
	}
	if s0 != 1 {
		t.Fatalf("node s0 has %d entries, want 1 (not run again by the resume)\n%s", s0, ws[0].logs())
	}
}
