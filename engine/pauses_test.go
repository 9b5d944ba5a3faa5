package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/tool"
)

// askTool pauses for items with ask set (prompt: the item's name), returns
// the answer once resumed, and counts the items it finished without asking.
func askTool(ran *atomic.Int64) func(*engine.Options) {
	return func(o *engine.Options) {
		o.Registry.Register("maybe_ask", func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
			if v, ok := tool.Resume(ctx); ok {
				return map[string]any{"name": in["name"], "answer": v}, nil
			}
			if in["ask"] == true {
				return nil, tool.Interrupt(fmt.Sprint("about ", in["name"]))
			}
			ran.Add(1)
			return map[string]any{"name": in["name"]}, nil
		})
	}
}

const mapPauseDoc = `{"name":"m","nodes":[
{"node_id":"review","kind":"map","items_path":"input.items","map_node":"body"},
{"node_id":"body","kind":"tool","name":"maybe_ask","input_map":{"name":"item.name","ask":"item.ask"}},
{"node_id":"after","kind":"tool","name":"echo","input_map":{"all":"review.output"}}],
"edges":[{"source":"review","target":"after"}]}`

func mapItems() map[string]any {
	return map[string]any{"items": []any{
		map[string]any{"name": "a", "ask": true}, map[string]any{"name": "b"},
		map[string]any{"name": "c", "ask": true}, map[string]any{"name": "d", "ask": true}}}
}

func pauseIDs(res *engine.Result) string {
	ids := make([]string, len(res.Pending))
	for k, p := range res.Pending {
		ids[k] = p.PauseID
	}
	return strings.Join(ids, ",")
}

// Three map items pause, each with its own id; answered out of order, the
// run stays paused until the last answer, the item that finished is never
// run again, and the map's output keeps the items' order.
func TestPausesInMapItems(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran))
	res := h.start(mapPauseDoc, mapItems())
	wantStatus(t, res, chain.StatusPaused)
	if got := pauseIDs(res); got != "review[0],review[2],review[3]" && len(res.Pending) != 3 {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	for _, p := range res.Pending {
		if p.NodeID != "review" || p.Since.IsZero() || !strings.HasPrefix(fmt.Sprint(p.Prompt), "about ") {
			t.Fatalf("pending %+v", p)
		}
	}
	// No pause named while three wait: 422 naming them.
	var re *engine.ChainResumeError
	if _, err := h.resume(res.RunID, val("x"), nil); !errors.As(err, &re) || !strings.Contains(err.Error(), "review[0]") {
		t.Fatalf("resume without pause_id: %v", err)
	}
	for k, id := range []string{"review[3]", "review[0]"} {
		r2, err := h.resumeAt(res.RunID, id, "ok-"+id)
		if err != nil {
			t.Fatalf("answer %s: %v", id, err)
		}
		wantStatus(t, r2, chain.StatusPaused)
		if n := len(r2.Pending); n != 2-k {
			t.Fatalf("after %s pending = %s", id, pendingJS(r2))
		}
	}
	// A second answer to the same pause: AlreadyResumed, naming it.
	var ae *engine.AlreadyResumedError
	if _, err := h.resumeAt(res.RunID, "review[3]", "again"); !errors.As(err, &ae) || ae.PauseID != "review[3]" {
		t.Fatalf("second answer: %v", err)
	}
	// A pause the run never had: 422.
	if _, err := h.resumeAt(res.RunID, "review[9]", "x"); !errors.As(err, &re) || !strings.Contains(err.Error(), "pending: review[2]") {
		t.Fatalf("unknown pause: %v", err)
	}
	last, err := h.resumeAt(res.RunID, "review[2]", "ok-review[2]")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, last, chain.StatusCompleted)
	want := `[{"answer":"ok-review[0]","name":"a"},{"name":"b"},{"answer":"ok-review[2]","name":"c"},{"answer":"ok-review[3]","name":"d"}]`
	if js(last.Outputs["review"]) != want {
		t.Errorf("review = %s", js(last.Outputs["review"]))
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("item b ran %d times, want 1 (finished items are kept across resumes)", n)
	}
}

