package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/google/uuid"
)

// Running one node alone, with its upstream data pinned: the outputs of the
// nodes it reads come from an earlier run's log or from an explicit map
// (node id → output, the form a chain test's mocks take). Nothing upstream
// or downstream runs. The run is a real run: its log opens with a start
// entry naming the node and the source (StartRecord.Pinned), then one node
// entry per pinned upstream node (reused, never executed), then the node's
// own. docs/design.md ("Run one node with pinned data") has the rules.

// ReasonNoOutput: a pinned upstream node that finished without an output in
// the source run (skipped, or failed and handled); expressions read its
// output as null, as they would have then.
const ReasonNoOutput = "no_output"

// ReasonPinned: on a node run's pinned upstream node, its output was taken
// from the source run or given; the node did not run.
const ReasonPinned = "pinned"

// NodeRunSource says where a node run alone takes its upstream data.
type NodeRunSource struct {
	FromRun string         // an earlier run of the chain: its node outputs, input and state
	Pinned  map[string]any // node id → output, given explicitly; wins over FromRun
	Input   map[string]any // the run's `input`; nil: FromRun's input, else {}
	State   map[string]any // merged over FromRun's state (before the node ran there)
}

// PinnedRecord, in a start entry, says the run is one node run alone.
type PinnedRecord struct {
	NodeID  string `json:"node_id"`
	FromRun string `json:"from_run,omitempty"`
	// Activators are the upstream nodes whose output the node receives, as
	// if their edges into it had fired.
	Activators []string `json:"activators,omitempty"`
	// Explicit are the nodes whose output was given (not from FromRun).
	Explicit []string `json:"explicit,omitempty"`
}

// Reasons a NodeRunError gives.
const (
	NodeRunUnknownNode     = "unknown_node"     // the node is not in the chain
	NodeRunUnknownPinned   = "unknown_pinned"   // a pinned output names a node not in the chain
	NodeRunMissingUpstream = "missing_upstream" // an upstream output the node needs is in neither source
	NodeRunAttached        = "attached"         // a map body, parallel branch or on_error handler runs only inside its owner
)

// NodeRunError: a node cannot run alone as asked.
type NodeRunError struct {
	NodeID  string
	Reason  string   // one of the NodeRun* reasons
	Needs   []string // missing_upstream: the upstream nodes, one of which is missing
	FromRun string
	Msg     string
}

func (e *NodeRunError) Code() string  { return "node_run_" + e.Reason }
func (e *NodeRunError) Error() string { return e.Msg }

// NodeRun is a node run alone, checked and with its upstream data
// resolved, ready to execute (Engine.PlanNodeRun).
type NodeRun struct {
	e       *Engine
	p       *chain.Plan
	i       int
	pinned  []*NodeRecord // in chain order
	acts    []int
	input   map[string]any
	state   map[string]any
	record  *PinnedRecord
	started bool
}

// Input is the run's `input` (for the host's run record).
func (nr *NodeRun) Input() map[string]any { return nr.input }

// Pinned returns the ids of the upstream nodes whose outputs are pinned.
func (nr *NodeRun) Pinned() []string {
	out := make([]string, len(nr.pinned))
	for k, rec := range nr.pinned {
		out[k] = rec.NodeID
	}
	return out
}

// sourceRun is what a node run reads from an earlier run's log.
type sourceRun struct {
	records map[string]*NodeRecord // the last record of each node
	input   map[string]any
	state   map[string]any // before the node's last record there, else at the end
}

func loadSourceRun(log []Checkpoint, nodeID string) *sourceRun {
	src := &sourceRun{records: map[string]*NodeRecord{}, state: map[string]any{}}
	var before map[string]any
	for k := range log {
		cp := &log[k]
		switch {
		case cp.Kind == CheckpointStart && cp.Start != nil:
			src.input = cp.Start.Input
			maps.Copy(src.state, cp.Start.ModifiedState)
		case cp.Kind == CheckpointResume && cp.Resume != nil:
			maps.Copy(src.state, cp.Resume.ModifiedState)
		case cp.Kind == CheckpointNode && cp.Node != nil:
			if cp.Node.NodeID == nodeID {
				before = maps.Clone(src.state)
			}
			maps.Copy(src.state, cp.Node.State)
			src.records[cp.Node.NodeID] = cp.Node
		}
	}
	if before != nil {
		src.state = before
	}
	return src
}

