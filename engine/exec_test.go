package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

func TestExecInput(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name:  "static_input_merged_with_input_map_map_wins",
			doc:   `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"keep":1,"b":"static"},"input_map":{"b":"input.x","c":"input.x"}}]}`,
			input: map[string]any{"x": "mapped"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["a"]) != `{"b":"mapped","c":"mapped","keep":1}` {
					t.Errorf("a = %s", js(res.Outputs["a"]))
				}
			},
		},
		{
			name: "go_ints_from_a_tool_are_normalised_for_jmespath",
			doc: `{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"ints"},{"node_id":"big","kind":"tool","name":"echo"},{"node_id":"small","kind":"tool","name":"echo"}],
			"edges":[{"source":"a","target":"big","condition":"output.n > ` + "`1`" + ` && output.list[1] == ` + "`2`" + `"},{"source":"a","target":"small"}]}`,
			nodes: map[string]string{"big": "done", "small": "skip/condition_false"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if _, ok := res.Outputs["a"].(map[string]any)["n"].(float64); !ok {
					t.Errorf("n is %T, want float64", res.Outputs["a"].(map[string]any)["n"])
				}
			},
		},
	})
}

func TestExecMap(t *testing.T) {
	t.Parallel()
	body := func(mode string) string {
		return `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body","parallel_failure_mode":"` + mode + `"},
		{"node_id":"body","kind":"tool","name":"fail","input_map":{"until_attempt":"item.u","message":"item.msg"}}]}`
	}
	items := map[string]any{"items": []any{
		map[string]any{"u": 1.0, "msg": "x"}, map[string]any{"u": 2.0, "msg": "boom1"}, map[string]any{"u": 1.0, "msg": "y"},
	}}
	allFail := map[string]any{"items": []any{map[string]any{"u": 2.0, "msg": "b1"}, map[string]any{"u": 2.0, "msg": "b2"}}}
	runRouteCases(t, []routeCase{
		{
			name: "map_runs_body_per_item_output_in_item_order_with_item_and_index",
			doc: `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
			{"node_id":"body","kind":"tool","name":"delay","input_map":{"ms":"item.ms","i":"index","v":"item.v"}}]}`,
			input: map[string]any{"items": []any{map[string]any{"ms": 30.0, "v": "a"}, map[string]any{"ms": 1.0, "v": "b"}, map[string]any{"ms": 15.0, "v": "c"}}},
			nodes: map[string]string{"m": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if js(res.Outputs["m"]) != `[{"i":0,"ms":30,"v":"a"},{"i":1,"ms":1,"v":"b"},{"i":2,"ms":15,"v":"c"}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
				var prog []string
				for _, e := range evs {
					if e.NodeID == "m" && e.Phase == engine.PhaseProgress {
						prog = append(prog, js(e.Progress))
					}
				}
				if strings.Join(prog, " ") != `{"done":1,"total":3} {"done":2,"total":3} {"done":3,"total":3}` {
					t.Errorf("progress = %v", prog)
				}
			},
		},
		{
			// parallel_failure_mode continue (the default) collects: every
			// item runs to its end, a failure is an {"error": …} entry in
			// item order, the map completes and the run is partial.
			name:   "map_continue_collects_item_failure_as_error_entry_and_is_partial",
			doc:    body("continue"),
			input:  items,
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if js(res.Outputs["m"]) != `[{"attempt":1,"ok":true},{"error":"boom1"},{"attempt":1,"ok":true}]` || res.Error != nil {
					t.Errorf("m = %s, error %s", js(res.Outputs["m"]), js(res.Error))
				}
				done := 0
				for _, e := range evs {
					if e.NodeID == "body" && e.Phase == engine.PhaseDone {
						done++
					}
				}
				if done != 2 {
					t.Errorf("%d items done, want the other 2 to run to their end", done)
				}
			},
		},
		{
			name: "map_over_1_minus5_2_collects_the_error_and_its_next_node_runs",
			doc: `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body","next_node":"after"},
			{"node_id":"body","kind":"tool","name":"delay","input_map":{"ms":"item"}},{"node_id":"after","kind":"tool","name":"echo","input_map":{"got":"m.output"}}]}`,
			input:  map[string]any{"xs": []any{1.0, -5.0, 2.0}},
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "done", "after": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				want := `[{"ms":1},{"error":"delay: field \"ms\" must be >= 0, got -5"},{"ms":2}]`
				if js(res.Outputs["m"]) != want || js(res.Outputs["after"]) != `{"got":`+want+`}` {
					t.Errorf("m = %s, after = %s", js(res.Outputs["m"]), js(res.Outputs["after"]))
				}
			},
		},
		{
			name:   "map_continue_every_item_failed_is_every_entry_an_error",
			doc:    body("continue"),
			input:  allFail,
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"error":"b1"},{"error":"b2"}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:   "map_item_failure_handled_by_the_maps_on_error_is_partial",
			doc:    strings.Replace(body("fail_fast"), `"parallel_failure_mode":"fail_fast"`, `"parallel_failure_mode":"fail_fast","on_error":"continue"`, 1),
			input:  items,
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "error"},
		},
		{
			// spec'd continue shape: a body that records its error and carries on
			name:   "map_body_on_error_continue_gives_error_objects_and_partial",
			doc:    strings.Replace(body("continue"), `"name":"fail",`, `"name":"fail","on_error":"continue",`, 1),
			input:  items,
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"attempt":1,"ok":true},{"error":"boom1"},{"attempt":1,"ok":true}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:   "map_body_on_error_skip_gives_null_and_partial",
			doc:    strings.Replace(body("fail_fast"), `"name":"fail",`, `"name":"fail","on_error":"skip",`, 1),
			input:  items,
			status: chain.StatusPartial,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"attempt":1,"ok":true},null,{"attempt":1,"ok":true}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name: "map_body_error_handler_output_fills_the_slot_and_partial",
			doc: `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},
			{"node_id":"body","kind":"tool","name":"fail","on_error":"fix","input_map":{"until_attempt":"item.u","message":"item.msg"}},
			{"node_id":"fix","kind":"tool","name":"echo","input_map":{"fixed":"error.message"}}]}`,
			input:  items,
			status: chain.StatusPartial,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"attempt":1,"ok":true},{"fixed":"boom1"},{"attempt":1,"ok":true}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:   "map_any_success_filters_errors_and_is_partial",
			doc:    body("any_success"),
			input:  items,
			status: chain.StatusPartial,
			nodes:  map[string]string{"m": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"attempt":1,"ok":true},{"attempt":1,"ok":true}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:  "map_any_success_without_failures_is_completed",
			doc:   body("any_success"),
			input: map[string]any{"items": []any{map[string]any{"u": 1.0, "msg": "x"}}},
		},
		{
			name: "nested_handled_failure_makes_the_run_partial",
			doc: `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"p"},
			{"node_id":"p","kind":"parallel","branches":["ok","bad"],"parallel_failure_mode":"any_success"},
			{"node_id":"ok","kind":"tool","name":"echo"},{"node_id":"bad","kind":"tool","name":"fail"}]}`,
			input:  map[string]any{"items": []any{1.0, 2.0}},
			status: chain.StatusPartial,
		},
		{
			name:   "map_any_success_all_failed_is_error",
			doc:    body("any_success"),
			input:  allFail,
			status: chain.StatusFailed,
			nodes:  map[string]string{"m": "error"},
		},
		{
			name:   "map_fail_fast_fails_the_node",
			doc:    body("fail_fast"),
			input:  items,
			status: chain.StatusFailed,
			nodes:  map[string]string{"m": "error"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if !strings.Contains(res.Error.Message, "boom1") {
					t.Errorf("error = %s", js(res.Error))
				}
			},
		},
		{
			name:  "map_over_a_scalar_is_one_item",
			doc:   `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.x","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo","input_map":{"v":"item","i":"index"}}]}`,
			input: map[string]any{"x": 7.0},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"i":0,"v":7}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:  "map_over_an_object_is_one_item",
			doc:   `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.x","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo","input_map":{"v":"item"}}]}`,
			input: map[string]any{"x": map[string]any{"a": "b"}},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[{"v":{"a":"b"}}]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
		{
			name:  "map_over_a_missing_path_or_null_is_no_items",
			doc:   `{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.missing","map_node":"body"},{"node_id":"n","kind":"map","items_path":"input.null","map_node":"body2"},{"node_id":"body","kind":"tool","name":"echo"},{"node_id":"body2","kind":"tool","name":"echo"}],"edges":[{"source":"m","target":"n"}]}`,
			input: map[string]any{"null": nil},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[]` || js(res.Outputs["n"]) != `[]` {
					t.Errorf("m = %s, n = %s", js(res.Outputs["m"]), js(res.Outputs["n"]))
				}
			},
		},
		{
			name:  "map_empty_items_is_empty_list",
			doc:   body("continue"),
			input: map[string]any{"items": []any{}},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["m"]) != `[]` {
					t.Errorf("m = %s", js(res.Outputs["m"]))
				}
			},
		},
	})
}

func TestExecMapLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *engine.Options) { o.Limits.MaxMapItems = 3 })
	res := h.run(`{"name":"m","nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo"}]}`,
		map[string]any{"items": []any{1.0, 2.0, 3.0, 4.0}})
	wantStatus(t, res, chain.StatusFailed)
	if res.Error.Code != engine.CodeBudget || res.Error.Details["budget"] != chain.BudgetMapItems || !strings.Contains(res.Error.Message, "4 items, over the limit of 3") {
		t.Errorf("error %+v does not name the map_items budget", res.Error)
	}
}

func TestExecParallel(t *testing.T) {
	t.Parallel()
	defs := map[string]string{
		"ok1":  `{"node_id":"ok1","kind":"tool","name":"delay","input":{"ms":20,"b":"ok1"}}`,
		"bad":  `{"node_id":"bad","kind":"tool","name":"fail","input":{"message":"bad failed"}}`,
		"ok2":  `{"node_id":"ok2","kind":"tool","name":"echo","input":{"b":"ok2"}}`,
		"slow": `{"node_id":"slow","kind":"tool","name":"delay","input":{"ms":5000}}`,
	}
	par := func(mode string, branches string, _ string) string {
		var bs []string
		_ = json.Unmarshal([]byte(branches), &bs)
		nodes := `{"node_id":"p","kind":"parallel","branches":` + branches + `,"parallel_failure_mode":"` + mode + `"}`
		for _, b := range bs {
			nodes += "," + defs[b]
		}
		return `{"name":"p","nodes":[` + nodes + `]}`
	}
	runRouteCases(t, []routeCase{
		{
			name:  "parallel_continue_outputs_in_declaration_order",
			doc:   par("continue", `["ok1","ok2"]`, ""),
			nodes: map[string]string{"p": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["p"]) != `[{"b":"ok1","ms":20},{"b":"ok2"}]` {
					t.Errorf("p = %s", js(res.Outputs["p"]))
				}
			},
		},
		{
			name:   "parallel_continue_collects_branch_failure_after_siblings_finish",
			doc:    par("continue", `["ok1","bad","ok2"]`, ""),
			status: chain.StatusPartial,
			nodes:  map[string]string{"p": "done"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if js(res.Outputs["p"]) != `[{"b":"ok1","ms":20},{"error":"bad failed"},{"b":"ok2"}]` || res.Error != nil {
					t.Errorf("p = %s, error %s", js(res.Outputs["p"]), js(res.Error))
				}
				for _, e := range evs {
					if e.NodeID == "ok1" && e.Phase == engine.PhaseError {
						t.Errorf("continue cancelled sibling ok1: %s", e.Error)
					}
				}
			},
		},
		{
			name:   "parallel_branch_on_error_continue_is_an_error_object_and_partial",
			doc:    strings.Replace(par("continue", `["ok1","bad","ok2"]`, ""), `"name":"fail",`, `"name":"fail","on_error":"continue",`, 1),
			status: chain.StatusPartial,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["p"]) != `[{"b":"ok1","ms":20},{"error":"bad failed"},{"b":"ok2"}]` {
					t.Errorf("p = %s", js(res.Outputs["p"]))
				}
			},
		},
		{
			name:   "parallel_any_success_filters_errors_and_is_partial",
			doc:    par("any_success", `["ok1","bad","ok2"]`, ""),
			status: chain.StatusPartial,
			nodes:  map[string]string{"p": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["p"]) != `[{"b":"ok1","ms":20},{"b":"ok2"}]` {
					t.Errorf("p = %s", js(res.Outputs["p"]))
				}
			},
		},
		{
			name:   "parallel_any_success_all_failed_is_error",
			doc:    par("any_success", `["bad"]`, ""),
			status: chain.StatusFailed,
			nodes:  map[string]string{"p": "error"},
		},
		{
			name:   "parallel_fail_fast_cancels_siblings_and_fails",
			doc:    par("fail_fast", `["slow","bad","ok2"]`, ""),
			status: chain.StatusFailed,
			nodes:  map[string]string{"p": "error"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if d := res.Ended.Sub(res.Started); d > time.Second {
					t.Errorf("fail_fast took %v: the slow sibling was not cancelled", d)
				}
				if !strings.Contains(res.Error.Message, "bad failed") {
					t.Errorf("error = %s", js(res.Error))
				}
			},
		},
		{
			name: "parallel_without_branches_outputs_empty_list",
			doc:  `{"name":"p","nodes":[{"node_id":"p","kind":"parallel"}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["p"]) != `[]` {
					t.Errorf("p = %s", js(res.Outputs["p"]))
				}
			},
		},
	})
}