// A restart between answers: a new engine on the same checkpoint store
// resumes each remaining pause from the log.
func TestPausesSurviveRestart(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran))
	res := h.start(mapPauseDoc, mapItems())
	if _, err := h.resumeAt(res.RunID, "review[2]", "c!"); err != nil {
		t.Fatal(err)
	}
	h2 := newHarness(t, askTool(&ran), func(o *engine.Options) { o.Checkpointer = h.cp })
	r2, err := h2.resumeAt(res.RunID, "review[0]", "a!")
	if err != nil {
		t.Fatal(err)
	}
	if pauseIDs(r2) != "review[3]" {
		t.Fatalf("pending after restart = %s", pendingJS(r2))
	}
	h3 := newHarness(t, askTool(&ran), func(o *engine.Options) { o.Checkpointer = h.cp })
	if _, err := h3.resumeAt(res.RunID, "review[2]", "late"); !errors.Is(err, engine.ErrAlreadyResumed) {
		t.Fatalf("answer to a pause answered before the restart: %v", err)
	}
	r3, err := h3.resumeAt(res.RunID, "review[3]", "d!")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r3, chain.StatusCompleted)
	if js(r3.Outputs["after"]) != `{"all":[{"answer":"a!","name":"a"},{"name":"b"},{"answer":"c!","name":"c"},{"answer":"d!","name":"d"}]}` {
		t.Errorf("after = %s", js(r3.Outputs["after"]))
	}
	if ran.Load() != 1 {
		t.Errorf("item b ran %d times", ran.Load())
	}
}

// Under continue, a branch that fails while another pauses is collected:
// the parallel node pauses, keeping the {"error": …} entry; on the answer
// the failed branch does not run again and the run ends partial with both
// in declaration order.
func TestPausesKeepACollectedFailure(t *testing.T) {
	t.Parallel()
	var failed atomic.Int64
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran), func(o *engine.Options) {
		o.Registry.Register("fails", func(ctx context.Context, in map[string]any, _ tool.Emitter) (any, error) {
			failed.Add(1)
			return nil, errors.New("no " + fmt.Sprint(in["name"]))
		})
	})
	res := h.start(`{"name":"m","nodes":[
{"node_id":"review","kind":"parallel","branches":["ask","bad"]},
{"node_id":"ask","kind":"tool","name":"maybe_ask","input":{"name":"a","ask":true}},
{"node_id":"bad","kind":"tool","name":"fails","input":{"name":"b"}},
{"node_id":"after","kind":"tool","name":"echo","input_map":{"all":"review.output"}}],
"edges":[{"source":"review","target":"after"}]}`, nil)
	wantStatus(t, res, chain.StatusPaused)
	if pauseIDs(res) != "ask" {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	last, err := h.resumeAt(res.RunID, "ask", "yes")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, last, chain.StatusPartial)
	if js(last.Outputs["after"]) != `{"all":[{"answer":"yes","name":"a"},{"error":"no b"}]}` {
		t.Errorf("after = %s", js(last.Outputs["after"]))
	}
	if n := failed.Load(); n != 1 {
		t.Errorf("the failed branch ran %d times, want 1 (kept across the resume)", n)
	}
}

