package engine_test

import (
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/chain"
)

type routeCase struct {
	name   string
	doc    string
	input  map[string]any
	status chain.RunStatus
	nodes  map[string]string
	check  func(t *testing.T, res *engine.Result, evs []engine.Event)
}

func runRouteCases(t *testing.T, cases []routeCase) {
	t.Helper()
	for _, tc := range cases {
		for _, inline := range []bool{false, true} {
			name := tc.name
			if inline {
				name += "/inline_tools"
			}
			t.Run(name, func(t *testing.T) {
				h := newHarness(t)
				if inline { // the scheduler runs pure built-ins on the coordinator
					h.e.Registry().SetInline(builtin.Inline...)
				}
				res := h.run(tc.doc, tc.input)
				evs := h.sink.Events()
				status := tc.status
				if status == "" {
					status = chain.StatusCompleted
				}
				wantStatus(t, res, status)
				wantNodes(t, res, tc.nodes)
				everyNodeEnded(t, mustDecode(t, tc.doc), evs)
				if tc.check != nil {
					tc.check(t, res, evs)
				}
			})
		}
	}
}

func TestRoutingFirst(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "all_unconditional_edges_fan_out",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b"},{"source":"a","target":"c"}]}`,
			nodes: map[string]string{"a": "done", "b": "done", "c": "done"},
		},
		{
			name: "first_true_conditional_in_declaration_order_wins",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"},{"node_id":"e","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"output.v == 'no'"},{"source":"a","target":"c","condition":"output.v == 'yes'"},{"source":"a","target":"d","condition":"output.v == 'yes'"},{"source":"a","target":"e"}]}`,
			input: map[string]any{"v": "yes"},
			nodes: map[string]string{"b": "skip/condition_false", "c": "done", "d": "skip/condition_false", "e": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				for _, e := range evs {
					if e.NodeID == "a" && e.Phase == engine.PhaseDone && js(e.Edges) != `["a->c"]` {
						t.Errorf("done event edges = %s", js(e.Edges))
					}
				}
			},
		},
		{
			name: "none_true_falls_back_to_default_edge",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"output.v == 'yes'"},{"source":"a","target":"c","default":true}]}`,
			input: map[string]any{"v": "no"},
			nodes: map[string]string{"b": "skip/condition_false", "c": "done"},
		},
		{
			name: "none_true_falls_back_to_first_unconditional_edge",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"output.v == 'yes'"},{"source":"a","target":"c"},{"source":"a","target":"d","condition":"output.v == 'maybe'"}]}`,
			input: map[string]any{"v": "no"},
			nodes: map[string]string{"b": "skip/condition_false", "c": "done", "d": "skip/condition_false"},
		},
		{
			name: "none_true_no_fallback_prunes_silently",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"output.v == 'yes'"}]}`,
			input: map[string]any{"v": "no"},
			nodes: map[string]string{"a": "done", "b": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				// a has outgoing edges, so it is not terminal; b (terminal) did not complete
				if res.FinalOutput != nil {
					t.Errorf("final_output = %s, want null (no terminal node completed)", js(res.FinalOutput))
				}
			},
		},
		{
			name: "strict_routing_no_match_is_ChainRoutingError",
			doc: `{"name":"r","strict_routing":true,"nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","label":"yes-path","condition":"output.v == 'yes'"},{"source":"a","target":"c","label":"maybe-path","condition":"output.v == 'maybe'"}]}`,
			input:  map[string]any{"v": "no"},
			status: chain.StatusFailed,
			nodes:  map[string]string{"b": "skip/upstream_stopped", "c": "skip/upstream_stopped"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Error.Code != engine.CodeRouting {
					t.Errorf("code = %s", res.Error.Code)
				}
				for _, w := range []string{`"a"`, "yes-path", "maybe-path"} {
					if !strings.Contains(res.Error.Message, w) {
						t.Errorf("message %q does not name %s", res.Error.Message, w)
					}
				}
				var re *engine.ChainRoutingError
				if !errorsAs(res.Err(), &re) || re.NodeID != "a" {
					t.Errorf("Err() = %#v, want *ChainRoutingError for a", res.Err())
				}
			},
		},
		{
			name: "routing_reads_state_written_by_the_node",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","set_state":{"flag":"output.v"}},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"state.flag == 'go'"},{"source":"a","target":"c"}]}`,
			input: map[string]any{"v": "go"},
			nodes: map[string]string{"b": "done", "c": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.State["flag"] != "go" {
					t.Errorf("state = %s", js(res.State))
				}
			},
		},
		{
			name: "template_condition_over_state",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","set_state":{"score":"output.score"}},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"{{ state.score }} > 7"},{"source":"a","target":"c"}]}`,
			input: map[string]any{"score": 8.0},
			nodes: map[string]string{"b": "done", "c": "skip/condition_false"},
		},
	})
}

