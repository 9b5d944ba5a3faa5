package riverqueue

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// A resume of a failed run claims the run and inserts the job that
// continues it in one transaction: a failure between the two (a process
// dying there) leaves the run failed and resumable, never running without
// a job; of two claims one wins; the job's worker continues the run from
// its log without calling the nodes that had succeeded.
func TestResumeOfFailedRunIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Schema(t), postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	q, err := New(db, Options{})
	if err != nil {
		t.Fatal(err)
	}

	var calls [3]atomic.Int32
	var broken atomic.Bool
	broken.Store(true)
	reg := engine.NewRegistry()
	reg.Register("step", func(ctx context.Context, input map[string]any, emit tool.Emitter) (any, error) {
		i := int(input["i"].(float64))
		calls[i].Add(1)
		if i == 1 && broken.Load() {
			return nil, errors.New("the service is down")
		}
		return map[string]any{"i": float64(i)}, nil
	})
	eng := engine.New(engine.Options{Registry: reg, Checkpointer: db, Chains: db.ResolveChain})
	doc := &chain.Chain{Name: "flaky", EntryNode: "n0", Nodes: []chain.Node{
		{ID: "n0", Kind: chain.KindTool, Name: "step", Input: map[string]any{"i": 0.0}},
		{ID: "n1", Kind: chain.KindTool, Name: "step", Input: map[string]any{"i": 1.0}},
		{ID: "n2", Kind: chain.KindTool, Name: "step", Input: map[string]any{"i": 2.0}},
	}, Edges: []chain.Edge{{ID: "e1", Source: "n0", Target: "n1"}, {ID: "e2", Source: "n1", Target: "n2"}}}
	const id = "flaky-run"
	if res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: id}); err == nil && res.Status != chain.StatusFailed {
		t.Fatalf("first run: %v, want failed", res.Status)
	}
	state := func() (string, int64, int) {
		t.Helper()
		var status string
		var epoch int64
		var jobs int
		if err := db.Pool().QueryRow(ctx, `SELECT status, epoch, (SELECT count(*) FROM river_job WHERE args->>'run_id' = $1) FROM runs WHERE id = $1`, id).Scan(&status, &epoch, &jobs); err != nil {
			t.Fatal(err)
		}
		return status, epoch, jobs
	}
	claim := engine.ResumeOptions{Claim: q.Claim}

	// The process dies between the claim and the job's insert.
	dead := errors.New("killed between the claim and the job")
	q.beforeInsert = func(string) error { return dead }
	if _, err := eng.StartResume(ctx, id, nil, nil, claim); !errors.Is(err, dead) {
		t.Fatalf("resume with a failure before the job: %v", err)
	}
	if status, epoch, jobs := state(); status != "failed" || epoch != 0 || jobs != 0 {
		t.Fatalf("after the failed resume: status %s epoch %d jobs %d, want failed 0 0 (nothing committed)", status, epoch, jobs)
	}

	// Resumable: the next resume claims it, with its job.
	q.beforeInsert = nil
	rs, err := eng.StartResume(ctx, id, nil, nil, claim)
	if err != nil {
		t.Fatalf("resume after the failure: %v", err)
	}
	rs.Release()
	if status, epoch, jobs := state(); status != "running" || epoch != 1 || jobs != 1 {
		t.Fatalf("after the resume: status %s epoch %d jobs %d, want running 1 1", status, epoch, jobs)
	}
	// A second resume (another instance, say) loses and inserts nothing.
	var re *engine.ChainResumeError
	if _, err := q.Claim(ctx, id, engine.ResumeRecord{}); !errors.As(err, &re) {
		t.Fatalf("a second resume: %v, want a ChainResumeError", err)
	}
	if _, _, jobs := state(); jobs != 1 {
		t.Fatalf("%d jobs after a second resume, want 1", jobs)
	}

	// The job's worker continues the run from its log.
	var args []byte
	if err := db.Pool().QueryRow(ctx, `SELECT args FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&args); err != nil {
		t.Fatal(err)
	}
	var task RunArgs
	if err := json.Unmarshal(args, &task); err != nil {
		t.Fatal(err)
	}
	if task.Task.Kind != store.KindResume || task.Resume == nil || task.Resume.HasValue {
		t.Fatalf("the job's task: %+v", task.Task)
	}
	broken.Store(false)
	res, err := eng.ContinueResume(ctx, id, task.Resume, engine.ResumeOptions{})
	if err != nil || res.Status != chain.StatusCompleted {
		t.Fatalf("the continued run: %v, %v", res, err)
	}
	if a, b, c := calls[0].Load(), calls[1].Load(), calls[2].Load(); a != 1 || b != 2 || c != 1 {
		t.Fatalf("tool calls per node %d %d %d, want 1 2 1 (the succeeded node not again)", a, b, c)
	}
	if _, err := eng.ContinueResume(ctx, id, task.Resume, engine.ResumeOptions{}); err == nil {
		t.Fatal("the same job continued the run twice")
	}
}
