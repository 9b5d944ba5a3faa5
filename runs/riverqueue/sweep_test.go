package riverqueue

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store/postgres"
	"github.com/chainstudio/studio/store/postgres/pgtest"
)

// handOn answers a run as Service.Resume does with River: the claim and the
// job that continues the run commit together.
type handOn struct {
	eng *engine.Engine
	q   *Queue
}

func (h handOn) ResumePause(ctx context.Context, runID, pauseID string, v *engine.ResumeValue, modified map[string]any) error {
	rs, err := h.eng.StartResume(ctx, runID, v, modified, engine.ResumeOptions{Claim: h.q.Claim, PauseID: pauseID})
	if err != nil {
		return err
	}
	rs.Release()
	return nil
}

// Several processes sweep one PostgreSQL database at once (a fake clock
// past the deadline): the deadline is applied once (one claim, one job whose
// resume record is the timeout), the other sweepers lose quietly, and each
// escalation notification is sent once.
func TestSweepersOnSeveralProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := postgres.Open(ctx, pgtest.Schema(t), postgres.Options{MaxConns: 8})
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
	var hits atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer hook.Close()

	eng := engine.New(engine.Options{Registry: engine.NewRegistry(), Checkpointer: db, Chains: db.ResolveChain})
	doc := &chain.Chain{Name: "timed", Nodes: []chain.Node{{ID: "ask", Kind: chain.KindInterrupt,
		Config: map[string]any{"prompt": "ok?", "timeout": "1h", "escalation": hook.URL}}}}
	const id = "timed-run"
	res, err := eng.Run(ctx, enginetest.PlanOf(eng, doc), nil, engine.RunOptions{RunID: id})
	if err != nil || res.Status != chain.StatusPaused {
		t.Fatalf("run: %v %v", res, err)
	}

	// sweep runs four processes' sweepers at once, at clock time at.
	sweep := func(at time.Time) runs.SweepResult {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var total runs.SweepResult
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sw := runs.NewSweeper(runs.SweeperOptions{Store: db, Runs: handOn{eng, q}, Now: func() time.Time { return at },
					Notify: builtin.GuardedClient(builtin.Options{HTTPAllowPrivate: true})})
				r, err := sw.Sweep(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total.TimedOut += r.TimedOut
				total.Lost += r.Lost
				total.Notified += r.Notified
				mu.Unlock()
			}()
		}
		wg.Wait()
		return total
	}
	if total := sweep(time.Now()); total.Notified != 1 || hits.Load() != 1 || total.TimedOut != 0 {
		t.Fatalf("at the pause: %+v, the webhook heard %d; want one notification", total, hits.Load())
	}
	if total := sweep(time.Now().Add(2 * time.Hour)); total.TimedOut != 1 || total.Notified != 0 {
		t.Fatalf("past the deadline: %+v, want the deadline applied once", total)
	}
	var jobs int
	var args []byte
	if err := db.Pool().QueryRow(ctx, `SELECT count(*), max(args::text) FROM river_job WHERE args->>'run_id' = $1`, id).Scan(&jobs, &args); err != nil {
		t.Fatal(err)
	}
	var task RunArgs
	if err := json.Unmarshal(args, &task); err != nil {
		t.Fatal(err)
	}
	if jobs != 1 || task.Resume == nil || task.Resume.Action != engine.ActionTimeout || task.Resume.By != "deadline" || task.Resume.NodeID != "ask" {
		t.Fatalf("%d jobs, resume %+v", jobs, task.Resume)
	}
	// The worker continues it: no rejected edge, so the node fails "rejected".
	res, err = eng.ContinueResume(ctx, id, task.Resume, engine.ResumeOptions{})
	if err != nil || res.Status != chain.StatusFailed || res.Nodes["ask"].Error == "" {
		t.Fatalf("continued: %+v %v", res, err)
	}
	// A person answering now is late.
	if err := (handOn{eng, q}).ResumePause(ctx, id, "", &engine.ResumeValue{Action: engine.ActionApprove}, nil); engine.CodeOf(err) != engine.CodeAlreadyResumed {
		t.Fatalf("late answer: %v", err)
	}
}