func TestRoutingConditionNode(t *testing.T) {
	t.Parallel()
	cond := func(v string, edges string) routeCase {
		return routeCase{
			doc: `{"name":"r","nodes":[{"node_id":"c","kind":"condition","cases":[{"handle":"hi","when":"input.v > ` + "`10`" + `"},{"handle":"mid","when":"input.v > ` + "`5`" + `"}]},
			{"node_id":"h","kind":"tool","name":"echo"},{"node_id":"m","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"}],
			"edges":` + edges + `}`,
		}
	}
	labelled := `[{"source":"c","target":"h","label":"hi"},{"source":"c","target":"m","label":"mid"},{"source":"c","target":"d","label":"default"}]`
	unlabelled := `[{"source":"c","target":"h","label":"hi"},{"source":"c","target":"m","label":"mid"},{"source":"c","target":"d"}]`

	c1 := cond("", labelled)
	c1.name, c1.input = "first_true_case_sets_matched_and_takes_labelled_edge", map[string]any{"v": 20.0}
	c1.nodes = map[string]string{"c": "done", "h": "done", "m": "skip/branch_not_taken", "d": "skip/branch_not_taken"}
	c1.check = func(t *testing.T, res *engine.Result, evs []engine.Event) {
		if res.Nodes["c"].Matched != "hi" {
			t.Errorf("matched = %q", res.Nodes["c"].Matched)
		}
		found := false
		for _, e := range evs {
			if e.NodeID == "c" && e.Phase == engine.PhaseDone {
				found = e.Matched == "hi"
			}
		}
		if !found {
			t.Errorf("done event of c does not carry matched=hi")
		}
		if js(res.Outputs["c"]) != `{"v":20}` || js(res.Outputs["h"]) != `{"v":20}` {
			t.Errorf("condition node must pass its input through: %s", js(res.Outputs))
		}
	}
	c2 := cond("", labelled)
	c2.name, c2.input = "cases_in_order_second_case", map[string]any{"v": 7.0}
	c2.nodes = map[string]string{"h": "skip/branch_not_taken", "m": "done", "d": "skip/branch_not_taken"}
	c3 := cond("", labelled)
	c3.name, c3.input = "no_case_takes_default_label", map[string]any{"v": 1.0}
	c3.nodes = map[string]string{"h": "skip/branch_not_taken", "m": "skip/branch_not_taken", "d": "done"}
	c3.check = func(t *testing.T, res *engine.Result, _ []engine.Event) {
		if res.Nodes["c"].Matched != "" {
			t.Errorf("matched = %q, want empty", res.Nodes["c"].Matched)
		}
	}
	c4 := cond("", unlabelled)
	c4.name, c4.input = "no_case_takes_unlabelled_edge", map[string]any{"v": 1.0}
	c4.nodes = map[string]string{"h": "skip/branch_not_taken", "m": "skip/branch_not_taken", "d": "done"}
	runRouteCases(t, []routeCase{c1, c2, c3, c4})
}