// Parallel branches pause under their branch node ids.
func TestPausesInParallelBranches(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran))
	doc := `{"name":"p","nodes":[
{"node_id":"fan","kind":"parallel","branches":["legal","money","plain"]},
{"node_id":"legal","kind":"tool","name":"maybe_ask","input":{"name":"legal","ask":true}},
{"node_id":"money","kind":"tool","name":"maybe_ask","input":{"name":"money","ask":true}},
{"node_id":"plain","kind":"tool","name":"maybe_ask","input":{"name":"plain"}}],"edges":[]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusPaused)
	if len(res.Pending) != 2 || !strings.Contains(pauseIDs(res), "legal") || !strings.Contains(pauseIDs(res), "money") {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	r2, err := h.resumeAt(res.RunID, "money", "$")
	if err != nil {
		t.Fatal(err)
	}
	if pauseIDs(r2) != "legal" {
		t.Fatalf("pending = %s", pendingJS(r2))
	}
	r3, err := h.resumeAt(res.RunID, "legal", "§")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r3, chain.StatusCompleted)
	if js(r3.Outputs["fan"]) != `[{"answer":"§","name":"legal"},{"answer":"$","name":"money"},{"name":"plain"}]` {
		t.Errorf("fan = %s", js(r3.Outputs["fan"]))
	}
	if ran.Load() != 1 {
		t.Errorf("plain branch ran %d times", ran.Load())
	}
}

// A skill whose chain pauses twice: the parent lists "<skill>/<inner id>"
// for each, and each answer resumes the sub-chain run.
func TestPausesInSkill(t *testing.T) {
	t.Parallel()
	sub := `{"name":"sub","nodes":[{"node_id":"a","kind":"interrupt","config":{"prompt":"A?"}},{"node_id":"b","kind":"interrupt","config":{"prompt":"B?"}},
{"node_id":"j","kind":"tool","name":"echo","input_map":{"a":"a.output","b":"b.output"}}],
"edges":[{"source":"a","target":"j"},{"source":"b","target":"j"}]}`
	h := newHarness(t)
	h = newHarness(t, func(o *engine.Options) {
		o.Chains = func(ctx context.Context, name string) (*chain.Chain, error) {
			if name != "sub" {
				return nil, fmt.Errorf("no chain %q", name)
			}
			return mustDecode(t, sub), nil
		}
	})
	doc := `{"name":"top","nodes":[{"node_id":"sk","kind":"skill","name":"sub"},{"node_id":"after","kind":"tool","name":"echo"}],
"edges":[{"source":"sk","target":"after"}]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusPaused)
	if pendingJS(res) != `[{"pause_id":"sk/a","node_id":"sk","prompt":"A?"},{"pause_id":"sk/b","node_id":"sk","prompt":"B?"}]` {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	r2, err := h.resumeAt(res.RunID, "sk/b", "yes-b")
	if err != nil {
		t.Fatal(err)
	}
	if pauseIDs(r2) != "sk/a" {
		t.Fatalf("pending = %s", pendingJS(r2))
	}
	var ae *engine.AlreadyResumedError
	if _, err := h.resumeAt(res.RunID, "sk/b", "again"); !errors.As(err, &ae) {
		t.Fatalf("second answer: %v", err)
	}
	r3, err := h.resumeAt(res.RunID, "sk/a", "yes-a")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r3, chain.StatusCompleted)
	if js(r3.FinalOutput) != `{"a":"yes-a","b":"yes-b"}` {
		t.Errorf("final = %s", js(r3.FinalOutput))
	}
}

// Answers to different pauses sent at once all succeed, and the run
// completes once every one is in.
func TestPausesConcurrentAnswers(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran))
	res := h.start(mapPauseDoc, mapItems())
	ids := []string{"review[0]", "review[2]", "review[3]"}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for k, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[k] = h.e.Resume(context.Background(), res.RunID, val(id), nil, engine.ResumeOptions{PauseID: id})
		}()
	}
	wg.Wait()
	for k := range ids {
		if errs[k] != nil {
			t.Fatalf("answer %s: %v", ids[k], errs[k])
		}
	}
	log, err := h.cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if p := engine.PendingPauses(log); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}
	if last := log[len(log)-1]; last.Kind != engine.CheckpointEnd || last.End.Status != chain.StatusCompleted {
		t.Fatalf("run ended %+v", last.End)
	}
}

