package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
)

const pinnedDoc = `{"name":"p","nodes":[
 {"node_id":"a","kind":"tool","name":"count","input":{"v":1},"set_state":{"seen":"output.v"}},
 {"node_id":"b","kind":"tool","name":"count","input_map":{"x":"a.output.v","s":"state.seen","q":"input.q"}},
 {"node_id":"c","kind":"tool","name":"count"},
 {"node_id":"d","kind":"tool","name":"count"}],
 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"},{"source":"c","target":"d"}]}`

// A node runs alone with the upstream outputs, input and state of an
// earlier run: nothing upstream or downstream executes, the pinned nodes
// are recorded reused, and the run's result is the node's output.
func TestRunNodeFromRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first := h.start(pinnedDoc, map[string]any{"q": "hi"})
	wantStatus(t, first, chain.StatusCompleted)
	before := len(h.sink.Events())

	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, pinnedDoc)), "b", engine.NodeRunSource{FromRun: first.RunID}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	if got := js(res.FinalOutput); got != `{"q":"hi","s":1,"x":1}` {
		t.Errorf("final output = %s; want b's output from a's pinned output, the run's input and state", got)
	}
	if h.cnt.get("a") != 1 || h.cnt.get("b") != 2 || h.cnt.get("c") != 1 || h.cnt.get("d") != 1 {
		t.Errorf("executions a=%d b=%d c=%d d=%d; want only b again", h.cnt.get("a"), h.cnt.get("b"), h.cnt.get("c"), h.cnt.get("d"))
	}
	if res.NodesRun != 1 {
		t.Errorf("nodes_run = %d, want 1", res.NodesRun)
	}
	var phases []string
	for _, ev := range h.sink.Events()[before:] {
		phases = append(phases, ev.NodeID+":"+string(ev.Phase)+map[bool]string{true: "(reused)"}[ev.Reused])
	}
	if got := strings.Join(phases, " "); got != "a:done(reused) b:start b:done" {
		t.Errorf("events = %s", got)
	}
	if _, ok := res.Nodes["c"]; ok {
		t.Errorf("c has a result in a node run: %s", js(res.Nodes["c"]))
	}
	log, err := h.cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	s := log[0].Start
	if s.Pinned == nil || s.Pinned.NodeID != "b" || s.Pinned.FromRun != first.RunID || js(s.Pinned.Activators) != `["a"]` || s.ParentRunID != first.RunID {
		t.Errorf("start record = %s", js(s))
	}
	// b's edge to c is still decided and recorded: what would fire.
	if got := res.Nodes["b"]; got == nil || got.Reused {
		t.Errorf("b = %s", js(got))
	}
}

// Explicit pinned outputs (a test's mocks) stand in for an earlier run, and
// win over it.
func TestRunNodePinnedMap(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, pinnedDoc)), "b",
		engine.NodeRunSource{Pinned: map[string]any{"a": map[string]any{"v": 7}}, Input: map[string]any{"q": "x"}, State: map[string]any{"seen": "s"}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	if got := js(res.FinalOutput); got != `{"q":"x","s":"s","x":7}` {
		t.Errorf("final output = %s", got)
	}
	if h.cnt.get("a") != 0 {
		t.Errorf("a ran %d times", h.cnt.get("a"))
	}
	first := h.start(pinnedDoc, nil)
	res, err = h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, pinnedDoc)), "b",
		engine.NodeRunSource{FromRun: first.RunID, Pinned: map[string]any{"a": map[string]any{"v": 9}}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(res.FinalOutput); got != `{"q":null,"s":1,"x":9}` {
		t.Errorf("pinned over the run: final output = %s", got)
	}
}