func TestRoutingBranchNode(t *testing.T) {
	t.Parallel()
	a2e := func(items string) string {
		return `{"type":"chain/req","id":"c1","version":"1.0","session_id":"s","nodes":[
		{"node_id":"start","kind":"tool","name":"echo","input":{"items":` + items + `},"next_node":"check"},
		{"node_id":"check","kind":"branch","condition":"length(output.items) > ` + "`0`" + `","true_node":"process","false_node":"skip_log"},
		{"node_id":"process","kind":"tool","name":"echo"},
		{"node_id":"skip_log","kind":"tool","name":"echo"}],"entry_node":"start"}`
	}
	runRouteCases(t, []routeCase{
		{
			name:  "a2e_true_node_taken_when_condition_true",
			doc:   a2e(`[1,2]`),
			nodes: map[string]string{"check": "done", "process": "done", "skip_log": "skip/branch_not_taken"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Nodes["check"].Matched != "true" {
					t.Errorf("matched = %q", res.Nodes["check"].Matched)
				}
				if js(res.Outputs["process"]) != `{"items":[1,2]}` {
					t.Errorf("branch must pass its input through, process got %s", js(res.Outputs["process"]))
				}
			},
		},
		{
			name:  "a2e_false_node_taken_when_condition_false",
			doc:   a2e(`[]`),
			nodes: map[string]string{"check": "done", "process": "skip/branch_not_taken", "skip_log": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Nodes["check"].Matched != "false" {
					t.Errorf("matched = %q", res.Nodes["check"].Matched)
				}
			},
		},
		{
			name: "strict_routing_branch_without_false_edge",
			doc: `{"name":"r","strict_routing":true,"nodes":[{"node_id":"b","kind":"branch","condition":"input.ok"},{"node_id":"t","kind":"tool","name":"echo"}],
			"edges":[{"source":"b","target":"t","label":"true"}]}`,
			input:  map[string]any{"ok": false},
			status: chain.StatusFailed,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Error.Code != engine.CodeRouting || !strings.Contains(res.Error.Message, `"b"`) || !strings.Contains(res.Error.Message, "true") {
					t.Errorf("error = %s", js(res.Error))
				}
			},
		},
		{
			name: "non_strict_branch_without_false_edge_prunes",
			doc: `{"name":"r","nodes":[{"node_id":"b","kind":"branch","condition":"input.ok"},{"node_id":"t","kind":"tool","name":"echo"}],
			"edges":[{"source":"b","target":"t","label":"true"}]}`,
			input: map[string]any{"ok": false},
			nodes: map[string]string{"b": "done", "t": "skip/branch_not_taken"},
		},
	})
}