// A map whose body is a skill: each item's sub-chain pauses under
// "<map>[k]/<inner id>", and each answer resumes that item's sub-chain run.
func TestPausesInSkillInsideMap(t *testing.T) {
	t.Parallel()
	sub := `{"name":"sub","nodes":[{"node_id":"q","kind":"interrupt"}],"edges":[]}`
	h := newHarness(t, func(o *engine.Options) {
		o.Chains = func(ctx context.Context, name string) (*chain.Chain, error) {
			return mustDecode(t, sub), nil
		}
	})
	doc := `{"name":"top","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
{"node_id":"body","kind":"skill","name":"sub"}],"edges":[]}`
	res := h.start(doc, map[string]any{"items": []any{"x", "y"}})
	wantStatus(t, res, chain.StatusPaused)
	if got := pauseIDs(res); got != "m[0]/q,m[1]/q" && got != "m[1]/q,m[0]/q" {
		t.Fatalf("pending = %s", pendingJS(res))
	}
	if _, err := h.resumeAt(res.RunID, "m[1]/q", "Y"); err != nil {
		t.Fatal(err)
	}
	r2, err := h.resumeAt(res.RunID, "m[0]/q", "X")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r2, chain.StatusCompleted)
	if js(r2.Outputs["m"]) != `["X","Y"]` {
		t.Errorf("m = %s", js(r2.Outputs["m"]))
	}
}

// An answer that comes while the run still executes other nodes is handed
// to the running run: the run never stops paused, and Resume returns the
// run's result once it ends.
func TestPausesAnsweredWhileRunning(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"a","nodes":[{"node_id":"ask","kind":"interrupt","config":{"prompt":"now?"}},
{"node_id":"slow","kind":"tool","name":"delay","input":{"ms":400}},
{"node_id":"j","kind":"tool","name":"echo","input_map":{"a":"ask.output","s":"slow.output.ms"}}],
"edges":[{"source":"ask","target":"j"},{"source":"slow","target":"j"}]}`
	done := make(chan *engine.Result, 1)
	go func() {
		res, err := h.e.Run(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, doc)), nil, engine.RunOptions{RunID: "live"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	for k := 0; ; k++ {
		log, _ := h.cp.Load(context.Background(), "live")
		if len(engine.PendingPauses(log)) == 1 {
			break
		}
		if k > 300 {
			t.Fatal("the pause was never logged")
		}
		time.Sleep(time.Millisecond)
	}
	res, err := h.resumeAt("live", "ask", "yes")
	if err != nil {
		t.Fatal(err)
	}
	first := <-done
	wantStatus(t, first, chain.StatusCompleted)
	wantStatus(t, res, chain.StatusCompleted)
	if js(res.FinalOutput) != `{"a":"yes","s":400}` {
		t.Errorf("final = %s", js(res.FinalOutput))
	}
}

// The host counts a run's stored events before the run is held for a
// resume; a leg that ended in between (another pause's answer) stored
// events the count missed. The resumed leg numbers its events after them,
// not after the count: the history stays one gapless sequence.
func TestPausesAnsweredWithAStaleEventCount(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	h := newHarness(t, askTool(&ran))
	res := h.start(mapPauseDoc, mapItems())
	wantStatus(t, res, chain.StatusPaused)
	counted := int64(len(h.sink.Events())) + 1 // what the host counted before the first answer's leg ran
	ctx := context.Background()
	if _, err := h.e.Resume(ctx, res.RunID, val("first"), nil, engine.ResumeOptions{PauseID: "review[3]", NextSeq: counted}); err != nil {
		t.Fatal(err)
	}
	// the second answer was counted at the same moment as the first
	r2, err := h.e.Resume(ctx, res.RunID, val("second"), nil, engine.ResumeOptions{PauseID: "review[0]", NextSeq: counted})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, r2, chain.StatusPaused)
	checkSeq(t, h.sink.Events())
}