func TestExecOnError(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "abort_fails_run_and_cancels_running_nodes",
			doc: `{"name":"e","nodes":[{"node_id":"r","kind":"tool","name":"echo"},{"node_id":"bad","kind":"tool","name":"fail","input":{"message":"kaput"}},{"node_id":"slow","kind":"tool","name":"delay","input":{"ms":5000}},
			{"node_id":"after","kind":"tool","name":"echo"}],"edges":[{"source":"r","target":"bad"},{"source":"r","target":"slow"},{"source":"bad","target":"after"}]}`,
			status: chain.StatusFailed,
			nodes:  map[string]string{"bad": "error", "slow": "error/upstream_stopped", "after": "skip/upstream_stopped"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Error.Code != engine.CodeNodeError || res.Error.NodeID != "bad" {
					t.Errorf("error = %s", js(res.Error))
				}
				var ne *engine.ChainNodeError
				if !errorsAs(res.Err(), &ne) || ne.NodeID != "bad" || !strings.Contains(ne.Error(), "kaput") {
					t.Errorf("Err() = %#v", res.Err())
				}
				if d := res.Ended.Sub(res.Started); d > time.Second {
					t.Errorf("abort took %v: the running node was not cancelled", d)
				}
			},
		},
		{
			name: "stop_is_an_alias_of_abort",
			doc: `{"name":"e","nodes":[{"node_id":"bad","kind":"tool","name":"fail","on_error":"stop"},{"node_id":"after","kind":"tool","name":"echo"}],
			"edges":[{"source":"bad","target":"after"}]}`,
			status: chain.StatusFailed,
			nodes:  map[string]string{"after": "skip/upstream_stopped"},
		},
		{
			name: "skip_records_skip_with_error_and_routes_with_null_output",
			doc: `{"name":"e","nodes":[{"node_id":"bad","kind":"tool","name":"fail","input":{"message":"kaput"},"on_error":"skip"},
			{"node_id":"isnull","kind":"tool","name":"echo","input":{"saw":"null"}},{"node_id":"other","kind":"tool","name":"echo"}],
			"edges":[{"source":"bad","target":"isnull","condition":"output == null"},{"source":"bad","target":"other"}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"bad": "skip/on_error_skip", "isnull": "done", "other": "skip/upstream_stopped"},
			check: func(t *testing.T, res *engine.Result, evs []engine.Event) {
				if res.Nodes["bad"].Error != "kaput" {
					t.Errorf("bad error = %q", res.Nodes["bad"].Error)
				}
				for _, e := range evs {
					if e.NodeID == "bad" && e.Phase == engine.PhaseSkip && e.Error != "kaput" {
						t.Errorf("skip event error = %q", e.Error)
					}
				}
			},
		},
		{
			name: "continue_records_error_and_routes_on",
			doc: `{"name":"e","nodes":[{"node_id":"bad","kind":"tool","name":"fail","on_error":"continue"},{"node_id":"next","kind":"tool","name":"echo","input":{"went":"on"}}],
			"edges":[{"source":"bad","target":"next"}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"bad": "error", "next": "done"},
		},
		{
			name: "handler_node_gets_error_scope_and_continues_the_flow",
			doc: `{"name":"e","nodes":[{"node_id":"bad","kind":"tool","name":"fail","input":{"message":"kaput"},"on_error":"fix"},
			{"node_id":"normal","kind":"tool","name":"echo"},
			{"node_id":"fix","kind":"tool","name":"echo","input_map":{"msg":"error.message","code":"error.code","node":"error.node_id","attempt":"error.attempt"}},
			{"node_id":"after_fix","kind":"tool","name":"echo"}],
			"edges":[{"source":"bad","target":"normal"},{"source":"fix","target":"after_fix"}]}`,
			status: chain.StatusPartial,
			nodes:  map[string]string{"bad": "error", "normal": "skip/upstream_stopped", "fix": "done", "after_fix": "done"},
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.Outputs["fix"]) != `{"attempt":1,"code":"chain_node_error","msg":"kaput","node":"bad"}` {
					t.Errorf("fix = %s", js(res.Outputs["fix"]))
				}
				if js(res.FinalOutput) != js(res.Outputs["fix"]) {
					t.Errorf("final = %s", js(res.FinalOutput))
				}
			},
		},
		{
			name:  "unused_handler_is_not_needed",
			doc:   `{"name":"e","nodes":[{"node_id":"good","kind":"tool","name":"echo","on_error":"fix"},{"node_id":"fix","kind":"tool","name":"echo"}]}`,
			nodes: map[string]string{"good": "done", "fix": "skip/not_needed"},
		},
	})
}