func TestRoutingAll(t *testing.T) {
	t.Parallel()
	doc := func(extra string) string {
		return `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"` + extra + `},
		{"node_id":"email","kind":"tool","name":"echo"},{"node_id":"crm","kind":"tool","name":"echo"},{"node_id":"triage","kind":"tool","name":"echo"},{"node_id":"vip","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"email","condition":"{{ output.score > 7 }}"},{"source":"a","target":"crm"},{"source":"a","target":"triage","default":true},{"source":"a","target":"vip","condition":"{{ output.score > 9 }}"}]}`
	}
	runRouteCases(t, []routeCase{
		{
			name:  "no_guard_true_unconditional_and_default_fire",
			doc:   doc(""),
			input: map[string]any{"score": 2.0},
			nodes: map[string]string{"email": "skip/condition_false", "crm": "done", "triage": "done", "vip": "skip/condition_false"},
		},
		{
			name:  "every_true_guard_fires_default_does_not",
			doc:   doc(""),
			input: map[string]any{"score": 10.0},
			nodes: map[string]string{"email": "done", "crm": "done", "triage": "skip/condition_false", "vip": "done"},
		},
		{
			name:  "one_guard_true_default_skipped",
			doc:   doc(""),
			input: map[string]any{"score": 8.0},
			nodes: map[string]string{"email": "done", "crm": "done", "triage": "skip/condition_false", "vip": "skip/condition_false"},
		},
		{
			name:  "sequential_dispatch_same_selection",
			doc:   doc(`,"dispatch":"sequential"`),
			input: map[string]any{"score": 2.0},
			nodes: map[string]string{"email": "skip/condition_false", "crm": "done", "triage": "done", "vip": "skip/condition_false"},
		},
		{
			name: "sequential_dispatch_reads_steps_of_targets_already_run",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all","dispatch":"sequential"},
			{"node_id":"first","kind":"tool","name":"inc","input":{"n":1}},
			{"node_id":"second","kind":"tool","name":"echo"},
			{"node_id":"third","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"first"},{"source":"a","target":"second","condition":"{{ steps.first.n == 2 }}"},{"source":"a","target":"third","condition":"{{ steps.first.n == 3 }}"}]}`,
			nodes: map[string]string{"first": "done", "second": "done", "third": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				// one at a time, in declaration order
				var order []string
				for _, e := range evs {
					if e.Phase == engine.PhaseStart {
						order = append(order, e.NodeID)
					}
				}
				if strings.Join(order, ",") != "a,first,second" {
					t.Errorf("start order = %v", order)
				}
			},
		},
		{
			name: "sequential_dispatch_runs_targets_one_at_a_time",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all","dispatch":"sequential"},
			{"node_id":"x","kind":"tool","name":"delay","input":{"ms":20}},{"node_id":"y","kind":"tool","name":"delay","input":{"ms":1}}],
			"edges":[{"source":"a","target":"x"},{"source":"a","target":"y"}]}`,
			nodes: map[string]string{"x": "done", "y": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if !res.Nodes["y"].Started.After(res.Nodes["x"].Ended) && !res.Nodes["y"].Started.Equal(res.Nodes["x"].Ended) {
					t.Errorf("y started %v before x ended %v", res.Nodes["y"].Started, res.Nodes["x"].Ended)
				}
			},
		},
		{
			name: "parallel_dispatch_guards_evaluated_up_front",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all","set_state":{"k":"output.k"}},
			{"node_id":"x","kind":"tool","name":"echo","set_state":{"k":"'changed'"}},{"node_id":"y","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"x"},{"source":"a","target":"y","condition":"state.k == 'orig'"}]}`,
			input: map[string]any{"k": "orig"},
			nodes: map[string]string{"x": "done", "y": "done"},
		},
		{
			name: "guard_error_fails_that_target_not_the_run",
			doc: `{"name":"r","strict_conditions":true,"nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"},
			{"node_id":"x","kind":"tool","name":"count","on_error":"continue"},{"node_id":"y","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"x","condition":"{{ output.data.score > 7 }}"},{"source":"a","target":"y"}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"a": "done", "x": "skip/guard_failed", "y": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				for _, e := range evs {
					if e.NodeID == "x" && (e.Phase == engine.PhaseStart || e.Phase == engine.PhaseError) {
						t.Errorf("x never ran but has a %s event", e.Phase)
					}
				}
				if !strings.Contains(res.Nodes["x"].Error, "output.data") {
					t.Errorf("x error %q does not name the missing path", res.Nodes["x"].Error)
				}
				if res.Nodes["x"].Attempts > 0 && res.Outputs["x"] != nil {
					t.Errorf("x ran")
				}
			},
		},
		{
			name: "guard_error_with_abort_fails_the_run_through_the_target",
			doc: `{"name":"r","strict_conditions":true,"nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"},
			{"node_id":"x","kind":"tool","name":"count"}],
			"edges":[{"source":"a","target":"x","condition":"{{ output.nope == 1 }}"}]}`,
			status: chain.StatusFailed,
			nodes:  map[string]string{"x": "skip/guard_failed"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Error.Code != engine.CodeNodeError || res.Error.NodeID != "x" {
					t.Errorf("error = %s", js(res.Error))
				}
			},
		},
	})
}

func TestRoutingJoins(t *testing.T) {
	t.Parallel()
	diamond := func(condB, condC string) string {
		return `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"},{"node_id":"b","kind":"tool","name":"echo","input":{"from":"b"}},{"node_id":"c","kind":"tool","name":"echo","input":{"from":"c"}},{"node_id":"j","kind":"tool","name":"echo"},{"node_id":"k","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b","condition":"` + condB + `"},{"source":"a","target":"c","condition":"` + condC + `"},{"source":"b","target":"j"},{"source":"c","target":"j"},{"source":"j","target":"k"}]}`
	}
	runRouteCases(t, []routeCase{
		{
			name:  "join_runs_when_one_incoming_fired_input_is_single_source_output",
			doc:   diamond("input.b", "input.c"),
			input: map[string]any{"b": true, "c": false},
			nodes: map[string]string{"b": "done", "c": "skip/condition_false", "j": "done", "k": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["j"]) != `{"from":"b"}` {
					t.Errorf("j input = %s", js(res.Outputs["j"]))
				}
			},
		},
		{
			name:  "join_of_several_fired_gets_object_keyed_by_source",
			doc:   diamond("input.b", "input.c"),
			input: map[string]any{"b": true, "c": true},
			nodes: map[string]string{"j": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if js(res.Outputs["j"]) != `{"b":{"from":"b"},"c":{"from":"c"}}` {
					t.Errorf("j input = %s", js(res.Outputs["j"]))
				}
				n := 0
				for _, e := range evs {
					if e.NodeID == "j" && e.Phase == engine.PhaseStart {
						n++
					}
				}
				if n != 1 {
					t.Errorf("j started %d times", n)
				}
			},
		},
		{
			name:  "join_with_nothing_fired_is_skipped_and_cascades",
			doc:   diamond("input.b", "input.c"),
			input: map[string]any{"b": false, "c": false},
			nodes: map[string]string{"b": "skip/condition_false", "c": "skip/condition_false", "j": "skip/condition_false", "k": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.FinalOutput != nil {
					t.Errorf("final_output = %s, want null (the only terminal, k, was skipped)", js(res.FinalOutput))
				}
			},
		},
		{
			name: "branch_not_taken_inherited_downstream",
			doc: `{"name":"r","nodes":[{"node_id":"b","kind":"branch","condition":"input.ok"},{"node_id":"t","kind":"tool","name":"echo"},{"node_id":"f","kind":"tool","name":"echo"},{"node_id":"f2","kind":"tool","name":"echo"}],
			"edges":[{"source":"b","target":"t","label":"true"},{"source":"b","target":"f","label":"false"},{"source":"f","target":"f2"}]}`,
			input: map[string]any{"ok": true},
			nodes: map[string]string{"t": "done", "f": "skip/branch_not_taken", "f2": "skip/branch_not_taken"},
		},
		{
			name: "skipped_by_error_source_is_upstream_stopped",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"fail","on_error":"skip"},{"node_id":"b","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"b","condition":"output != null"}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"a": "skip/on_error_skip", "b": "skip/upstream_stopped"},
		},
		{
			name:  "root_receives_run_input",
			doc:   `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"}]}`,
			input: map[string]any{"x": 1.0},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["a"]) != `{"x":1}` {
					t.Errorf("a = %s", js(res.Outputs["a"]))
				}
			},
		},
	})
}

