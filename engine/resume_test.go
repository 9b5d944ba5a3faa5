package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

func (h *harness) start(doc string, input map[string]any) *engine.Result {
	h.t.Helper()
	return h.run(doc, input)
}

func (h *harness) resume(id string, v *engine.ResumeValue, state map[string]any) (*engine.Result, error) {
	h.t.Helper()
	res, err := h.e.Resume(context.Background(), id, v, state, engine.ResumeOptions{})
	if err == nil {
		checkSeq(h.t, h.sink.Events())
	}
	return res, err
}

func val(v any) *engine.ResumeValue { return &engine.ResumeValue{Value: v} }

// resumeAt answers one pause of a run.
func (h *harness) resumeAt(id, pause string, v any) (*engine.Result, error) {
	h.t.Helper()
	return h.e.Resume(context.Background(), id, val(v), nil, engine.ResumeOptions{PauseID: pause})
}

// pendingJS is res.Pending as JSON without the times.
func pendingJS(res *engine.Result) string {
	p := append([]engine.Pending(nil), res.Pending...)
	for k := range p {
		p[k].Since = time.Time{}
	}
	return js(p)
}

const approvalDoc = `{"name":"a","nodes":[{"node_id":"r","kind":"tool","name":"echo"},
{"node_id":"ask","kind":"interrupt","config":{"prompt":"approve?"}},
{"node_id":"other","kind":"tool","name":"delay","input":{"ms":30}},
{"node_id":"after","kind":"tool","name":"echo","input_map":{"answer":"ask.output","other":"other.output.ms"}}],
"edges":[{"source":"r","target":"ask"},{"source":"r","target":"other"},{"source":"ask","target":"after"},{"source":"other","target":"after"}]}`

func TestResumeInterrupt(t *testing.T) {
	t.Parallel()
	t.Run("interrupt_node_pauses_with_prompt_other_branches_finish_first", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		wantStatus(t, res, chain.StatusPaused)
		if pendingJS(res) != `[{"pause_id":"ask","node_id":"ask","prompt":"approve?"}]` {
			t.Errorf("pending = %s", js(res.Pending))
		}
		wantNodes(t, res, map[string]string{"other": "done", "ask": "paused"})
		lp := lastPhase(h.sink.Events())
		if lp["ask"] != engine.PhasePaused || lp["other"] != engine.PhaseDone {
			t.Errorf("phases = %v", lp)
		}
	})
	t.Run("interrupt_tool_pauses_and_returns_the_resume_value", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"a","nodes":[{"node_id":"ask","kind":"tool","name":"interrupt","input":{"prompt":"ok?"}},{"node_id":"n","kind":"tool","name":"echo"}],"edges":[{"source":"ask","target":"n"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusPaused)
		if pendingJS(res) != `[{"pause_id":"ask","node_id":"ask","prompt":"ok?"}]` {
			t.Errorf("pending = %s", js(res.Pending))
		}
		res2, err := h.resume(res.RunID, val(map[string]any{"yes": true}), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if js(res2.FinalOutput) != `{"yes":true}` {
			t.Errorf("final = %s", js(res2.FinalOutput))
		}
	})
	t.Run("paused_with_value_reruns_node_with_resume_and_completes", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		res2, err := h.resume(res.RunID, val("yes"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if js(res2.Outputs["after"]) != `{"answer":"yes","other":30}` {
			t.Errorf("after = %s", js(res2.Outputs["after"]))
		}
		if h.cnt.get("r") != 0 || len(res2.Pending) != 0 {
			t.Errorf("pending = %s", js(res2.Pending))
		}
		// other ran once, before the pause
		n := 0
		for _, e := range h.sink.Events() {
			if e.NodeID == "other" && e.Phase == engine.PhaseStart {
				n++
			}
		}
		if n != 1 {
			t.Errorf("other started %d times", n)
		}
	})
	t.Run("resume_scope_is_visible_to_the_node", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"a","nodes":[{"node_id":"ask","kind":"interrupt","input_map":{"seen":"resume"}},{"node_id":"n","kind":"tool","name":"echo","input_map":{"v":"ask.output"}}],"edges":[{"source":"ask","target":"n"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusPaused)
		res2, err := h.resume(res.RunID, val(42.0), nil)
		if err != nil {
			t.Fatal(err)
		}
		if js(res2.Nodes["ask"].Input) != `{"seen":42}` || js(res2.FinalOutput) != `{"v":42}` {
			t.Errorf("ask input %s, final %s", js(res2.Nodes["ask"].Input), js(res2.FinalOutput))
		}
	})
	t.Run("event_seq_continues_after_resume", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		before := len(h.sink.Events())
		if _, err := h.resume(res.RunID, val("yes"), nil); err != nil {
			t.Fatal(err)
		}
		evs := h.sink.Events()
		checkSeq(t, evs)
		if evs[before].Seq != int64(before)+1 {
			t.Errorf("first seq after resume = %d, want %d", evs[before].Seq, before+1)
		}
	})
	t.Run("event_seq_next_seq_option", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		before := len(h.sink.Events())
		if _, err := h.e.Resume(context.Background(), res.RunID, val("yes"), nil, engine.ResumeOptions{NextSeq: int64(before) + 1}); err != nil {
			t.Fatal(err)
		}
		checkSeq(t, h.sink.Events())
	})
}