// PlanNodeRun checks that node nodeID of a prepared chain can run alone
// with the data src gives, and resolves that data. Errors: a
// *ValidationError (the chain has errors), a *NodeRunError (unknown node,
// an attached node, a missing upstream output), or the checkpointer's error
// loading src.FromRun.
func (e *Engine) PlanNodeRun(ctx context.Context, p *chain.Plan, nodeID string, src NodeRunSource) (*NodeRun, error) {
	if !p.Valid() {
		return nil, &chain.ValidationError{Issues: p.Issues()}
	}
	g := p.Graph()
	i, ok := g.Idx[nodeID]
	if !ok {
		return nil, &NodeRunError{NodeID: nodeID, Reason: NodeRunUnknownNode, Msg: fmt.Sprintf("node %q is not in the chain", nodeID)}
	}
	for _, a := range g.Owners[i] {
		owner := g.C.Nodes[a.Owner].ID
		msg := fmt.Sprintf("node %q runs inside %q (%s): run %q instead", nodeID, owner, a.Rel, owner)
		if a.Rel == chain.RelHandler {
			msg = fmt.Sprintf("node %q is the on_error handler of %q: it runs only when %q fails; run %q instead", nodeID, owner, owner, owner)
		}
		return nil, &NodeRunError{NodeID: nodeID, Reason: NodeRunAttached, Msg: msg}
	}
	for _, id := range slices.Sorted(maps.Keys(src.Pinned)) {
		if _, ok := g.Idx[id]; !ok {
			return nil, &NodeRunError{NodeID: nodeID, Reason: NodeRunUnknownPinned, Msg: fmt.Sprintf("pinned.%s: node %q is not in the chain", id, id)}
		}
	}
	var from *sourceRun
	if src.FromRun != "" {
		log, err := e.opts.Checkpointer.Load(ctx, src.FromRun)
		if err != nil {
			return nil, err
		}
		from = loadSourceRun(log, nodeID)
	}
	// pin returns the record that pins node j, or nil when neither source
	// has it. A node that finished without an output there reads as null.
	pin := func(j int) *NodeRecord {
		id := g.C.Nodes[j].ID
		if v, ok := src.Pinned[id]; ok {
			return &NodeRecord{NodeID: id, Status: PhaseDone, Output: chain.NormalizeValue(v), Reason: ReasonPinned, Reused: true}
		}
		if from == nil {
			return nil
		}
		rec, ok := from.records[id]
		if !ok {
			return nil
		}
		if rec.Status == PhaseDone {
			return &NodeRecord{NodeID: id, Status: PhaseDone, Input: rec.Input, Output: rec.Output, Matched: rec.Matched, Reason: ReasonPinned, Reused: true}
		}
		if rec.Fatal { // the failure that stopped the run: nothing came out
			return nil
		}
		return &NodeRecord{NodeID: id, Status: PhaseSkip, Reason: ReasonNoOutput, Reused: true}
	}
	missing := func(ids []string) error {
		what := fmt.Sprintf("%q", ids[0])
		if len(ids) > 1 {
			q := make([]string, len(ids))
			for k, id := range ids {
				q[k] = fmt.Sprintf("%q", id)
			}
			what = "one of " + strings.Join(q, ", ")
		}
		var where string
		switch {
		case src.FromRun != "" && len(src.Pinned) > 0:
			where = fmt.Sprintf("run %s has none and none is pinned", src.FromRun)
		case src.FromRun != "":
			where = fmt.Sprintf("run %s has none", src.FromRun)
		case len(src.Pinned) > 0:
			where = "the pinned outputs have none"
		default:
			where = "no earlier run was chosen and nothing is pinned"
		}
		return &NodeRunError{NodeID: nodeID, Reason: NodeRunMissingUpstream, Needs: ids, FromRun: src.FromRun,
			Msg: fmt.Sprintf("node %q needs the output of %s: %s", nodeID, what, where)}
	}
	recs := map[int]*NodeRecord{}
	// What arrives as its data: the nodes whose edges into it fired in the
	// source run, or were pinned; failing that, every upstream node with an
	// output (the node was not reached there: run it as if its edges fired).
	var preds, acts, fallback []int
	for _, ei := range g.In[i] {
		s := g.Idx[g.C.Edges[ei].Source]
		if slices.Contains(preds, s) {
			continue
		}
		preds = append(preds, s)
		rec := pin(s)
		if rec == nil || rec.Status != PhaseDone {
			continue
		}
		recs[s] = rec
		fallback = append(fallback, s)
		_, explicit := src.Pinned[g.C.Nodes[s].ID]
		if explicit || (from != nil && slices.Contains(from.records[g.C.Nodes[s].ID].Fired, g.C.Edges[ei].ID)) {
			acts = append(acts, s)
		}
	}
	if len(acts) == 0 {
		acts = fallback
	}
	if len(preds) > 0 && len(acts) == 0 {
		ids := make([]string, len(preds))
		for k, s := range preds {
			ids[k] = g.C.Nodes[s].ID
		}
		return nil, missing(ids)
	}
	// What its expressions read (<id>.output, node_results.<id>) must be
	// there too.
	for _, j := range subtreeReads(g, i, false) {
		if _, ok := recs[j]; ok {
			continue
		}
		rec := pin(j)
		if rec == nil {
			return nil, missing([]string{g.C.Nodes[j].ID})
		}
		recs[j] = rec
	}
	nr := &NodeRun{e: e, p: p, i: i, acts: acts, record: &PinnedRecord{NodeID: nodeID, FromRun: src.FromRun}}
	for j := range g.C.Nodes {
		if rec, ok := recs[j]; ok {
			nr.pinned = append(nr.pinned, rec)
			if _, explicit := src.Pinned[rec.NodeID]; explicit {
				nr.record.Explicit = append(nr.record.Explicit, rec.NodeID)
			}
		}
	}
	for _, s := range acts {
		nr.record.Activators = append(nr.record.Activators, g.C.Nodes[s].ID)
	}
	nr.input, nr.state = src.Input, map[string]any{}
	if from != nil {
		if nr.input == nil {
			nr.input = from.input
		}
		maps.Copy(nr.state, from.state)
	}
	if nr.input == nil {
		nr.input = map[string]any{}
	}
	maps.Copy(nr.state, src.State)
	return nr, nil
}