// Missing upstream data is refused before anything runs, naming the node
// and what it lacks; so are unknown nodes and nodes that run inside another.
func TestRunNodeRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	failing := `{"name":"f","nodes":[
	 {"node_id":"a","kind":"tool","name":"flagfail"},
	 {"node_id":"b","kind":"tool","name":"count"},
	 {"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	 {"node_id":"body","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"b"}]}`
	h.flag.Store(true)
	failed := h.start(failing, nil)
	wantStatus(t, failed, chain.StatusFailed)
	h.flag.Store(false)
	doc := mustDecode(t, failing)
	cases := []struct {
		name   string
		node   string
		src    engine.NodeRunSource
		reason string
		msg    string
	}{
		{"run lacks the output", "b", engine.NodeRunSource{FromRun: failed.RunID}, engine.NodeRunMissingUpstream,
			`node "b" needs the output of "a": run ` + failed.RunID + ` has none`},
		{"nothing given", "b", engine.NodeRunSource{}, engine.NodeRunMissingUpstream,
			`node "b" needs the output of "a": no earlier run was chosen and nothing is pinned`},
		{"pinned lacks it", "b", engine.NodeRunSource{Pinned: map[string]any{"m": 1}}, engine.NodeRunMissingUpstream,
			`node "b" needs the output of "a": the pinned outputs have none`},
		{"unknown node", "zz", engine.NodeRunSource{}, engine.NodeRunUnknownNode, `node "zz" is not in the chain`},
		{"unknown pinned node", "b", engine.NodeRunSource{Pinned: map[string]any{"nope": 1}}, engine.NodeRunUnknownPinned, `pinned.nope: node "nope" is not in the chain`},
		{"map body", "body", engine.NodeRunSource{}, engine.NodeRunAttached, `node "body" runs inside "m"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(h.sink.Events())
			_, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, doc), tc.node, tc.src, engine.RunOptions{})
			var nre *engine.NodeRunError
			if !errors.As(err, &nre) || nre.Reason != tc.reason || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v; want %s containing %q", err, tc.reason, tc.msg)
			}
			if len(h.sink.Events()) != before {
				t.Errorf("a refused node run emitted events")
			}
		})
	}
	_, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, doc), "b", engine.NodeRunSource{FromRun: "no-such-run"}, engine.RunOptions{})
	var cpe *engine.ChainCheckpointError
	if !errors.As(err, &cpe) {
		t.Errorf("unknown run: err = %v, want a checkpoint error", err)
	}
	// A root needs nothing: it runs with the input given.
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, doc), "a", engine.NodeRunSource{Input: map[string]any{"k": 1}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(res.FinalOutput); got != `{"in":{"k":1},"ok":true}` {
		t.Errorf("root node run: %s", got)
	}
}

// A node the source run never reached runs as if its edges had fired: a
// branch not taken there can be tried with the data of that run.
func TestRunNodeNotReachedInSource(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"br","nodes":[
	 {"node_id":"a","kind":"tool","name":"echo","input":{"n":3}},
	 {"node_id":"big","kind":"tool","name":"count","input_map":{"n":"a.output.n"}},
	 {"node_id":"small","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"big","condition":"output.n > ` + "`5`" + `"},{"source":"a","target":"small","default":true}]}`
	first := h.start(doc, nil)
	wantStatus(t, first, chain.StatusCompleted)
	if first.Nodes["big"].Status != engine.PhaseSkip {
		t.Fatalf("big = %s; want skipped in the source run", first.Nodes["big"].Status)
	}
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, doc)), "big", engine.NodeRunSource{FromRun: first.RunID}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(res.FinalOutput); got != `{"n":3}` {
		t.Errorf("big = %s", got)
	}
}

// A node run alone that fails is a failed run; resuming it runs the node
// again with the same pinned data, and still nothing else.
func TestRunNodeFailsAndResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"fr","nodes":[
	 {"node_id":"a","kind":"tool","name":"echo","input":{"n":3}},
	 {"node_id":"b","kind":"tool","name":"flagfail"},
	 {"node_id":"c","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"b"},{"source":"b","target":"c"}]}`
	h.flag.Store(true)
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, mustDecode(t, doc)), "b", engine.NodeRunSource{Pinned: map[string]any{"a": map[string]any{"n": 4}}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusFailed)
	if res.Error == nil || res.Error.NodeID != "b" {
		t.Errorf("error = %s", js(res.Error))
	}
	h.flag.Store(false)
	res2, err := h.resume(res.RunID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res2, chain.StatusCompleted)
	if got := js(res2.FinalOutput); got != `{"in":{"n":4},"ok":true}` {
		t.Errorf("after resume: %s", got)
	}
	if h.cnt.get("c") != 0 {
		t.Errorf("c ran %d times after the resume", h.cnt.get("c"))
	}
}