func TestResumeContract(t *testing.T) {
	t.Parallel()
	t.Run("paused_without_value_is_ChainResumeError_and_ChainCheckpointError", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		_, err := h.resume(res.RunID, nil, nil)
		var re *engine.ChainResumeError
		var ce *engine.ChainCheckpointError
		if !errors.As(err, &re) || !errors.As(err, &ce) {
			t.Fatalf("err = %#v", err)
		}
		// the pause is still there
		if _, err := h.resume(res.RunID, val("ok"), nil); err != nil {
			t.Errorf("resume after a refused resume: %v", err)
		}
	})
	t.Run("not_paused_with_value_is_AlreadyResumed", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, nil)
		_, err := h.resume(res.RunID, val(1.0), nil)
		var ar *engine.AlreadyResumedError
		if !errors.Is(err, engine.ErrAlreadyResumed) || !errors.As(err, &ar) {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("resumed_twice_is_AlreadyResumed", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		if _, err := h.resume(res.RunID, val("a"), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := h.resume(res.RunID, val("b"), nil); !errors.Is(err, engine.ErrAlreadyResumed) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unknown_run_is_ChainCheckpointError", func(t *testing.T) {
		h := newHarness(t)
		for _, v := range []*engine.ResumeValue{nil, val(1.0)} {
			_, err := h.resume("nope", v, nil)
			var ce *engine.ChainCheckpointError
			if !errors.As(err, &ce) {
				t.Errorf("value %v: err = %#v", v, err)
			}
		}
	})
	t.Run("failed_resume_reruns_failed_node_with_modified_state_keeping_outputs", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"f","nodes":[{"node_id":"up","kind":"tool","name":"count","input":{"u":1}},{"node_id":"f","kind":"tool","name":"flagfail","input_map":{"fix":"state.fix"}},{"node_id":"down","kind":"tool","name":"count"}],
		"edges":[{"source":"up","target":"f"},{"source":"f","target":"down"}]}`
		h.flag.Store(true)
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusFailed)
		h.flag.Store(false)
		res2, err := h.resume(res.RunID, nil, map[string]any{"fix": "yes"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if h.cnt.get("up") != 1 || h.cnt.get("down") != 1 {
			t.Errorf("up ran %d times, down %d", h.cnt.get("up"), h.cnt.get("down"))
		}
		if js(res2.Outputs["f"]) != `{"in":{"fix":"yes"},"ok":true}` || js(res2.Outputs["up"]) != `{"u":1}` {
			t.Errorf("outputs = %s", js(res2.Outputs))
		}
		if res2.State["fix"] != "yes" {
			t.Errorf("state = %s", js(res2.State))
		}
	})
	t.Run("failed_resume_modified_state_fixes_a_strict_read", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"f","strict_conditions":true,"nodes":[{"node_id":"up","kind":"tool","name":"count","input":{"u":1}},{"node_id":"f","kind":"tool","name":"count","input_map":{"ok":"state.ok"}},{"node_id":"down","kind":"tool","name":"echo"}],
		"edges":[{"source":"up","target":"f"},{"source":"f","target":"down"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusFailed)
		res2, err := h.resume(res.RunID, nil, map[string]any{"ok": true})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if h.cnt.get("up") != 1 || js(res2.FinalOutput) != `{"ok":true}` {
			t.Errorf("up ran %d times, final %s", h.cnt.get("up"), js(res2.FinalOutput))
		}
	})
	t.Run("completed_without_value_is_ChainResumeError", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, nil)
		_, err := h.resume(res.RunID, nil, nil)
		var re *engine.ChainResumeError
		if !errors.As(err, &re) {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("concurrent_resumes_exactly_one_wins", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(approvalDoc, nil)
		var wg sync.WaitGroup
		errs := make([]error, 20)
		for k := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[k] = h.e.Resume(context.Background(), res.RunID, val(k), nil, engine.ResumeOptions{})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, engine.ErrAlreadyResumed):
			default:
				t.Errorf("err = %v", err)
			}
		}
		if ok != 1 {
			t.Errorf("%d resumes succeeded", ok)
		}
		checkSeq(t, h.sink.Events())
	})
}

func TestResumeLoops(t *testing.T) {
	t.Parallel()
	t.Run("loop_counters_survive_pause_and_resume_and_reinterrupt_pauses_again", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"l","nodes":[{"node_id":"ask","kind":"interrupt","config":{"prompt":"more?"}},{"node_id":"exit","kind":"tool","name":"echo"}],
		"edges":[{"id":"again","source":"ask","target":"ask","condition":"output == 'more'","max_iterations":2,"on_max_reached":"continue"},{"source":"ask","target":"exit"}]}`
		res := h.start(doc, nil)
		pauses := 0
		for res.Status == chain.StatusPaused && pauses < 6 {
			pauses++
			var err error
			if res, err = h.resume(res.RunID, val("more"), nil); err != nil {
				t.Fatal(err)
			}
		}
		wantStatus(t, res, chain.StatusCompleted)
		if pauses != 3 {
			t.Errorf("paused %d times, want 3 (1 + max_iterations 2)", pauses)
		}
		if js(res.FinalOutput) != `{"value":"more"}` {
			t.Errorf("final = %s", js(res.FinalOutput))
		}
	})
	t.Run("loop_cap_error_applies_across_resume", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"l","nodes":[{"node_id":"ask","kind":"interrupt"},{"node_id":"exit","kind":"tool","name":"echo"}],
		"edges":[{"id":"again","source":"ask","target":"ask","condition":"output == 'more'","max_iterations":1},{"source":"ask","target":"exit"}]}`
		res := h.start(doc, nil)
		res, _ = h.resume(res.RunID, val("more"), nil)
		wantStatus(t, res, chain.StatusPaused)
		res, _ = h.resume(res.RunID, val("more"), nil)
		wantStatus(t, res, chain.StatusFailed)
		if res.Error.Code != engine.CodeCycle {
			t.Errorf("error = %s", js(res.Error))
		}
	})
}

func TestRerunFrom(t *testing.T) {
	t.Parallel()
	t.Run("upstream_outputs_reused_from_node_and_downstream_execute", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"count","input":{"v":1}},{"node_id":"b","kind":"tool","name":"count"},{"node_id":"c","kind":"tool","name":"count"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusCompleted)
		res2, err := h.e.RerunFrom(context.Background(), res.RunID, "b", nil, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		if res2.RunID == res.RunID {
			t.Errorf("rerun reused the run id")
		}
		if h.cnt.get("a") != 1 || h.cnt.get("b") != 2 || h.cnt.get("c") != 2 {
			t.Errorf("counts a=%d b=%d c=%d", h.cnt.get("a"), h.cnt.get("b"), h.cnt.get("c"))
		}
		if js(res2.FinalOutput) != `{"v":1}` {
			t.Errorf("final = %s", js(res2.FinalOutput))
		}
		checkSeq(t, h.sink.Events())
	})
	t.Run("unknown_node_is_ChainCheckpointError", func(t *testing.T) {
		h := newHarness(t)
		res := h.start(`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`, nil)
		_, err := h.e.RerunFrom(context.Background(), res.RunID, "zzz", nil, engine.RunOptions{})
		var ce *engine.ChainCheckpointError
		if !errors.As(err, &ce) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestResumeMore(t *testing.T) {
	t.Parallel()
	t.Run("failed_resume_reruns_siblings_cancelled_by_the_abort", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"f","nodes":[{"node_id":"r","kind":"tool","name":"count"},{"node_id":"bad","kind":"tool","name":"flagfail"},{"node_id":"slow","kind":"tool","name":"delay","input":{"ms":150}},
		{"node_id":"j","kind":"tool","name":"echo"}],
		"edges":[{"source":"r","target":"bad"},{"source":"r","target":"slow"},{"source":"bad","target":"j"},{"source":"slow","target":"j"}]}`
		h.flag.Store(true)
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusFailed)
		wantNodes(t, res, map[string]string{"bad": "error", "slow": "error/upstream_stopped", "j": "skip/upstream_stopped"})
		h.flag.Store(false)
		res2, err := h.resume(res.RunID, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		wantNodes(t, res2, map[string]string{"bad": "done", "slow": "done", "j": "done"})
		if h.cnt.get("r") != 1 {
			t.Errorf("r ran %d times", h.cnt.get("r"))
		}
		everyNodeEnded(t, mustDecode(t, doc), h.sink.Events())
	})
	t.Run("sequential_dispatch_resumes_after_an_interrupting_link", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"s","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all","dispatch":"sequential"},
		{"node_id":"x","kind":"interrupt"},{"node_id":"y","kind":"tool","name":"count"},{"node_id":"z","kind":"tool","name":"count"}],
		"edges":[{"source":"a","target":"x"},{"source":"a","target":"y","condition":"{{ steps.x == 'go' }}"},{"source":"a","target":"z","condition":"{{ steps.x == 'stop' }}"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusPaused)
		if h.cnt.get("y")+h.cnt.get("z") != 0 {
			t.Fatalf("links after x ran before x finished")
		}
		res2, err := h.resume(res.RunID, val("go"), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, res2, chain.StatusCompleted)
		wantNodes(t, res2, map[string]string{"x": "done", "y": "done", "z": "skip/condition_false"})
	})
	t.Run("timed_out_run_resumes_and_reruns_the_stuck_node", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"t","timeout":0.1,"nodes":[{"node_id":"a","kind":"tool","name":"count"},{"node_id":"b","kind":"tool","name":"delay","input":{"ms":5000}},{"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
		res := h.start(doc, nil)
		wantStatus(t, res, chain.StatusTimedOut)
		wantNodes(t, res, map[string]string{"a": "done", "b": "error/upstream_stopped", "c": "skip/upstream_stopped"})
		everyNodeEnded(t, mustDecode(t, doc), h.sink.Events())
	})
}

