package inspect_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/inspect"
)

// stepText is a why step as one line: where, what, result, rule, outcome,
// reads, note.
func stepText(s inspect.WhyStep) string {
	where := s.Node
	if s.Edge != "" {
		where = s.Edge
	}
	parts := []string{where, s.Kind}
	if s.Handle != "" {
		parts = append(parts, "handle="+s.Handle)
	}
	if s.Result != "" {
		parts = append(parts, s.Result)
	}
	if s.Rule != "" {
		parts = append(parts, s.Rule)
	}
	if s.Outcome != "" {
		parts = append(parts, s.Outcome)
	}
	for _, r := range s.Reads {
		v := r.Value
		if r.Missing {
			v = "missing"
		}
		parts = append(parts, r.Path+"="+v)
	}
	if s.Note != "" {
		parts = append(parts, "("+s.Note+")")
	}
	return strings.Join(parts, " ")
}

func stepsText(ss []inspect.WhyStep) []string {
	out := make([]string, len(ss))
	for k, s := range ss {
		out[k] = stepText(s)
	}
	return out
}

func why(t *testing.T, h *harness, runID, node string) *inspect.WhyAnswer {
	t.Helper()
	log, err := h.cp.Load(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	a, err := inspect.Why(log, node)
	if err != nil {
		t.Fatalf("why %s: %v", node, err)
	}
	return a
}

func wantSteps(t *testing.T, what string, got []inspect.WhyStep, want []string) {
	t.Helper()
	g := stepsText(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %s\n want %s", what, strings.Join(g, "\n      "), strings.Join(want, "\n      "))
	}
}

const echoNode = `"kind":"tool","name":"echo"`

func nodes(ids ...string) string {
	var b []string
	for _, id := range ids {
		b = append(b, `{"node_id":"`+id+`",`+echoNode+`}`)
	}
	return strings.Join(b, ",")
}

// Each rule the engine records (decision.go), read back through Why.
func TestWhyRules(t *testing.T) {
	t.Parallel()
	type ask struct {
		node     string
		status   string
		incoming []string // a node that ran
		causes   []string // a skipped node
		own      []string // the node's own decisions (nil: not checked)
	}
	cases := []struct {
		name  string
		doc   string
		input map[string]any
		asks  []ask
	}{
		{
			name: "first_match",
			doc: `{"name":"r","nodes":[` + nodes("a", "b", "c", "d") + `],"edges":[
				{"source":"a","target":"b","condition":"output.score > ` + "`100`" + `"},
				{"source":"a","target":"c","condition":"output.score > ` + "`5`" + `"},
				{"source":"a","target":"d","condition":"output.score > ` + "`1`" + `"}]}`,
			input: map[string]any{"score": 7.0},
			asks: []ask{
				{node: "c", status: "done", incoming: []string{"a->c edge_condition true first_match fired output.score=7"}},
				{node: "b", status: "skip", causes: []string{"a->b edge_condition false first_match pruned output.score=7"}},
				// an earlier edge matched: never evaluated
				{node: "d", status: "skip", causes: []string{"a->d edge_condition not_evaluated first_match pruned"}},
				{node: "a", status: "done", own: []string{
					"a->b edge_condition false first_match pruned output.score=7",
					"a->c edge_condition true first_match fired output.score=7",
					"a->d edge_condition not_evaluated first_match pruned"}},
			},
		},
		{
			name: "default_no_match",
			doc: `{"name":"r","nodes":[` + nodes("a", "b", "c") + `],"edges":[
				{"source":"a","target":"b","condition":"output.score > ` + "`5`" + `"},
				{"source":"a","target":"c","default":true}]}`,
			input: map[string]any{"score": 3.0},
			asks: []ask{
				{node: "c", status: "done", incoming: []string{"a->c edge default_no_match fired"}},
				{node: "b", status: "skip", causes: []string{"a->b edge_condition false first_match pruned output.score=3"}},
			},
		},
		{
			name: "all_matches",
			doc: `{"name":"r","nodes":[{"node_id":"a",` + echoNode + `,"routing":"all"},` + nodes("b", "c", "d", "e") + `],"edges":[
				{"source":"a","target":"b","condition":"output.n >= ` + "`1`" + `"},
				{"source":"a","target":"c","condition":"output.n >= ` + "`2`" + `"},
				{"source":"a","target":"d","condition":"output.n >= ` + "`5`" + `"},
				{"source":"a","target":"e","default":true}]}`,
			input: map[string]any{"n": 2.0},
			asks: []ask{
				{node: "b", status: "done", incoming: []string{"a->b guard true all_matches fired output.n=2"}},
				{node: "c", status: "done", incoming: []string{"a->c guard true all_matches fired output.n=2"}},
				{node: "d", status: "skip", causes: []string{"a->d guard false all_matches pruned output.n=2"}},
				// a guard matched: the default does not fire
				{node: "e", status: "skip", causes: []string{"a->e edge all_matches pruned"}},
			},
		},
		{
			// an agent chain's links: routing all, one link at a time, each
			// guard evaluated just before its link runs
			name: "agent_guard_sequential",
			doc: `{"name":"r","nodes":[{"node_id":"a",` + echoNode + `,"routing":"all","dispatch":"sequential"},` + nodes("writer", "critic", "fallback") + `],"edges":[
				{"source":"a","target":"writer","label":"writer","condition":"output.topic == 'owls'"},
				{"source":"a","target":"critic","label":"critic","condition":"when.writer && output.strict"},
				{"source":"a","target":"fallback","label":"fallback","default":true}]}`,
			input: map[string]any{"topic": "owls", "strict": false},
			asks: []ask{
				{node: "writer", status: "done", incoming: []string{`a->writer guard true all_matches fired output.topic="owls"`}},
				{node: "critic", status: "skip", causes: []string{"a->critic guard false all_matches pruned when.writer=true output.strict=false"}},
				{node: "fallback", status: "skip", causes: []string{"a->fallback edge all_matches pruned"}},
			},
		},
		{
			name: "pruned_upstream_skipped",
			doc: `{"name":"r","nodes":[` + nodes("a", "b", "c", "d") + `],"edges":[
				{"source":"a","target":"b","condition":"output.go"},
				{"source":"b","target":"c"},{"source":"c","target":"d"}]}`,
			input: map[string]any{"go": false},
			asks: []ask{
				{node: "d", status: "skip", causes: []string{
					"c->d edge pruned_upstream_skipped pruned",
					"b->c edge pruned_upstream_skipped pruned",
					"a->b edge_condition false first_match pruned output.go=false"}},
			},
		},
		{
			name: "join_all_inputs_pruned",
			doc: `{"name":"r","nodes":[{"node_id":"a",` + echoNode + `,"routing":"all"},` + nodes("b", "c", "x", "j") + `],"edges":[
				{"source":"a","target":"b","condition":"output.b"},
				{"source":"a","target":"c","condition":"output.c"},
				{"source":"a","target":"x"},
				{"source":"b","target":"j"},{"source":"c","target":"j"}]}`,
			input: map[string]any{"b": false, "c": false},
			asks: []ask{
				{node: "j", status: "skip", causes: []string{
					"j join join_all_inputs_pruned pruned",
					"b->j edge pruned_upstream_skipped pruned",
					"c->j edge pruned_upstream_skipped pruned",
					"a->b guard false all_matches pruned output.b=false",
					"a->c guard false all_matches pruned output.c=false"}},
				// an unconditional edge needs no record: derived
				{node: "x", status: "done", incoming: []string{"a->x edge unconditional fired"}},
			},
		},
		{
			name: "loop_cap_reached",
			doc: `{"name":"r","nodes":[` + nodes("body", "exit") + `],"edges":[
				{"id":"again","source":"body","target":"body","condition":"output.more","max_iterations":2,"on_max_reached":"continue"},
				{"source":"body","target":"exit","default":true}]}`,
			input: map[string]any{"more": true},
			asks: []ask{
				{node: "body", status: "done", own: []string{
					"again edge_condition true loop_cap_reached pruned output.more=true",
					"body->exit edge default_no_match fired"}},
				{node: "exit", status: "done", incoming: []string{"body->exit edge default_no_match fired"}},
			},
		},
		{
			name: "condition_node_case",
			doc: `{"name":"r","nodes":[` + nodes("a") + `,{"node_id":"route","kind":"condition","cases":[
					{"handle":"high","when":"output.v > ` + "`5`" + `"},{"handle":"mid","when":"output.v > ` + "`2`" + `"},{"handle":"low","when":"output.v >= ` + "`0`" + `"}]},` + nodes("h", "m", "l", "none") + `],
				"edges":[{"source":"a","target":"route"},
				{"source":"route","target":"h","label":"high"},{"source":"route","target":"m","label":"mid"},{"source":"route","target":"l","label":"low"},
				{"source":"route","target":"none","label":"default"}]}`,
			input: map[string]any{"v": 3.0},
			asks: []ask{
				{node: "route", status: "done", incoming: []string{"a->route edge unconditional fired"}, own: []string{
					"route case handle=high false first_match output.v=3",
					"route case handle=mid true first_match output.v=3",
					"route case handle=low not_evaluated first_match",
					"route->h edge handle=high first_match pruned",
					"route->m edge handle=mid first_match fired",
					"route->l edge handle=low first_match pruned",
					"route->none edge handle=default first_match pruned"}},
				{node: "h", status: "skip", causes: []string{"route->h edge handle=high first_match pruned"}},
				{node: "m", status: "done", incoming: []string{"route->m edge handle=mid first_match fired"}},
			},
		},
		{
			name: "branch_condition",
			doc: `{"name":"r","nodes":[{"node_id":"br","kind":"branch","condition":"{{ output.score > 5 }}"},` + nodes("yes", "no") + `],
				"edges":[{"source":"br","target":"yes","label":"true"},{"source":"br","target":"no","label":"false"}]}`,
			input: map[string]any{"score": 9.0},
			asks: []ask{
				{node: "br", status: "done", own: []string{
					"br branch_condition handle=true true first_match output.score=9",
					"br->yes edge handle=true first_match fired",
					"br->no edge handle=false first_match pruned"}},
			},
		},
		{
			name: "router_default_when_no_case_matches",
			doc: `{"name":"r","nodes":[{"node_id":"route","kind":"condition","cases":[{"handle":"x","when":"output.v == 'x'"}]},` + nodes("x", "other") + `],
				"edges":[{"source":"route","target":"x","label":"x"},{"source":"route","target":"other","label":"default"}]}`,
			input: map[string]any{"v": "y"},
			asks: []ask{
				{node: "other", status: "done", incoming: []string{"route->other edge handle=default default_no_match fired"}},
			},
		},
		{
			name: "root",
			doc:  `{"name":"r","nodes":[` + nodes("a") + `]}`,
			asks: []ask{{node: "a", status: "done"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			res := h.run(tc.doc, tc.input)
			if res.Status != chain.StatusCompleted {
				t.Fatalf("status %s: %v", res.Status, res.Error)
			}
			for _, q := range tc.asks {
				a := why(t, h, res.RunID, q.node)
				if a.Status != q.status {
					t.Errorf("%s: status %s, want %s", q.node, a.Status, q.status)
				}
				wantSteps(t, q.node+" incoming", a.Incoming, q.incoming)
				wantSteps(t, q.node+" causes", a.Causes, q.causes)
				if q.own != nil {
					wantSteps(t, q.node+" decisions", a.Decisions, q.own)
				}
			}
		})
	}
}

// The decisions ride on the node's events too: `studio run --json` and the
// run page's stream carry them.
func TestDecisionsInEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.run(`{"name":"r","nodes":[`+nodes("a", "b")+`],"edges":[{"source":"a","target":"b","condition":"output.score > `+"`5`"+`"}]}`, map[string]any{"score": 7.0})
	wantStatus(t, res, chain.StatusCompleted)
	for _, ev := range h.sink.Events() {
		if ev.NodeID == "a" && ev.Phase == engine.PhaseDone {
			if got := enginetest.JSON(ev.Decisions); got != `[{"edge":"a->b","kind":"edge_condition","expr":"output.score > `+"`5`"+`","reads":[{"path":"output.score","value":"7"}],"result":"true","rule":"first_match","outcome":"fired"}]` {
				t.Errorf("done event decisions = %s", got)
			}
			return
		}
	}
	t.Fatal("no done event for a")
}

// A value read is kept as JSON cut at MaxReadBytes, never in the middle of
// a character, and says it was cut.
func TestDecisionReadsAreTruncated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	long := strings.Repeat("é", 1000) // 2 bytes each
	res := h.run(`{"name":"r","nodes":[`+nodes("a", "b")+`],"edges":[{"source":"a","target":"b","condition":"length(output.text) > `+"`5`"+` && output.small"}]}`,
		map[string]any{"text": long, "small": 1.0})
	wantStatus(t, res, chain.StatusCompleted)
	a := why(t, h, res.RunID, "b")
	if len(a.Incoming) != 1 || len(a.Incoming[0].Reads) != 2 {
		t.Fatalf("incoming = %s", enginetest.JSON(a.Incoming))
	}
	r := a.Incoming[0].Reads[0]
	if r.Path != "output.text" || !r.Truncated || !strings.HasSuffix(r.Value, "…") || !strings.HasPrefix(r.Value, `"éé`) {
		t.Errorf("long read = %+v", r)
	}
	if n := len(strings.TrimSuffix(r.Value, "…")); n > engine.MaxReadBytes || n < engine.MaxReadBytes-4 {
		t.Errorf("kept %d bytes, want about %d", n, engine.MaxReadBytes)
	}
	if !utf8.ValidString(r.Value) {
		t.Error("a character was cut in two")
	}
	if s := a.Incoming[0].Reads[1]; s.Value != "1" || s.Truncated {
		t.Errorf("small read = %+v", s)
	}
}