// Re-running on the current version reuses only the upstream nodes that
// are unchanged and read only unchanged nodes; a changed node and
// everything that takes data from it run again.
func TestRerunOnChangedVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v1 := `{"name":"v","nodes":[
	 {"node_id":"a","kind":"tool","name":"count","input":{"v":1}},
	 {"node_id":"b","kind":"tool","name":"count","input":{"w":1}},
	 {"node_id":"c","kind":"tool","name":"count"},
	 {"node_id":"j","kind":"tool","name":"count","input_map":{"c":"c.output","b":"b.output"}},
	 {"node_id":"z","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"c"},{"source":"b","target":"j"},{"source":"c","target":"j"},{"source":"j","target":"z"}]}`
	// v2: a's input changed (so c, which it feeds, is stale too); b only
	// moved and was relabelled; a node x was added and removed nodes are gone.
	v2 := `{"name":"v","nodes":[
	 {"node_id":"a","kind":"tool","name":"count","input":{"v":2}},
	 {"node_id":"b","kind":"tool","name":"count","input":{"w":1},"label":"B","position":{"x":5,"y":9}},
	 {"node_id":"c","kind":"tool","name":"count"},
	 {"node_id":"j","kind":"tool","name":"count","input_map":{"c":"c.output","b":"b.output"}},
	 {"node_id":"z","kind":"tool","name":"count"}],
	 "edges":[{"source":"a","target":"c"},{"source":"b","target":"j"},{"source":"c","target":"j"},{"source":"j","target":"z"}]}`
	first := h.start(v1, nil)
	wantStatus(t, first, chain.StatusCompleted)
	res, err := h.e.RerunOn(context.Background(), first.RunID, "z", enginetest.PlanOf(h.e, mustDecode(t, v2)), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	got := map[string]bool{}
	for id, n := range res.Nodes {
		got[id] = n.Reused
	}
	want := map[string]bool{"a": false, "b": true, "c": false, "j": false, "z": false}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s reused = %v, want %v", id, got[id], w)
		}
	}
	if js(res.Outputs["j"]) != `{"b":{"w":1},"c":{"v":2}}` {
		t.Errorf("j = %s; want the new a's value through c", js(res.Outputs["j"]))
	}
	// The run's own version keeps everything upstream.
	res, err = h.e.RerunOn(context.Background(), first.RunID, "z", nil, nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c", "j"} {
		if !res.Nodes[id].Reused {
			t.Errorf("own version: %s not reused", id)
		}
	}
	// An edge into a node that changed makes it run again.
	v3 := strings.Replace(v1, `{"source":"a","target":"c"}`, `{"source":"a","target":"c","condition":"output.v > `+"`0`"+`"}`, 1)
	res, err = h.e.RerunOn(context.Background(), first.RunID, "z", enginetest.PlanOf(h.e, mustDecode(t, v3)), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Nodes["a"].Reused || res.Nodes["c"].Reused || res.Nodes["j"].Reused || !res.Nodes["b"].Reused {
		t.Errorf("changed edge a→c: reused a=%v b=%v c=%v j=%v", res.Nodes["a"].Reused, res.Nodes["b"].Reused, res.Nodes["c"].Reused, res.Nodes["j"].Reused)
	}
	// The start node must be in the chosen version.
	_, err = h.e.RerunOn(context.Background(), first.RunID, "gone", enginetest.PlanOf(h.e, mustDecode(t, v2)), nil, engine.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), `node "gone" is not in the chosen version`) {
		t.Errorf("err = %v", err)
	}
}