// subtreeReads is nodeReads of i and of the nodes that run inside it (a
// map body, parallel branches, their handlers, and so on down), less the
// subtree itself. For a node run (ownHandler false) i's own on_error
// handler is left out: it does not run.
func subtreeReads(g *chain.Graph, i int, ownHandler bool) []int {
	in := attachedTree(g, i, ownHandler)
	var out []int
	for j := range g.C.Nodes {
		if !in[j] {
			continue
		}
		for _, k := range nodeReads(g, j) {
			if !in[k] && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// attachedTree is i and every node that runs inside it, transitively.
func attachedTree(g *chain.Graph, i int, ownHandler bool) map[int]bool {
	in := map[int]bool{i: true}
	stack := []int{i}
	for len(stack) > 0 {
		o := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for j := range g.C.Nodes {
			for _, a := range g.Owners[j] {
				if a.Owner == o && !in[j] && (ownHandler || a.Rel != chain.RelHandler || o != i) {
					in[j] = true
					stack = append(stack, j)
				}
			}
		}
	}
	return in
}

// nodeReads returns the other nodes whose outputs node i's expressions read.
func nodeReads(g *chain.Graph, i int) []int {
	var out []int
	add := func(js []int) {
		for _, j := range js {
			if j != i && !slices.Contains(out, j) {
				out = append(out, j)
			}
		}
	}
	add(g.DataDeps[i])
	for _, ne := range g.SetState[i] {
		if ne.Expr != nil {
			add(g.NodeRefs(ne.Expr))
		}
	}
	if e := g.Condition[i]; e != nil {
		add(g.NodeRefs(e))
	}
	if e := g.Items[i]; e != nil {
		add(g.NodeRefs(e))
	}
	for _, e := range g.Cases[i] {
		if e != nil {
			add(g.NodeRefs(e))
		}
	}
	slices.Sort(out)
	return out
}

// RunNode runs one node of a compiled chain alone with its upstream data
// pinned (see PlanNodeRun for the errors). opts.ParentRunID defaults to
// src.FromRun.
func (e *Engine) RunNode(ctx context.Context, p *chain.Plan, nodeID string, src NodeRunSource, opts RunOptions) (*Result, error) {
	nr, err := e.PlanNodeRun(ctx, p, nodeID, src)
	if err != nil {
		return nil, err
	}
	return nr.Run(ctx, opts)
}

// Run executes the planned node run. A NodeRun runs once.
func (nr *NodeRun) Run(ctx context.Context, opts RunOptions) (*Result, error) {
	if nr.started {
		return nil, fmt.Errorf("engine: the node run of %q was already run", nr.record.NodeID)
	}
	nr.started = true
	e := nr.e
	if opts.RunID == "" {
		opts.RunID = uuid.NewString()
	}
	if opts.ParentRunID == "" {
		opts.ParentRunID = nr.record.FromRun
	}
	if _, busy := e.active.LoadOrStore(opts.RunID, struct{}{}); busy {
		return nil, fmt.Errorf("engine: run %q is already executing", opts.RunID)
	}
	defer e.active.Delete(opts.RunID)
	r := newRun(ctx, e, nr.p, opts.RunID, chain.NormalizeMap(nr.input), opts.Sink)
	r.rerun.runAlone(nr.i)
	sr := &StartRecord{Chain: nr.p.Chain(), Input: r.scope.input, ParentRunID: opts.ParentRunID, Pinned: nr.record}
	if len(nr.state) > 0 {
		sr.ModifiedState = chain.NormalizeMap(nr.state)
		r.scope.writeState(sr.ModifiedState)
	}
	r.addCheckpoint(Checkpoint{Kind: CheckpointStart, Start: sr})
	for _, rec := range nr.pinned {
		j := r.graph.Idx[rec.NodeID]
		rec.Ended = stamp()
		r.publishOutput(j, rec)
		rt := noRouting(nil)
		r.commit(j, rec, &rt, nil)
	}
	if r.ctx.Err() != nil {
		r.stopFromContext()
	} else {
		r.restoreActivators(nr.record)
		r.nodes.status[nr.i] = nsReady
		r.sched.queue.push(nr.i)
	}
	r.loop()
	return r.finishRun()
}

// restoreActivators gives the node run alone the upstream it receives
// (live, and after a replay, which clears them).
func (r *run) restoreActivators(pr *PinnedRecord) {
	i := r.rerun.alone()
	r.nodes.activators[i] = r.nodes.activators[i][:0]
	for _, id := range pr.Activators {
		if s, ok := r.graph.Idx[id]; ok {
			r.nodes.activators[i] = append(r.nodes.activators[i], s)
		}
	}
}
