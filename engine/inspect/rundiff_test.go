package inspect_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/enginetest"
	"github.com/chainstudio/studio/engine/inspect"
	"github.com/chainstudio/studio/examples"
)

// sideOf runs doc with input and reads the run back as a reader of its
// checkpoint log does (the web layer reads stored runs the same way).
func sideOf(t *testing.T, doc string, input map[string]any) *inspect.RunSide {
	t.Helper()
	e, _, cp := newEngine(t)
	res, err := e.Run(context.Background(), enginetest.PlanOf(e, enginetest.MustDecode(t, doc)), input, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log, err := cp.Load(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := engine.FoldNodeResults(log)
	if err != nil {
		t.Fatal(err)
	}
	return &inspect.RunSide{Chain: log[0].Start.Chain, Input: input, Status: res.Status, Error: res.Error, FinalOutput: res.FinalOutput,
		DurationMS: res.DurationMS, Nodes: nodes, Fired: inspect.FiredEdges(log)}
}

const branchDoc = `{"name":"branch","nodes":[
	{"node_id":"fetch","kind":"tool","name":"echo","input_map":{"items":"input.items"}},
	{"node_id":"check","kind":"branch","condition":"length(output.items) > ` + "`0`" + `","true_node":"process","false_node":"skip_log"},
	{"node_id":"process","kind":"tool","name":"transform","input":{"expression":"{count: length(items)}"},"input_map":{"data":"fetch.output"}},
	{"node_id":"skip_log","kind":"tool","name":"echo","input":{"message":"no items"}},
	{"node_id":"report","kind":"tool","name":"echo"}],
	"edges":[{"source":"fetch","target":"check"},{"source":"process","target":"report"},{"source":"skip_log","target":"report"}]}`

func nodeDiff(t *testing.T, d *inspect.RunDiff, id string) inspect.NodeDiff {
	t.Helper()
	for _, n := range d.Nodes {
		if n.NodeID == id {
			return n
		}
	}
	t.Fatalf("no node %s in the comparison: %s", id, enginetest.JSON(d))
	return inspect.NodeDiff{}
}

func order(d *inspect.RunDiff) []string {
	var out []string
	for _, n := range d.Nodes {
		out = append(out, n.NodeID)
	}
	return out
}

func TestCompareRunsOfTheSameRunFindsNothing(t *testing.T) {
	t.Parallel()
	s := sideOf(t, branchDoc, map[string]any{"items": []any{1.0, 2.0}})
	d := inspect.CompareRuns(s, s, inspect.RunDiffLimits{})
	if !d.Same || d.Divergence != nil || d.Differing != 0 || d.StatusChanged || d.FinalOutput.Changed {
		t.Fatalf("a run compared with itself differs: %s", enginetest.JSON(d))
	}
	if got := order(d); !reflect.DeepEqual(got, []string{"fetch", "check", "process", "skip_log", "report"}) {
		t.Fatalf("order %v", got)
	}
	for _, n := range d.Nodes {
		if n.Change != inspect.ChangeSame || n.Route != nil || n.Output != nil {
			t.Fatalf("node %s differs from itself: %s", n.NodeID, enginetest.JSON(n))
		}
		if n.A.Status == string(engine.PhaseDone) && (n.A.DurationMS == nil || n.DurationDeltaMS == nil || *n.DurationDeltaMS != 0) {
			t.Fatalf("node %s: a done node has a duration and a zero delta: %s", n.NodeID, enginetest.JSON(n))
		}
	}
	// Two runs with the same input take the same path: only timings differ.
	s2 := sideOf(t, branchDoc, map[string]any{"items": []any{1.0, 2.0}})
	if d := inspect.CompareRuns(s, s2, inspect.RunDiffLimits{}); !d.Same {
		t.Fatalf("two identical runs differ: %s", enginetest.JSON(d))
	}
}

// Two real runs that take the two ways of a branch: the first difference is
// the output of the first node, the branch's route differs, and the two
// arms swap between done and skipped.
func TestCompareRunsOfTwoBranches(t *testing.T) {
	t.Parallel()
	a := sideOf(t, branchDoc, map[string]any{"items": []any{1.0, 2.0}})
	b := sideOf(t, branchDoc, map[string]any{"items": []any{}})
	d := inspect.CompareRuns(a, b, inspect.RunDiffLimits{})
	if d.Same || d.Divergence == nil || d.Divergence.NodeID != "fetch" || !reflect.DeepEqual(d.Divergence.What, []string{"output"}) {
		t.Fatalf("divergence: %s", enginetest.JSON(d.Divergence))
	}
	fetch := nodeDiff(t, d, "fetch")
	if want := []inspect.PathChange{{Path: "items[0]", Op: "removed", Old: json.RawMessage("1")}, {Path: "items[1]", Op: "removed", Old: json.RawMessage("2")}}; !reflect.DeepEqual(fetch.Output.Paths, want) {
		t.Fatalf("fetch output paths %s", enginetest.JSON(fetch.Output.Paths))
	}
	check := nodeDiff(t, d, "check")
	if check.Route == nil || !reflect.DeepEqual(check.Route.OutA, []string{"check->process"}) || !reflect.DeepEqual(check.Route.OutB, []string{"check->skip_log"}) ||
		!reflect.DeepEqual(check.Route.InA, []string{"fetch->check"}) {
		t.Fatalf("check route: %s", enginetest.JSON(check))
	}
	if !strings.Contains(strings.Join(check.What, ","), "route") {
		t.Fatalf("check what: %v", check.What)
	}
	process, skip := nodeDiff(t, d, "process"), nodeDiff(t, d, "skip_log")
	if process.A.Status != "done" || process.B.Status != "skip" || process.B.Reason != engine.ReasonBranchNotTaken || process.Change != inspect.ChangeChanged {
		t.Fatalf("process: %s", enginetest.JSON(process))
	}
	if skip.A.Status != "skip" || skip.B.Status != "done" || !reflect.DeepEqual(skip.What, []string{"status", "route", "output"}) {
		t.Fatalf("skip_log: %s", enginetest.JSON(skip))
	}
	if skip.DurationDeltaMS != nil || skip.B.DurationMS == nil || skip.A.DurationMS != nil {
		t.Fatalf("a skipped node has no duration, so no delta: %s", enginetest.JSON(skip))
	}
	report := nodeDiff(t, d, "report")
	if report.Route == nil || !reflect.DeepEqual(report.Route.InA, []string{"process->report"}) || !reflect.DeepEqual(report.Route.InB, []string{"skip_log->report"}) {
		t.Fatalf("report's incoming route: %s", enginetest.JSON(report))
	}
	if !d.FinalOutput.Changed || d.StatusChanged || d.Differing != 5 {
		t.Fatalf("final output changed, status did not, all five nodes differ: %s", enginetest.JSON(d))
	}
}

// side builds a run by hand: the table tests below change one thing at a time.
type nodeSpec struct {
	id, status, reason, err string
	out                     any
	ms                      int
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func side(c *chain.Chain, fired map[string][]string, specs ...nodeSpec) *inspect.RunSide {
	s := &inspect.RunSide{Chain: c, Status: chain.StatusCompleted, Fired: fired}
	for _, n := range specs {
		nr := engine.NodeResult{NodeID: n.id, Status: engine.Phase(n.status), Reason: n.reason, Error: n.err, Output: n.out}
		if n.status == "done" || n.status == "error" {
			nr.Started, nr.Ended = t0, t0.Add(time.Duration(n.ms)*time.Millisecond)
		}
		s.Nodes = append(s.Nodes, nr)
	}
	return s
}

// chainOf is a chain of echo nodes (ids separated by spaces) and edges
// written source->target, which is also their id.
func chainOf(ids string, edges ...string) *chain.Chain {
	c := &chain.Chain{Name: "c"}
	for _, id := range strings.Fields(ids) {
		c.Nodes = append(c.Nodes, chain.Node{ID: id, Kind: chain.KindTool, Name: "echo"})
	}
	for _, e := range edges {
		src, dst, _ := strings.Cut(e, "->")
		c.Edges = append(c.Edges, chain.Edge{ID: e, Source: src, Target: dst})
	}
	return c
}

func TestCompareRunsTable(t *testing.T) {
	t.Parallel()
	line := chainOf("x y z", "x->y", "y->z")
	lineFired := map[string][]string{"x": {"x->y"}, "y": {"y->z"}}
	router := chainOf("r p q", "r->p", "r->q")
	cases := []struct {
		name       string
		a, b       *inspect.RunSide
		divergence string   // "" = none
		what       []string // the divergence's
		check      func(t *testing.T, d *inspect.RunDiff)
	}{
		{
			name:       "status only: the same output, one run failed the node",
			a:          side(line, lineFired, nodeSpec{id: "x", status: "done", out: 1.0}, nodeSpec{id: "y", status: "done"}, nodeSpec{id: "z", status: "done"}),
			b:          side(line, map[string][]string{"x": {"x->y"}}, nodeSpec{id: "x", status: "done", out: 1.0}, nodeSpec{id: "y", status: "error", err: "boom"}, nodeSpec{id: "z", status: "skip", reason: "upstream_stopped"}),
			divergence: "y", what: []string{"status", "error", "route"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				y := nodeDiff(t, d, "y")
				if y.B.Error != "boom" || y.A.Error != "" || !reflect.DeepEqual(y.Route.OutA, []string{"y->z"}) || len(y.Route.OutB) != 0 {
					t.Fatalf("y: %s", enginetest.JSON(y))
				}
				if y.Output != nil {
					t.Fatalf("both outputs are null: no output difference: %s", enginetest.JSON(y))
				}
			},
		},
		{
			name:       "skip reason alone is a status difference",
			a:          side(line, nil, nodeSpec{id: "x", status: "skip", reason: "condition_false"}),
			b:          side(line, nil, nodeSpec{id: "x", status: "skip", reason: "not_needed"}),
			divergence: "x", what: []string{"status"},
		},
		{
			name:       "route only: the router's output is the same, the edge it took is not",
			a:          side(router, map[string][]string{"r": {"r->p"}}, nodeSpec{id: "r", status: "done", out: "in"}),
			b:          side(router, map[string][]string{"r": {"r->q"}}, nodeSpec{id: "r", status: "done", out: "in"}),
			divergence: "r", what: []string{"route"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				p := nodeDiff(t, d, "p")
				if !reflect.DeepEqual(p.Route.InA, []string{"r->p"}) || len(p.Route.InB) != 0 || !reflect.DeepEqual(p.What, []string{"route"}) {
					t.Fatalf("p's incoming route: %s", enginetest.JSON(p))
				}
			},
		},
		{
			name: "output: nested paths added, removed and changed, in key order",
			a: side(line, nil, nodeSpec{id: "x", status: "done", out: map[string]any{
				"same": 1.0, "gone": true, "list": []any{1.0, 2.0, 3.0}, "deep": map[string]any{"v": "old"}, "a b": 1.0, "typ": "1"}}),
			b: side(line, nil, nodeSpec{id: "x", status: "done", out: map[string]any{
				"same": 1.0, "new": nil, "list": []any{1.0, 5.0}, "deep": map[string]any{"v": "new"}, "a b": 2.0, "typ": 1.0}}),
			divergence: "x", what: []string{"output"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				want := []inspect.PathChange{
					{Path: `"a b"`, Op: "changed", Old: json.RawMessage("1"), New: json.RawMessage("2")},
					{Path: "deep.v", Op: "changed", Old: json.RawMessage(`"old"`), New: json.RawMessage(`"new"`)},
					{Path: "gone", Op: "removed", Old: json.RawMessage("true")},
					{Path: "list[1]", Op: "changed", Old: json.RawMessage("2"), New: json.RawMessage("5")},
					{Path: "list[2]", Op: "removed", Old: json.RawMessage("3")},
					{Path: "new", Op: "added", New: json.RawMessage("null")},
					{Path: "typ", Op: "changed", Old: json.RawMessage(`"1"`), New: json.RawMessage("1")},
				}
				if got := nodeDiff(t, d, "x").Output.Paths; !reflect.DeepEqual(got, want) {
					t.Fatalf("paths\n got %s\nwant %s", enginetest.JSON(got), enginetest.JSON(want))
				}
			},
		},
		{
			name:       "a whole output replaced by another type is the path @",
			a:          side(line, nil, nodeSpec{id: "x", status: "done", out: []any{1.0}}),
			b:          side(line, nil, nodeSpec{id: "x", status: "done", out: "text"}),
			divergence: "x", what: []string{"output"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				p := nodeDiff(t, d, "x").Output.Paths
				if len(p) != 1 || p[0].Path != "@" || string(p[0].Old) != "[1]" || string(p[0].New) != `"text"` {
					t.Fatalf("paths %s", enginetest.JSON(p))
				}
			},
		},
		{
			name: "Go values from an in-memory run compare as JSON",
			a:    side(line, nil, nodeSpec{id: "x", status: "done", out: map[string]any{"n": 1, "l": []string{"a"}}}),
			b:    side(line, nil, nodeSpec{id: "x", status: "done", out: map[string]any{"n": 1.0, "l": []any{"a"}}}),
		},
		{
			name: "duration only: the runs are the same, the delta is reported",
			a:    side(line, nil, nodeSpec{id: "x", status: "done", ms: 10}),
			b:    side(line, nil, nodeSpec{id: "x", status: "done", ms: 25}),
			check: func(t *testing.T, d *inspect.RunDiff) {
				x := nodeDiff(t, d, "x")
				if !d.Same || x.Change != "same" || x.DurationDeltaMS == nil || *x.DurationDeltaMS != 15 || *x.A.DurationMS != 10 || *x.B.DurationMS != 25 {
					t.Fatalf("x: %s", enginetest.JSON(x))
				}
			},
		},
		{
			name: "the first divergence is topological, not alphabetical",
			a: side(chainOf("b a", "b->a"), nil,
				nodeSpec{id: "b", status: "done", out: 1.0}, nodeSpec{id: "a", status: "done", out: 1.0}),
			b: side(chainOf("b a", "b->a"), nil,
				nodeSpec{id: "b", status: "done", out: 2.0}, nodeSpec{id: "a", status: "done", out: 2.0}),
			divergence: "b", what: []string{"output"},
		},
		{
			name: "ties in topological order go by id",
			a: side(chainOf("r m k", "r->m", "r->k"), nil,
				nodeSpec{id: "r", status: "done"}, nodeSpec{id: "m", status: "done", out: 1.0}, nodeSpec{id: "k", status: "done", out: 1.0}),
			b: side(chainOf("r m k", "r->m", "r->k"), nil,
				nodeSpec{id: "r", status: "done"}, nodeSpec{id: "m", status: "done", out: 2.0}, nodeSpec{id: "k", status: "done", out: 2.0}),
			divergence: "k", what: []string{"output"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				if got := order(d); !reflect.DeepEqual(got, []string{"r", "k", "m"}) {
					t.Fatalf("order %v", got)
				}
			},
		},
		{
			name: "versions: a node added and one removed; the added one ran",
			a: side(chainOf("x y old", "x->y", "y->old"), map[string][]string{"x": {"x->y"}, "y": {"y->old"}},
				nodeSpec{id: "x", status: "done"}, nodeSpec{id: "y", status: "done"}, nodeSpec{id: "old", status: "skip", reason: "condition_false"}),
			b: side(chainOf("x new y", "x->new", "new->y"), map[string][]string{"x": {"x->new"}, "new": {"new->y"}},
				nodeSpec{id: "x", status: "done"}, nodeSpec{id: "new", status: "done"}, nodeSpec{id: "y", status: "done"}),
			divergence: "x", what: []string{"route"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				if !reflect.DeepEqual(d.NodesAdded, []string{"new"}) || !reflect.DeepEqual(d.NodesRemoved, []string{"old"}) {
					t.Fatalf("added %v removed %v", d.NodesAdded, d.NodesRemoved)
				}
				if got := order(d); !reflect.DeepEqual(got, []string{"x", "new", "y", "old"}) {
					t.Fatalf("order over both chains %v", got)
				}
				n, o := nodeDiff(t, d, "new"), nodeDiff(t, d, "old")
				if n.Change != "added" || n.A != nil || n.B.Status != "done" || !reflect.DeepEqual(n.What, []string{"added"}) {
					t.Fatalf("new: %s", enginetest.JSON(n))
				}
				if o.Change != "removed" || o.B != nil || len(o.What) != 0 {
					t.Fatalf("old was skipped: removed, but not a divergence: %s", enginetest.JSON(o))
				}
			},
		},
		{
			name: "versions: an added node that ran is the divergence when it comes first",
			a:    side(chainOf("y"), nil, nodeSpec{id: "y", status: "done"}),
			b: side(chainOf("new y", "new->y"), map[string][]string{"new": {"new->y"}},
				nodeSpec{id: "new", status: "done"}, nodeSpec{id: "y", status: "done"}),
			divergence: "new", what: []string{"added"},
		},
		{
			name: "a node edited between versions says which fields",
			a:    side(&chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "x", Kind: chain.KindTool, Name: "echo", Position: &chain.Position{X: 1}}}}, nil, nodeSpec{id: "x", status: "done"}),
			b: side(&chain.Chain{Name: "c", Nodes: []chain.Node{{ID: "x", Kind: chain.KindTool, Name: "echo", Label: "X",
				Position: &chain.Position{X: 2}, Input: map[string]any{"k": 1.0}}}}, nil, nodeSpec{id: "x", status: "done"}),
			check: func(t *testing.T, d *inspect.RunDiff) {
				if x := nodeDiff(t, d, "x"); !reflect.DeepEqual(x.Edited, []string{"input", "label"}) || x.Change != "same" {
					t.Fatalf("edited: %s", enginetest.JSON(x))
				}
			},
		},
		{
			name:       "a node not reached in one run",
			a:          side(line, nil, nodeSpec{id: "x", status: "done"}),
			b:          side(line, nil),
			divergence: "x", what: []string{"status"},
			check: func(t *testing.T, d *inspect.RunDiff) {
				if x := nodeDiff(t, d, "x"); x.B.Status != inspect.StatusNotReached {
					t.Fatalf("x: %s", enginetest.JSON(x))
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := inspect.CompareRuns(tc.a, tc.b, inspect.RunDiffLimits{})
			got := ""
			if d.Divergence != nil {
				got = d.Divergence.NodeID
			}
			if got != tc.divergence {
				t.Fatalf("divergence %q, want %q: %s", got, tc.divergence, enginetest.JSON(d))
			}
			if d.Divergence != nil && !reflect.DeepEqual(d.Divergence.What, tc.what) {
				t.Fatalf("divergence at %s is about %v, want %v", got, d.Divergence.What, tc.what)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
			// Deterministic: the same comparison encodes to the same bytes.
			if again := inspect.CompareRuns(tc.a, tc.b, inspect.RunDiffLimits{}); enginetest.JSON(again) != enginetest.JSON(d) {
				t.Fatalf("two comparisons differ:\n%s\n%s", enginetest.JSON(d), enginetest.JSON(again))
			}
		})
	}
}

func TestCompareRunsRunLevel(t *testing.T) {
	t.Parallel()
	c := chainOf("x")
	a := side(c, nil, nodeSpec{id: "x", status: "done"})
	b := side(c, nil, nodeSpec{id: "x", status: "done"})
	a.FinalOutput = map[string]any{"ok": true}
	b.FinalOutput = map[string]any{"ok": false}
	b.Status, b.Error = chain.StatusFailed, &engine.RunError{Code: "node_failed", Message: "x failed"}
	d := inspect.CompareRuns(a, b, inspect.RunDiffLimits{})
	if d.Same || !d.StatusChanged || d.StatusA != "completed" || d.StatusB != "failed" || d.ErrorA != nil || d.ErrorB.Code != "node_failed" {
		t.Fatalf("run status: %s", enginetest.JSON(d))
	}
	if p := d.FinalOutput.Paths; len(p) != 1 || p[0].Path != "ok" || string(p[0].Old) != "true" || string(p[0].New) != "false" {
		t.Fatalf("final output: %s", enginetest.JSON(d.FinalOutput))
	}
	if d.Divergence != nil {
		t.Fatalf("no node differs, so no divergence: %s", enginetest.JSON(d.Divergence))
	}
}

// Two runs started with different inputs differ, even when every node and
// the final output agree: the input is compared first, path by path.
func TestCompareRunsInputs(t *testing.T) {
	t.Parallel()
	c := chainOf("x")
	a := side(c, nil, nodeSpec{id: "x", status: "done"})
	b := side(c, nil, nodeSpec{id: "x", status: "done"})
	a.Input = map[string]any{"n": 1.0, "keep": "same"}
	b.Input = map[string]any{"n": 2.0, "keep": "same", "extra": true}
	d := inspect.CompareRuns(a, b, inspect.RunDiffLimits{})
	if d.Same || !d.Input.Changed {
		t.Fatalf("different inputs compare as the same: %s", enginetest.JSON(d))
	}
	got := map[string]string{}
	for _, p := range d.Input.Paths {
		got[p.Path] = p.Op + " " + string(p.Old) + " " + string(p.New)
	}
	want := map[string]string{"n": "changed 1 2", "extra": "added  true"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("input paths = %v, want %v", got, want)
	}
	// no input and an empty one are the same input
	a.Input, b.Input = nil, map[string]any{}
	if d := inspect.CompareRuns(a, b, inspect.RunDiffLimits{}); !d.Same || d.Input.Changed {
		t.Fatalf("nil and {} inputs: %s", enginetest.JSON(d.Input))
	}
}

// Bounds: paths per value, paths in all, the size of each value and of an
// error message. Equality is still decided in full past the limits.
func TestCompareRunsBounds(t *testing.T) {
	t.Parallel()
	big := func(v float64) map[string]any {
		m := map[string]any{}
		for i := 0; i < 100; i++ {
			m[string(rune('a'+i%26))+strings.Repeat("k", i/26)] = v
		}
		return m
	}
	c := chainOf("n1 n2 n3")
	a := side(c, nil, nodeSpec{id: "n1", status: "done", out: big(1)}, nodeSpec{id: "n2", status: "done", out: big(1)},
		nodeSpec{id: "n3", status: "error", out: 1.0, err: strings.Repeat("é", 2000)})
	b := side(c, nil, nodeSpec{id: "n1", status: "done", out: big(2)}, nodeSpec{id: "n2", status: "done", out: big(2)},
		nodeSpec{id: "n3", status: "error", out: 2.0, err: strings.Repeat("é", 2000)})
	d := inspect.CompareRuns(a, b, inspect.RunDiffLimits{MaxPaths: 5, MaxTotalPaths: 7})
	n1, n2, n3 := nodeDiff(t, d, "n1"), nodeDiff(t, d, "n2"), nodeDiff(t, d, "n3")
	if len(n1.Output.Paths) != 5 || !n1.Output.Truncated || len(n2.Output.Paths) != 2 || !n2.Output.Truncated {
		t.Fatalf("per value 5, 7 in all: n1 %d, n2 %d", len(n1.Output.Paths), len(n2.Output.Paths))
	}
	if !n3.Output.Changed || len(n3.Output.Paths) != 0 || !n3.Output.Truncated || !d.Truncated {
		t.Fatalf("past the total budget a difference is still found, and flagged: %s", enginetest.JSON(n3.Output))
	}
	if len(n3.A.Error) > inspect.DefaultDiffErrorBytes+len("…") || !strings.HasSuffix(n3.A.Error, "…") || !json.Valid([]byte(enginetest.JSON(n3.A.Error))) {
		t.Fatalf("error cut to %d bytes", len(n3.A.Error))
	}

	// A long value is cut to a JSON string of its start, marked.
	long := strings.Repeat("x", 10_000)
	a = side(c, nil, nodeSpec{id: "n1", status: "done", out: map[string]any{"v": long, "l": []any{long, long}}})
	b = side(c, nil, nodeSpec{id: "n1", status: "done", out: map[string]any{"v": "short"}})
	d = inspect.CompareRuns(a, b, inspect.RunDiffLimits{MaxValueBytes: 64})
	for _, p := range nodeDiff(t, d, "n1").Output.Paths {
		var s string
		if json.Unmarshal(p.Old, &s) != nil || len(s) > 64+len("…") || !p.OldCut || !strings.HasSuffix(s, "…") {
			t.Fatalf("%s: old %d bytes, cut %v: %s", p.Path, len(p.Old), p.OldCut, p.Old)
		}
		if p.Path == "v" && (p.NewCut || string(p.New) != `"short"`) {
			t.Fatalf("a short value is whole: %s", enginetest.JSON(p))
		}
	}
}

// FiredEdges reads fired edges from node entries and from the "edges"
// entries of sequential dispatch, and keeps every pass of a loop.
func TestFiredEdgesFromTheLog(t *testing.T) {
	t.Parallel()
	log := []engine.Checkpoint{
		{Kind: engine.CheckpointStart, Start: &engine.StartRecord{}},
		{Kind: engine.CheckpointNode, Node: &engine.NodeRecord{NodeID: "review", Fired: []string{"review->draft"}}},
		{Kind: engine.CheckpointNode, Node: &engine.NodeRecord{NodeID: "review", Fired: []string{"review->publish"}}},
		{Kind: engine.CheckpointNode, Node: &engine.NodeRecord{NodeID: "seq", Sequential: true}},
		{Kind: engine.CheckpointEdges, Edges: &engine.EdgesRecord{Source: "seq", Fired: []string{"seq->b"}}},
		{Kind: engine.CheckpointEdges, Edges: &engine.EdgesRecord{Source: "seq", Fired: []string{"seq->a"}, Pruned: []string{"seq->c"}}},
	}
	got := inspect.FiredEdges(log)
	want := map[string][]string{"review": {"review->draft", "review->publish"}, "seq": {"seq->a", "seq->b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
}

// BenchmarkCompareRuns1000 compares two runs of a 1,000-node chain whose
// every node output is an object of 20 fields, one node in ten differing
// (docs/benchmarks.md, "Comparing two runs").
func BenchmarkCompareRuns1000(b *testing.B) {
	const n = 1000
	c := &chain.Chain{Name: "big"}
	fired := map[string][]string{}
	for i := 0; i < n; i++ {
		id := "n" + strconv.Itoa(i)
		c.Nodes = append(c.Nodes, chain.Node{ID: id, Kind: chain.KindTool, Name: "echo", InputMap: map[string]string{"x": "input.x"}})
		if i > 0 {
			e := "n" + strconv.Itoa(i-1) + "->" + id
			c.Edges = append(c.Edges, chain.Edge{ID: e, Source: "n" + strconv.Itoa(i-1), Target: id})
			fired["n"+strconv.Itoa(i-1)] = []string{e}
		}
	}
	out := func(i, v int) map[string]any {
		m := map[string]any{"list": []any{1.0, 2.0, 3.0}, "nested": map[string]any{"a": "b", "n": float64(i)}}
		for k := 0; k < 18; k++ {
			m["field"+strconv.Itoa(k)] = float64(v)
		}
		return m
	}
	mk := func(changed bool) *inspect.RunSide {
		s := &inspect.RunSide{Chain: c, Status: chain.StatusCompleted, Fired: fired}
		for i := 0; i < n; i++ {
			v := 1
			if changed && i%10 == 0 {
				v = 2
			}
			s.Nodes = append(s.Nodes, engine.NodeResult{NodeID: "n" + strconv.Itoa(i), Status: engine.PhaseDone, Output: out(i, v), Started: t0, Ended: t0.Add(time.Millisecond)})
		}
		return s
	}
	a, bb := mk(false), mk(true)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if d := inspect.CompareRuns(a, bb, inspect.RunDiffLimits{}); d.Differing != n/10 || d.Divergence.NodeID != "n0" {
			b.Fatalf("differing %d", d.Differing)
		}
	}
}

// In a real loop the router fires its loop edge on the early passes and its
// exit on the last: the route keeps both, and comparing the run with itself
// finds nothing.
func TestFiredEdgesOfTheLoopExample(t *testing.T) {
	t.Parallel()
	all, err := examples.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range all {
		if ex.File != "loop.json" {
			continue
		}
		s := sideOf(t, string(ex.Data), nil)
		if got := s.Fired["review"]; !reflect.DeepEqual(got, []string{"review->draft", "review->publish"}) {
			t.Fatalf("review fired %v", got)
		}
		if d := inspect.CompareRuns(s, s, inspect.RunDiffLimits{}); !d.Same {
			t.Fatalf("the loop against itself: %s", enginetest.JSON(d))
		}
		return
	}
	t.Fatal("no loop example")
}