// A resumed run's answers include what was decided before the pause: the
// decisions live in the checkpoint log the resume replays and extends.
func TestWhyAfterResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"r","nodes":[` + nodes("a") + `,{"node_id":"ask","kind":"interrupt"},` + nodes("skipped", "after") + `],"edges":[
		{"source":"a","target":"skipped","condition":"output.score < ` + "`0`" + `"},
		{"source":"a","target":"ask","condition":"output.score > ` + "`5`" + `"},
		{"source":"ask","target":"after","condition":"output.approved"}]}`
	res := h.start(doc, map[string]any{"score": 7.0})
	wantStatus(t, res, chain.StatusPaused)
	res2, err := h.resume(res.RunID, val(map[string]any{"approved": true}), nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	wantSteps(t, "ask incoming", why(t, h, res.RunID, "ask").Incoming, []string{"a->ask edge_condition true first_match fired output.score=7"})
	wantSteps(t, "skipped causes", why(t, h, res.RunID, "skipped").Causes, []string{"a->skipped edge_condition false first_match pruned output.score=7"})
	wantSteps(t, "after incoming", why(t, h, res.RunID, "after").Incoming, []string{"ask->after edge_condition true first_match fired output.approved=true"})
}

// A log written before decisions were recorded still answers, saying where
// a decision would have been.
func TestWhyOldLogWithoutDecisions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.run(`{"name":"r","nodes":[`+nodes("a", "b", "c")+`],"edges":[{"source":"a","target":"b","condition":"output.go"},{"source":"b","target":"c"}]}`, map[string]any{"go": false})
	log, err := h.cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	for k := range log { // as an older studio wrote it
		if log[k].Node != nil {
			rec := *log[k].Node
			rec.Decisions = nil
			log[k].Node = &rec
		}
	}
	a, err := inspect.Why(log, "c")
	if err != nil {
		t.Fatal(err)
	}
	wantSteps(t, "c causes", a.Causes, []string{
		"b->c edge pruned_upstream_skipped pruned",
		"a->b edge pruned (" + inspect.NoDecisionRecorded + ")"})
}

func TestWhyUnknownNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.run(`{"name":"r","nodes":[`+nodes("a")+`]}`, nil)
	log, _ := h.cp.Load(context.Background(), res.RunID)
	_, err := inspect.Why(log, "nope")
	var un *inspect.UnknownNodeError
	if !errors.As(err, &un) || un.NodeID != "nope" || un.RunID != res.RunID {
		t.Fatalf("err = %v", err)
	}
	if want := fmt.Sprintf("run %q has no node %q", res.RunID, "nope"); err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}

// The outcomes that change after the decision: a default held for its
// fan-out fires later; a failed guard fails its target without running it;
// links of a sequential dispatch passed over with none fired after them
// still reach the event stream.
func TestWhyLaterOutcomes(t *testing.T) {
	t.Parallel()
	t.Run("deferred_default_fires_after_the_fan_out", func(t *testing.T) {
		h := newHarness(t)
		res := h.run(`{"name":"r","nodes":[{"node_id":"a",`+echoNode+`,"routing":"all"},`+nodes("b", "x", "c")+`],"edges":[
			{"source":"a","target":"b","condition":"output.go"},
			{"source":"a","target":"x"},
			{"source":"a","target":"c","default":true}]}`, map[string]any{"go": false})
		wantStatus(t, res, chain.StatusCompleted)
		wantSteps(t, "c incoming", why(t, h, res.RunID, "c").Incoming, []string{"a->c edge default_no_match fired"})
		// what the node's event said when it routed: deferred
		for _, ev := range h.sink.Events() {
			if ev.NodeID == "a" && ev.Phase == engine.PhaseDone {
				if got := enginetest.JSON(ev.Decisions); !strings.Contains(got, `"edge":"a->c","kind":"edge","rule":"default_no_match","outcome":"deferred"`) {
					t.Errorf("a's done event: %s", got)
				}
			}
		}
	})
	t.Run("failed_guard", func(t *testing.T) {
		h := newHarness(t)
		res := h.run(`{"name":"r","strict_conditions":true,"nodes":[{"node_id":"a",`+echoNode+`,"routing":"all"},`+nodes("b")+`,{"node_id":"c",`+echoNode+`,"on_error":"continue"}],"edges":[
			{"source":"a","target":"b"},
			{"source":"a","target":"c","condition":"output.nope.deeper"}]}`, nil)
		a := why(t, h, res.RunID, "c")
		if a.Status != "skip" || a.Reason != engine.ReasonGuardFailed {
			t.Fatalf("c: %s %s", a.Status, a.Reason)
		}
		if len(a.Causes) != 1 || a.Causes[0].Result != engine.ResultError || a.Causes[0].Outcome != engine.OutcomeFailed ||
			!strings.Contains(a.Causes[0].Error, "output.nope.deeper") || len(a.Causes[0].Reads) != 1 || !a.Causes[0].Reads[0].Missing {
			t.Errorf("c causes: %s", enginetest.JSON(a.Causes))
		}
	})
	t.Run("sequential_links_passed_over", func(t *testing.T) {
		h := newHarness(t)
		res := h.run(`{"name":"r","nodes":[{"node_id":"a",`+echoNode+`,"routing":"all","dispatch":"sequential"},`+nodes("b", "c")+`],"edges":[
			{"source":"a","target":"b","label":"b","condition":"output.no"},
			{"source":"a","target":"c","label":"c","condition":"output.no"}]}`, map[string]any{"no": false})
		wantStatus(t, res, chain.StatusCompleted)
		n := 0
		for _, ev := range h.sink.Events() {
			if ev.NodeID == "a" && ev.Phase == engine.PhaseProgress {
				n += len(ev.Decisions)
				if ev.Progress != nil { // nothing for the canvas to show
					t.Errorf("progress %s", enginetest.JSON(ev.Progress))
				}
			}
		}
		if n != 2 {
			t.Errorf("%d decisions in a's progress events, want 2", n)
		}
		wantSteps(t, "c causes", why(t, h, res.RunID, "c").Causes, []string{"a->c guard false all_matches pruned output.no=false"})
	})
}

// A skipped node behind a router says how the router chose, not only that it
// chose another edge: the handle it took and its tests (the expression and
// the values each read), as the router's own answer lists them.
func TestWhySkippedBranchSaysHowTheRouterChose(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.run(`{"name":"r","nodes":[`+nodes("a")+`,{"node_id":"route","kind":"condition","cases":[
			{"handle":"high","when":"output.level == 'high'"},{"handle":"mid","when":"output.level == 'mid'"}]},`+nodes("hi", "mid", "rest", "after")+`],
		"edges":[{"source":"a","target":"route"},
			{"source":"route","target":"hi","label":"high"},{"source":"route","target":"mid","label":"mid"},
			{"source":"route","target":"rest","label":"default"},{"source":"hi","target":"after"}]}`, map[string]any{"level": "low"})
	wantStatus(t, res, chain.StatusCompleted)
	for _, node := range []string{"hi", "after"} {
		a := why(t, h, res.RunID, node)
		var st *inspect.WhyStep
		for k := range a.Causes {
			if a.Causes[k].Edge == "route->hi" {
				st = &a.Causes[k]
			}
		}
		if st == nil {
			t.Fatalf("%s: no cause on route->hi: %s", node, enginetest.JSON(a.Causes))
		}
		if st.Chose != "default" {
			t.Errorf("%s: chose %q, want default", node, st.Chose)
		}
		wantSteps(t, node+": how route chose", func() []inspect.WhyStep {
			out := make([]inspect.WhyStep, len(st.Tests))
			for k, d := range st.Tests {
				out[k] = inspect.WhyStep{Decision: d}
			}
			return out
		}(), []string{
			`route case handle=high false first_match output.level="low"`,
			`route case handle=mid false first_match output.level="low"`,
		})
	}

	// a branch: the condition and what it read
	res = h.run(`{"name":"r","nodes":[{"node_id":"br","kind":"branch","condition":"output.score > `+"`5`"+`"},`+nodes("yes", "no")+`],
		"edges":[{"source":"br","target":"yes","label":"true"},{"source":"br","target":"no","label":"false"}]}`, map[string]any{"score": 9.0})
	wantStatus(t, res, chain.StatusCompleted)
	a := why(t, h, res.RunID, "no")
	if len(a.Causes) != 1 || a.Causes[0].Chose != "true" || len(a.Causes[0].Tests) != 1 {
		t.Fatalf("no: causes %s", enginetest.JSON(a.Causes))
	}
	if got := stepText(inspect.WhyStep{Decision: a.Causes[0].Tests[0]}); got != "br branch_condition handle=true true first_match output.score=9" {
		t.Errorf("no: the branch's test: %s", got)
	}
}

// A why step keeps its own fields beside the decision's.
func TestWhyStepJSON(t *testing.T) {
	s := inspect.WhyStep{Decision: engine.Decision{Node: "a", Edge: "a->b", Kind: engine.DecideEdge, Rule: engine.RuleUnconditional, Outcome: engine.OutcomeFired}, Target: "b", Note: "n"}
	got, _ := json.Marshal(s)
	if want := `{"node":"a","edge":"a->b","kind":"edge","rule":"unconditional","outcome":"fired","target":"b","note":"n"}`; string(got) != strings.ReplaceAll(want, ">", `\u003e`) {
		t.Errorf("got %s", got)
	}
	var back inspect.WhyStep
	if err := json.Unmarshal(got, &back); err != nil || back.Target != "b" || back.Note != "n" || back.Edge != "a->b" {
		t.Errorf("round trip: %v %+v", err, back)
	}
}