func TestRoutingDataDeps(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "node_waits_for_input_map_dependency",
			doc: `{"name":"r","nodes":[{"node_id":"slow","kind":"tool","name":"delay","input":{"ms":30,"v":"slow"}},{"node_id":"fast","kind":"tool","name":"echo"},
			{"node_id":"reader","kind":"tool","name":"echo","input_map":{"s":"slow.output.v","n":"node_results.slow.v"}}],
			"edges":[{"source":"fast","target":"reader"}]}`,
			nodes: map[string]string{"reader": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["reader"]) != `{"n":"slow","s":"slow"}` {
					t.Errorf("reader = %s", js(res.Outputs["reader"]))
				}
			},
		},
		{
			name: "skipped_dependency_reads_null",
			doc: `{"name":"r","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"gone","kind":"tool","name":"echo","input":{"v":1}},
			{"node_id":"reader","kind":"tool","name":"echo","input_map":{"g":"gone.output.v"}}],
			"edges":[{"source":"a","target":"gone","condition":"input.never"},{"source":"a","target":"reader","condition":"!(input.never)"}]}`,
			nodes: map[string]string{"gone": "skip/condition_false", "reader": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["reader"]) != `{"g":null}` {
					t.Errorf("reader = %s", js(res.Outputs["reader"]))
				}
			},
		},
	})
}

func TestRoutingLoops(t *testing.T) {
	t.Parallel()
	loop := func(max int, onMax string, cond string) string {
		return `{"name":"r","nodes":[{"node_id":"body","kind":"tool","name":"inc","input_map":{"n":"state.n"},"set_state":{"n":"output.n"}},{"node_id":"exit","kind":"tool","name":"echo"}],
		"edges":[{"id":"again","source":"body","target":"body","condition":"` + cond + `","max_iterations":` + itoa(max) + `,"on_max_reached":"` + onMax + `"},{"source":"body","target":"exit"}]}`
	}
	runRouteCases(t, []routeCase{
		{
			name:  "loop_edge_fires_until_condition_false",
			doc:   loop(10, "error", "state.n < `3`"),
			nodes: map[string]string{"body": "done", "exit": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.State) != `{"n":3}` || res.Nodes["body"].Iteration != 3 {
					t.Errorf("state = %s, iteration %d", js(res.State), res.Nodes["body"].Iteration)
				}
				if js(res.FinalOutput) != `{"n":3}` {
					t.Errorf("final = %s", js(res.FinalOutput))
				}
			},
		},
		{
			name:   "loop_cap_on_max_error_is_ChainCycleError",
			doc:    loop(2, "error", "state.n < `100`"),
			status: chain.StatusFailed,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Error.Code != engine.CodeCycle || !strings.Contains(res.Error.Message, "again") || !strings.Contains(res.Error.Message, "2") {
					t.Errorf("error = %s", js(res.Error))
				}
				var ce *engine.ChainCycleError
				if !errorsAs(res.Err(), &ce) || ce.EdgeID != "again" || ce.MaxIterations != 2 {
					t.Errorf("Err() = %#v", res.Err())
				}
				if js(res.State) != `{"n":3}` {
					t.Errorf("body must run 1 + 2 times: state %s", js(res.State))
				}
			},
		},
		{
			name:  "loop_cap_on_max_continue_falls_back_to_exit",
			doc:   loop(2, "continue", "state.n < `100`"),
			nodes: map[string]string{"body": "done", "exit": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.State) != `{"n":3}` {
					t.Errorf("state = %s", js(res.State))
				}
			},
		},
		{
			name: "join_downstream_waits_for_loop_exit",
			doc: `{"name":"r","nodes":[{"node_id":"s","kind":"tool","name":"echo"},
			{"node_id":"body","kind":"tool","name":"inc","input_map":{"n":"state.n"},"set_state":{"n":"output.n"}},
			{"node_id":"other","kind":"tool","name":"echo","input":{"o":1}},
			{"node_id":"join","kind":"tool","name":"echo","input_map":{"n":"state.n"}}],
			"edges":[{"source":"s","target":"body"},{"source":"s","target":"other"},
			{"source":"body","target":"body","condition":"state.n < ` + "`4`" + `","max_iterations":5},{"source":"body","target":"join"},{"source":"other","target":"join"}]}`,
			nodes: map[string]string{"join": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if js(res.Outputs["join"]) != `{"n":4}` {
					t.Errorf("join ran before the loop exited: %s", js(res.Outputs["join"]))
				}
				n := 0
				for _, e := range evs {
					if e.NodeID == "join" && e.Phase == engine.PhaseStart {
						n++
					}
				}
				if n != 1 {
					t.Errorf("join started %d times", n)
				}
			},
		},
	})
}