func TestResumeTwoInterrupts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"two","nodes":[{"node_id":"r","kind":"tool","name":"echo"},{"node_id":"i1","kind":"interrupt","config":{"prompt":"one"}},{"node_id":"i2","kind":"interrupt","config":{"prompt":"two"}},
	{"node_id":"j","kind":"tool","name":"echo"}],
	"edges":[{"source":"r","target":"i1"},{"source":"r","target":"i2"},{"source":"i1","target":"j"},{"source":"i2","target":"j"}]}`
	res := h.start(doc, nil)
	wantStatus(t, res, chain.StatusPaused)
	if len(res.Pending) != 2 {
		t.Fatalf("pending = %s", js(res.Pending))
	}
	// Two pending: a resume must name one (422 naming both).
	var re *engine.ChainResumeError
	if _, err := h.resume(res.RunID, val("a"), nil); !errors.As(err, &re) || !strings.Contains(err.Error(), "pending: i1, i2") {
		t.Fatalf("resume without pause_id: %v", err)
	}
	res, err := h.resumeAt(res.RunID, "i1", "a")
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusPaused)
	if len(res.Pending) != 1 {
		t.Fatalf("pending after one resume = %s", js(res.Pending))
	}
	res, err = h.resume(res.RunID, val("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	if js(res.FinalOutput) != `{"i1":"a","i2":"b"}` {
		t.Errorf("final = %s", js(res.FinalOutput))
	}
}

// A map whose handled item failure made the run partial keeps it partial
// when the run pauses after it and is resumed: the checkpoint says so.
func TestResumeKeepsAPartialMapPartial(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"a","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body","parallel_failure_mode":"any_success"},
	{"node_id":"body","kind":"tool","name":"delay","input_map":{"ms":"item"}},
	{"node_id":"ask","kind":"interrupt"}],"edges":[{"source":"m","target":"ask"}]}`
	res := h.start(doc, map[string]any{"xs": []any{1.0, -5.0}})
	wantStatus(t, res, chain.StatusPaused)
	res2, err := h.resume(res.RunID, val("ok"), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusPartial)
}