func TestExecRetry(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "retry_until_success",
			doc:  `{"name":"r","nodes":[{"node_id":"f","kind":"tool","name":"fail","input":{"until_attempt":3},"retry":{"max_attempts":3}}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Nodes["f"].Attempts != 3 || js(res.Outputs["f"]) != `{"attempt":3,"ok":true}` {
					t.Errorf("f = %s", js(res.Nodes["f"]))
				}
			},
		},
		{
			name:   "retry_exhausted_then_on_error",
			doc:    `{"name":"r","nodes":[{"node_id":"f","kind":"tool","name":"fail","input":{"until_attempt":5},"retry":{"max_attempts":2}}]}`,
			status: chain.StatusFailed,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if res.Nodes["f"].Attempts != 2 || !strings.Contains(res.Error.Message, "2 attempts") {
					t.Errorf("f = %s, err %s", js(res.Nodes["f"]), js(res.Error))
				}
			},
		},
		{
			name: "retry_exponential_backoff_waits",
			doc:  `{"name":"r","nodes":[{"node_id":"f","kind":"tool","name":"fail","input":{"until_attempt":3},"retry":{"max_attempts":3,"backoff":"exponential","initial_delay_seconds":0.02}}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if d := res.Nodes["f"].Ended.Sub(res.Nodes["f"].Started); d < 60*time.Millisecond {
					t.Errorf("exponential backoff 20ms+40ms took only %v", d)
				}
			},
		},
		{
			name: "retry_fixed_backoff_waits",
			doc:  `{"name":"r","nodes":[{"node_id":"f","kind":"tool","name":"fail","input":{"until_attempt":3},"retry":{"max_attempts":3,"backoff":"fixed","initial_delay_seconds":0.02}}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				d := res.Nodes["f"].Ended.Sub(res.Nodes["f"].Started)
				if d < 40*time.Millisecond || d > 400*time.Millisecond {
					t.Errorf("fixed backoff 20ms+20ms took %v", d)
				}
			},
		},
	})
}

func TestExecTimeouts(t *testing.T) {
	t.Run("node_timeout_fails_attempt_even_if_tool_ignores_ctx", func(t *testing.T) {
		h := newHarness(t)
		start := time.Now()
		res := h.run(`{"name":"t","nodes":[{"node_id":"b","kind":"tool","name":"block","timeout":0.05,"on_error":"continue"},{"node_id":"n","kind":"tool","name":"echo"}],"edges":[{"source":"b","target":"n"}]}`, nil)
		wantStatus(t, res, chain.StatusPartial)
		if res.Nodes["b"].Error != "timed out after 0.05s" {
			t.Errorf("error = %q", res.Nodes["b"].Error)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("took %v", d)
		}
	})
	t.Run("node_timeout_with_retry", func(t *testing.T) {
		h := newHarness(t)
		res := h.run(`{"name":"t","nodes":[{"node_id":"b","kind":"tool","name":"delay","input":{"ms":5000},"timeout":0.02,"retry":{"max_attempts":2}}]}`, nil)
		wantStatus(t, res, chain.StatusFailed)
		if res.Nodes["b"].Attempts != 2 || !strings.Contains(res.Error.Message, "timed out after 0.02s") {
			t.Errorf("b = %s, err = %s", js(res.Nodes["b"]), js(res.Error))
		}
	})
	for _, kind := range []string{"stuck_tool", "stuck_map_body"} {
		t.Run("chain_timeout_interrupts_"+kind, func(t *testing.T) {
			h := newHarness(t)
			doc := `{"name":"t","timeout":0.1,"nodes":[{"node_id":"b","kind":"tool","name":"block"},{"node_id":"after","kind":"tool","name":"echo"}],"edges":[{"source":"b","target":"after"}]}`
			if kind == "stuck_map_body" {
				doc = `{"name":"t","timeout":0.1,"nodes":[{"node_id":"m","kind":"map","items_path":"input.items","map_node":"b"},{"node_id":"b","kind":"tool","name":"block"},{"node_id":"after","kind":"tool","name":"echo"}],"edges":[{"source":"m","target":"after"}]}`
			}
			start := time.Now()
			done := make(chan *engine.Result, 1)
			go func() {
				res, _ := h.e.Run(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, doc)), map[string]any{"items": []any{1.0, 2.0}}, engine.RunOptions{})
				done <- res
			}()
			var res *engine.Result
			select {
			case res = <-done:
			case <-time.After(3 * time.Second):
				t.Fatal("Run did not return: a stuck node holds the run past its timeout")
			}
			if d := time.Since(start); d > 900*time.Millisecond {
				t.Errorf("Run returned after %v, want about timeout + a short grace", d)
			}
			wantStatus(t, res, chain.StatusTimedOut)
			if res.Error.Code != engine.CodeTimeout {
				t.Errorf("code = %s", res.Error.Code)
			}
			checkSeq(t, h.sink.Events())
			everyNodeEnded(t, mustDecode(t, doc), h.sink.Events())
		})
	}
	t.Run("caller_cancel_is_cancelled", func(t *testing.T) {
		h := newHarness(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(30*time.Millisecond, cancel)
		res := h.runCtx(ctx, `{"name":"t","nodes":[{"node_id":"d","kind":"tool","name":"delay","input":{"ms":5000}}]}`, nil)
		wantStatus(t, res, chain.StatusCancelled)
		if res.Error.Code != engine.CodeCancelled {
			t.Errorf("code = %s", res.Error.Code)
		}
	})
}

func TestExecEvents(t *testing.T) {
	t.Parallel()
	t.Run("seq_monotonic_from_1_and_every_node_ends", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"e","nodes":[{"node_id":"a","kind":"tool","name":"echo","routing":"all"},{"node_id":"m","kind":"map","items_path":"input.items","map_node":"body"},{"node_id":"body","kind":"tool","name":"echo"},
		{"node_id":"p","kind":"parallel","branches":["x","y"]},{"node_id":"x","kind":"tool","name":"echo"},{"node_id":"y","kind":"tool","name":"echo"},{"node_id":"z","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"m"},{"source":"a","target":"p"},{"source":"a","target":"z","condition":"input.never"}]}`
		res := h.run(doc, map[string]any{"items": []any{1.0, 2.0, 3.0}})
		wantStatus(t, res, chain.StatusCompleted)
		evs := h.sink.Events()
		checkSeq(t, evs)
		everyNodeEnded(t, mustDecode(t, doc), evs)
	})
	t.Run("failed_run_nodes_that_never_ran_skip_upstream_stopped", func(t *testing.T) {
		h := newHarness(t)
		doc := `{"name":"e","nodes":[{"node_id":"a","kind":"tool","name":"fail"},{"node_id":"b","kind":"tool","name":"echo"},{"node_id":"c","kind":"tool","name":"echo"}],
		"edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
		res := h.run(doc, nil)
		wantStatus(t, res, chain.StatusFailed)
		wantNodes(t, res, map[string]string{"a": "error", "b": "skip/upstream_stopped", "c": "skip/upstream_stopped"})
		everyNodeEnded(t, mustDecode(t, doc), h.sink.Events())
	})
}

func TestExecFinalOutput(t *testing.T) {
	t.Parallel()
	runRouteCases(t, []routeCase{
		{
			name: "last_terminal_in_topological_order_ties_by_declaration",
			doc: `{"name":"f","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"t1","kind":"tool","name":"echo","input":{"t":1}},{"node_id":"t2","kind":"tool","name":"echo","input":{"t":2}}],
			"edges":[{"source":"a","target":"t1"},{"source":"a","target":"t2"}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.FinalOutput) != `{"t":2}` {
					t.Errorf("final = %s", js(res.FinalOutput))
				}
			},
		},
		{
			name: "deeper_terminal_wins_over_earlier_declared",
			doc: `{"name":"f","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"t2","kind":"tool","name":"echo","input":{"t":2}},{"node_id":"mid","kind":"tool","name":"echo"},{"node_id":"t1","kind":"tool","name":"echo","input":{"t":1}}],
			"edges":[{"source":"a","target":"mid"},{"source":"mid","target":"t2"},{"source":"a","target":"t1"}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				// topological order with declaration ties: a, mid, t2, t1 (t2 is declared before t1)
				if js(res.FinalOutput) != `{"t":1}` {
					t.Errorf("final = %s", js(res.FinalOutput))
				}
			},
		},
		{
			name: "read_node_is_not_terminal",
			doc:  `{"name":"f","nodes":[{"node_id":"a","kind":"tool","name":"echo","input":{"v":"a"}},{"node_id":"b","kind":"tool","name":"echo","input_map":{"r":"a.output.v"}}]}`,
			check: func(t *testing.T, res *engine.Result, _ []engine.Event) {
				if js(res.FinalOutput) != `{"r":"a"}` {
					t.Errorf("final = %s", js(res.FinalOutput))
				}
			},
		},
	})
}

func TestExecValidationErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"v","nodes":[{"node_id":"a","kind":"tool","name":"echo"},{"node_id":"b","kind":"tool","name":"echo"}],"edges":[{"source":"a","target":"b"},{"source":"b","target":"a"}]}`
	res := h.run(doc, nil)
	wantStatus(t, res, chain.StatusFailed)
	if res.Error.Code != chain.CodeInvalid || len(res.Error.Issues) == 0 {
		t.Fatalf("error = %s", js(res.Error))
	}
	if evs := h.sink.Events(); len(evs) != 0 {
		t.Errorf("events = %v", phases(evs))
	}
	if res.NodesRun != 0 {
		t.Errorf("nodes_run = %d", res.NodesRun)
	}
	var ve *chain.ValidationError
	if !errorsAs(res.Err(), &ve) {
		t.Errorf("Err() = %#v", res.Err())
	}
}