func TestRoutingAllSequentialGuardError(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "sequential_guard_error_fails_that_target_and_dispatch_goes_on",
			doc: `{"name":"r","strict_conditions":true,"nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all","dispatch":"sequential"},
			{"node_id":"x","kind":"tool","name":"count","on_error":"continue"},{"node_id":"y","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"x","condition":"{{ steps.nothing.score > 7 }}"},{"source":"a","target":"y"},{"source":"a","target":"d","default":true}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"x": "skip/guard_failed", "y": "done", "d": "done"},
		},
	})
}

func TestRoutingConditionDefaultFlag(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "default_flag_edge_preferred_over_earlier_unlabelled_edge",
			doc: `{"name":"r","nodes":[{"node_id":"c","kind":"condition","cases":[{"handle":"hi","when":"input.v > ` + "`10`" + `"}]},
			{"node_id":"h","kind":"tool","name":"echo"},{"node_id":"u","kind":"tool","name":"echo"},{"node_id":"d","kind":"tool","name":"echo"}],
			"edges":[{"source":"c","target":"h","label":"hi"},{"source":"c","target":"u"},{"source":"c","target":"d","default":true}]}`,
			input: map[string]any{"v": 1.0},
			nodes: map[string]string{"h": "skip/branch_not_taken", "u": "skip/branch_not_taken", "d": "done"},
		},
	})
}

// TestRaceFrozenScope: map and parallel workers read a frozen scope while
// the coordinator keeps writing state and outputs (run with -race).
func TestRaceFrozenScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"race","nodes":[{"node_id":"root","kind":"tool","name":"echo","set_state":{"s":"output.items"}},
	{"node_id":"m","kind":"map","items_path":"state.s","map_node":"body"},
	{"node_id":"body","kind":"tool","name":"echo","input_map":{"i":"item","st":"state.s","r":"root.output","all":"node_results"}},
	{"node_id":"p","kind":"parallel","branches":["b1","b2"]},
	{"node_id":"b1","kind":"tool","name":"echo","input_map":{"st":"state","nr":"node_results"}},
	{"node_id":"b2","kind":"tool","name":"inc","input_map":{"n":"state.n"}},
	{"node_id":"w1","kind":"tool","name":"inc","input_map":{"n":"state.n"},"set_state":{"n":"output.n"}},
	{"node_id":"w2","kind":"tool","name":"inc","input_map":{"n":"state.n"},"set_state":{"n":"output.n","s":"output"}},
	{"node_id":"w3","kind":"tool","name":"echo","set_state":{"z":"output"}}],
	"edges":[{"source":"root","target":"m"},{"source":"root","target":"p"},{"source":"root","target":"w1"},{"source":"w1","target":"w2"},{"source":"w2","target":"w3"}]}`
	items := make([]any, 200)
	for k := range items {
		items[k] = float64(k)
	}
	res := h.run(doc, map[string]any{"items": items})
	wantStatus(t, res, chain.StatusCompleted)
	if l, _ := res.Outputs["m"].([]any); len(l) != 200 {
		t.Errorf("map output has %d items", len(l))
	}
}