// A resume accepted in one process (StartResume, then released) is
// continued by another (ContinueResume) from the log alone; a second
// continuation of the same acceptance is refused.
func TestContinueResumeFromLog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.start(approvalDoc, nil)
	wantStatus(t, res, chain.StatusPaused)
	before := len(h.sink.Events())
	ctx := context.Background()
	if _, err := h.e.ContinueResume(ctx, res.RunID, nil, engine.ResumeOptions{}); err == nil {
		t.Fatal("a paused run with no accepted resume was continued")
	}
	rs, err := h.e.StartResume(ctx, res.RunID, val("yes"), nil, engine.ResumeOptions{NextSeq: int64(before) + 1})
	if err != nil {
		t.Fatal(err)
	}
	rs.Release()
	res2, err := h.e.ContinueResume(ctx, res.RunID, nil, engine.ResumeOptions{NextSeq: int64(before) + 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	if js(res2.Outputs["after"]) != `{"answer":"yes","other":30}` {
		t.Errorf("after = %s", js(res2.Outputs["after"]))
	}
	checkSeq(t, h.sink.Events())
	var cre *engine.ChainResumeError
	if _, err := h.e.ContinueResume(ctx, res.RunID, nil, engine.ResumeOptions{}); !errors.As(err, &cre) {
		t.Fatalf("a second continuation: %v, want a *ChainResumeError", err)
	}
}

// With ResumeOptions.Claim the host claims and hands the record on;
// StartResume writes nothing, and ContinueResume with the record writes
// the resume entry and continues, once.
func TestContinueResumeHandedRecord(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.start(approvalDoc, nil)
	wantStatus(t, res, chain.StatusPaused)
	ctx := context.Background()
	logBefore, _ := h.e.Checkpointer().Load(ctx, res.RunID)
	var handed engine.ResumeRecord
	rs, err := h.e.StartResume(ctx, res.RunID, val("yes"), nil, engine.ResumeOptions{Claim: func(ctx context.Context, runID string, rec engine.ResumeRecord) (string, error) {
		node, err := h.e.Checkpointer().ClaimInterrupt(ctx, runID, "")
		rec.NodeID = node
		handed = rec
		return node, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs.Release()
	if logAfter, _ := h.e.Checkpointer().Load(ctx, res.RunID); len(logAfter) != len(logBefore) {
		t.Fatalf("StartResume with Claim wrote %d entries", len(logAfter)-len(logBefore))
	}
	if handed.NodeID != "ask" || handed.Value != "yes" {
		t.Fatalf("handed record %+v", handed)
	}
	res2, err := h.e.ContinueResume(ctx, res.RunID, &handed, engine.ResumeOptions{NextSeq: int64(len(h.sink.Events())) + 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	checkSeq(t, h.sink.Events())
	if _, err := h.e.ContinueResume(ctx, res.RunID, &handed, engine.ResumeOptions{}); err == nil {
		t.Fatal("the handed record continued the run twice")
	}
}