// A router run alone records what it matched and which edges it would
// fire, and runs none of their targets; a node on a loop runs once.
func TestRunNodeRouterAndLoop(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := `{"name":"rl","nodes":[
	 {"node_id":"a","kind":"tool","name":"echo","input":{"n":3}},
	 {"node_id":"r","kind":"condition","cases":[{"handle":"big","when":"output.n > ` + "`5`" + `"}]},
	 {"node_id":"big","kind":"tool","name":"count"},
	 {"node_id":"small","kind":"tool","name":"count"},
	 {"node_id":"l","kind":"tool","name":"inc","input_map":{"n":"output.n"}}],
	 "edges":[{"source":"a","target":"r"},{"id":"to-big","source":"r","target":"big","label":"big"},{"id":"to-small","source":"r","target":"small","label":"default"},
	  {"source":"small","target":"l"},{"source":"l","target":"l","max_iterations":3}]}`
	c := mustDecode(t, doc)
	before := len(h.sink.Events())
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, c), "r", engine.NodeRunSource{Pinned: map[string]any{"a": map[string]any{"n": 9}}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, res, chain.StatusCompleted)
	if res.Nodes["r"].Matched != "big" {
		t.Errorf("matched = %q, want big", res.Nodes["r"].Matched)
	}
	var fired []string
	for _, ev := range h.sink.Events()[before:] {
		if ev.NodeID == "r" && ev.Phase == engine.PhaseDone {
			fired = ev.Edges
		}
		if ev.NodeID == "big" || ev.NodeID == "small" {
			t.Errorf("a target of the router has an event: %s %s", ev.NodeID, ev.Phase)
		}
	}
	if js(fired) != `["to-big"]` {
		t.Errorf("r's done event fired %s; want the edge it would take", js(fired))
	}
	res, err = h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, c), "l", engine.NodeRunSource{Pinned: map[string]any{"small": map[string]any{"n": 1}}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NodesRun != 1 || js(res.FinalOutput) != `{"n":2}` {
		t.Errorf("loop node run alone: nodes_run %d, output %s; want one pass", res.NodesRun, js(res.FinalOutput))
	}
}

// A map node run alone runs its body for each item; what the body reads
// must be pinned too, and the refusal names it.
func TestRunNodeMapBodyReads(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	doc := mustDecode(t, `{"name":"mb","nodes":[
	 {"node_id":"cfg","kind":"tool","name":"echo","input":{"k":10}},
	 {"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	 {"node_id":"body","kind":"tool","name":"echo","input_map":{"v":"item","k":"cfg.output.k"}}]}`)
	_, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, doc), "m", engine.NodeRunSource{Input: map[string]any{"xs": []any{1, 2}}}, engine.RunOptions{})
	var nre *engine.NodeRunError
	if !errors.As(err, &nre) || !strings.Contains(err.Error(), `node "m" needs the output of "cfg"`) {
		t.Fatalf("err = %v; want cfg named", err)
	}
	res, err := h.e.RunNode(context.Background(), enginetest.PlanOf(h.e, doc), "m", engine.NodeRunSource{Input: map[string]any{"xs": []any{1, 2}}, Pinned: map[string]any{"cfg": map[string]any{"k": 7}}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(res.FinalOutput); got != `[{"k":7,"v":1},{"k":7,"v":2}]` {
		t.Errorf("map run alone = %s", got)
	}
}

// A map node is reused on a new version only when its body is unchanged.
func TestRerunOnChangedMapBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v1 := `{"name":"mb","nodes":[
	 {"node_id":"m","kind":"map","items_path":"input.xs","map_node":"body"},
	 {"node_id":"body","kind":"tool","name":"echo","input_map":{"v":"item"}},
	 {"node_id":"z","kind":"tool","name":"count"}],
	 "edges":[{"source":"m","target":"z"}]}`
	first := h.start(v1, map[string]any{"xs": []any{1}})
	wantStatus(t, first, chain.StatusCompleted)
	res, err := h.e.RerunOn(context.Background(), first.RunID, "z", enginetest.PlanOf(h.e, mustDecode(t, v1)), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Nodes["m"].Reused {
		t.Errorf("unchanged map not reused")
	}
	v2 := strings.Replace(v1, `{"v":"item"}`, `{"w":"item"}`, 1)
	res, err = h.e.RerunOn(context.Background(), first.RunID, "z", enginetest.PlanOf(h.e, mustDecode(t, v2)), nil, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Nodes["m"].Reused || js(res.Outputs["z"]) != `{"value":[{"w":1}]}` {
		t.Errorf("map with a changed body: reused %v, z = %s", res.Nodes["m"].Reused, js(res.Outputs["z"]))
	}
}
