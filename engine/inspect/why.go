package inspect

import (
	"fmt"
	"slices"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Why answers "why did this node go this way" from a run's checkpoint log:
// for a skipped node the chain of causes back to the decision that pruned
// it; for a node that ran the decisions on its incoming edges that fired;
// for any node the decisions it took on its own outgoing edges. Decisions
// the engine does not record (decision.go) are derived here from the log and
// the chain. Logs written before decisions were recorded still answer, with
// "no decision recorded" where one would be expected.

// NoDecisionRecorded is the note on a step whose decision the log does not
// hold (a run from before decisions were recorded).
const NoDecisionRecorded = "no decision recorded"

// WhyStep is one step of a why answer: a decision, with the node that took
// it (Node) and, for an edge, its target.
type WhyStep struct {
	engine.Decision
	Target string `json:"target,omitempty"` // the edge's target
	Note   string `json:"note,omitempty"`   // said when the step is not a recorded decision
	// Chose and Tests explain a router's edge that was not taken, among a
	// skipped node's causes: the handle the router chose (the fired edge's
	// label, "default" for its fallback) and the router's own tests (its
	// condition, or its cases in order) with the values each read, the
	// records its own answer lists under Decisions.
	Chose string            `json:"chose,omitempty"`
	Tests []engine.Decision `json:"tests,omitempty"`
}

// WhyAnswer explains one node of a run.
type WhyAnswer struct {
	Node      string `json:"node"`
	Status    string `json:"status"` // done | error | skip | paused | not_reached
	Reason    string `json:"reason,omitempty"`
	Matched   string `json:"matched,omitempty"`
	Error     string `json:"error,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Note      string `json:"note,omitempty"`
	// Decisions: the node's own tests (a router's condition or cases) and
	// the decision on each of its outgoing edges.
	Decisions []WhyStep `json:"decisions,omitempty"`
	// Incoming: a node that ran — the decisions on its incoming edges that fired.
	Incoming []WhyStep `json:"incoming,omitempty"`
	// Causes: a skipped node — the steps back to the decisions that pruned
	// it, nearest first (a join lists each of its inputs).
	Causes []WhyStep `json:"causes,omitempty"`
}

// UnknownNodeError: the run's chain has no such node.
type UnknownNodeError struct {
	RunID, NodeID string
}

func (e *UnknownNodeError) Error() string {
	return fmt.Sprintf("run %q has no node %q", e.RunID, e.NodeID)
}

// whyLog is what Why reads from a log.
type whyLog struct {
	chain   *chain.Chain
	nodes   map[string]int           // node id → index
	edges   map[string]*chain.Edge   // edge id → edge
	in, out map[string][]*chain.Edge // by node id; in: non-loop edges only
	results map[string]engine.NodeResult
	last    map[string]*engine.NodeRecord // node id → its last record
	edgeDec map[string]engine.Decision    // edge id → its last decision
	tests   map[string][]engine.Decision  // node id → its last router tests
	endErr  *engine.RunError
}

// Why explains node nodeID of the run whose checkpoint log is log.
func Why(log []engine.Checkpoint, nodeID string) (*WhyAnswer, error) {
	w, err := readWhyLog(log)
	if err != nil {
		return nil, err
	}
	if _, ok := w.nodes[nodeID]; !ok {
		runID := ""
		if len(log) > 0 {
			runID = log[0].RunID
		}
		return nil, &UnknownNodeError{RunID: runID, NodeID: nodeID}
	}
	a := &WhyAnswer{Node: nodeID, Status: StatusNotReached}
	nr, reached := w.results[nodeID]
	if reached {
		a.Status, a.Reason, a.Matched, a.Error, a.Iteration = string(nr.Status), nr.Reason, nr.Matched, nr.Error, nr.Iteration
	}
	for _, d := range w.tests[nodeID] {
		d.Node = nodeID
		a.Decisions = append(a.Decisions, WhyStep{Decision: d})
	}
	if reached && nr.Status != engine.PhasePaused && nr.Status != engine.PhaseStart {
		for _, e := range w.out[nodeID] {
			a.Decisions = append(a.Decisions, w.edgeStep(e))
		}
	}
	switch {
	case !reached:
		a.Note = "the node has not run (yet)"
	case nr.Status == engine.PhaseSkip:
		a.Causes, a.Note = w.causes(nodeID, nr)
	case nr.Status == engine.PhasePaused:
		a.Note = "the node is waiting for a person"
		a.Incoming = w.incoming(nodeID)
	default:
		a.Incoming = w.incoming(nodeID)
		if len(a.Incoming) == 0 && !w.hasIncoming(nodeID) {
			a.Note = "a root: it runs when the run starts"
		}
	}
	return a, nil
}

func readWhyLog(log []engine.Checkpoint) (*whyLog, error) {
	w := &whyLog{last: map[string]*engine.NodeRecord{}, edgeDec: map[string]engine.Decision{}, tests: map[string][]engine.Decision{}}
	var fold engine.NodeResultFold
	for k := range log {
		cp := &log[k]
		if err := fold.Add(cp); err != nil {
			return nil, fmt.Errorf("checkpoint entry %d: %w", k, err)
		}
		switch {
		case cp.Kind == engine.CheckpointStart && cp.Start != nil && cp.Start.Chain != nil:
			w.chain = cp.Start.Chain
		case cp.Kind == engine.CheckpointNode && cp.Node != nil:
			rec := cp.Node
			w.last[rec.NodeID] = rec
			var tests []engine.Decision
			for _, d := range rec.Decisions {
				if d.Edge == "" {
					tests = append(tests, d)
					continue
				}
				d.Node = rec.NodeID
				w.edgeDec[d.Edge] = d
			}
			w.tests[rec.NodeID] = tests
		case cp.Kind == engine.CheckpointEdges && cp.Edges != nil:
			for _, d := range cp.Edges.Decisions {
				d.Node = cp.Edges.Source
				w.edgeDec[d.Edge] = d
			}
			for _, id := range cp.Edges.Fired { // a held default fired after its fan-out
				if d, ok := w.edgeDec[id]; ok && d.Outcome == engine.OutcomeDeferred {
					d.Outcome = engine.OutcomeFired
					w.edgeDec[id] = d
				}
			}
		case cp.Kind == engine.CheckpointEnd && cp.End != nil:
			w.endErr = cp.End.Error
		case cp.Kind == engine.CheckpointResume:
			w.endErr = nil
		}
	}
	if w.chain == nil {
		return nil, &engine.ChainCheckpointError{Msg: "the log has no start entry with the chain"}
	}
	w.results = map[string]engine.NodeResult{}
	for _, nr := range fold.Results() {
		w.results[nr.NodeID] = nr
	}
	w.nodes = make(map[string]int, len(w.chain.Nodes))
	for k, n := range w.chain.Nodes {
		w.nodes[n.ID] = k
	}
	w.edges = make(map[string]*chain.Edge, len(w.chain.Edges))
	w.in, w.out = map[string][]*chain.Edge{}, map[string][]*chain.Edge{}
	for k := range w.chain.Edges {
		e := &w.chain.Edges[k]
		w.edges[e.ID] = e
		w.out[e.Source] = append(w.out[e.Source], e)
		if !e.IsLoop() {
			w.in[e.Target] = append(w.in[e.Target], e)
		}
	}
	return w, nil
}

func (w *whyLog) hasIncoming(id string) bool {
	for k := range w.chain.Edges {
		if w.chain.Edges[k].Target == id {
			return true
		}
	}
	return false
}

// isRouter: a branch or condition node (every edge it decides is recorded).
func (w *whyLog) isRouter(id string) bool {
	k, ok := w.nodes[id]
	return ok && (w.chain.Nodes[k].Kind == chain.KindBranch || w.chain.Nodes[k].Kind == chain.KindCondition)
}

// edgeStep is the decision on edge e: recorded, else derived from what its
// source did.
func (w *whyLog) edgeStep(e *chain.Edge) WhyStep {
	st := WhyStep{Decision: engine.Decision{Node: e.Source, Edge: e.ID, Kind: engine.DecideEdge, Expr: e.Condition}, Target: e.Target}
	if d, ok := w.edgeDec[e.ID]; ok {
		st.Decision = d
		return st
	}
	src, reached := w.results[e.Source]
	rec := w.last[e.Source]
	// A decision is recorded for every condition, router edge, default and
	// capped loop; only an unconditional edge of a node that routed, and the
	// edges of a node that never routed, are derived.
	expected := e.Condition != "" || e.Default || w.isRouter(e.Source) || e.IsLoop()
	switch {
	case !reached:
		st.Note = "its source " + e.Source + " has not finished"
	case src.Status == engine.PhaseSkip && src.Reason != engine.ReasonOnErrorSkip && src.Reason != engine.ReasonGuardFailed:
		st.Rule, st.Outcome = engine.RulePrunedUpstreamSkipped, engine.OutcomePruned
	case rec != nil && rec.Handled != "":
		st.Rule, st.Outcome = engine.RuleUpstreamFailed, engine.OutcomePruned
		st.Note = "its source failed and its on_error handler " + rec.Handled + " ran instead"
	case src.Status == engine.PhaseError && (rec == nil || rec.Fatal):
		st.Rule, st.Outcome = engine.RuleUpstreamFailed, engine.OutcomePruned
		st.Note = "its source failed and the run stopped"
	case rec != nil && slices.Contains(rec.Fired, e.ID) && !expected:
		st.Rule, st.Outcome = engine.RuleUnconditional, engine.OutcomeFired
	case rec != nil && rec.Sequential:
		st.Note = "a sequential link not dispatched (yet)"
	default:
		st.Note = NoDecisionRecorded
		if rec != nil && slices.Contains(rec.Fired, e.ID) {
			st.Outcome = engine.OutcomeFired
		} else if rec != nil && slices.Contains(rec.Pruned, e.ID) {
			st.Outcome = engine.OutcomePruned
		}
	}
	return st
}

// incoming: the decisions on node id's incoming edges that fired (loop edges too).
func (w *whyLog) incoming(id string) []WhyStep {
	var out []WhyStep
	for k := range w.chain.Edges {
		e := &w.chain.Edges[k]
		if e.Target != id {
			continue
		}
		if st := w.edgeStep(e); st.Outcome == engine.OutcomeFired || st.Outcome == engine.OutcomeFailed {
			out = append(out, st)
		}
	}
	return out
}

// choice is how router id chose: the handle it took and its own tests
// (copies, with the router named), for a cause that is one of its edges.
func (w *whyLog) choice(id string) (string, []engine.Decision) {
	chose := w.results[id].Matched
	for _, e := range w.out[id] {
		if chose != "" {
			break
		}
		if d, ok := w.edgeDec[e.ID]; ok && d.Outcome == engine.OutcomeFired {
			switch {
			case e.Label != "":
				chose = e.Label
			default:
				chose = defaultLabel // the default: true or unlabelled fallback
			}
		}
	}
	tests := make([]engine.Decision, 0, len(w.tests[id]))
	for _, d := range w.tests[id] {
		d.Node = id
		tests = append(tests, d)
	}
	return chose, tests
}

// defaultLabel is the handle a router's fallback edge answers to.
const defaultLabel = "default"

// maxCauses bounds a why answer (a pruned branch can span thousands of nodes).
const maxCauses = 1000

// causes walks back from skipped node id to the decisions that pruned it:
// through skipped sources (pruned_upstream_skipped) until a node that ran
// and decided, nearest first. Each node is visited once.
func (w *whyLog) causes(id string, nr engine.NodeResult) ([]WhyStep, string) {
	switch nr.Reason {
	case engine.ReasonNotNeeded:
		return []WhyStep{{Decision: engine.Decision{Node: id, Kind: engine.DecideNode, Rule: engine.RuleNotNeeded, Outcome: engine.OutcomePruned}}},
			"not needed: an error handler whose owners did not fail, or a node that opted out with reachable: false"
	case engine.ReasonOnErrorSkip:
		return nil, "the node itself failed and its on_error is skip: " + nr.Error
	case engine.ReasonUpstreamStopped:
		if len(w.in[id]) == 0 || w.endErr != nil {
			msg := "the run stopped before this node could run"
			if w.endErr != nil {
				msg += ": " + w.endErr.Message
			}
			return nil, msg
		}
	}
	var steps []WhyStep
	seen := map[string]bool{id: true}
	explained := map[string]bool{} // routers whose tests a step lists
	queue := []string{id}
	for len(queue) > 0 && len(steps) < maxCauses {
		n := queue[0]
		queue = queue[1:]
		ins := w.in[n]
		if len(ins) > 1 {
			steps = append(steps, WhyStep{Decision: engine.Decision{Node: n, Kind: engine.DecideJoin, Rule: engine.RuleJoinAllInputsPruned, Outcome: engine.OutcomePruned}})
		}
		for _, e := range ins {
			st := w.edgeStep(e)
			if st.Outcome == engine.OutcomePruned && w.isRouter(e.Source) && st.Rule != engine.RulePrunedUpstreamSkipped && st.Rule != engine.RuleUpstreamFailed {
				st.Chose, st.Tests = w.choice(e.Source)
				if explained[e.Source] {
					st.Tests = nil // listed with the router's first edge: an answer lists each router's tests once
				}
				explained[e.Source] = true
			}
			steps = append(steps, st)
			if st.Rule == engine.RulePrunedUpstreamSkipped && !seen[e.Source] {
				seen[e.Source] = true
				queue = append(queue, e.Source)
			}
		}
		if len(ins) == 0 && n != id {
			steps = append(steps, WhyStep{Decision: engine.Decision{Node: n, Kind: engine.DecideNode, Rule: engine.RuleNotNeeded, Outcome: engine.OutcomePruned}, Note: "skipped: " + w.results[n].Reason})
		}
	}
	note := ""
	if len(steps) >= maxCauses {
		note = fmt.Sprintf("the chain of causes is longer than %d steps; the first %d are listed", maxCauses, maxCauses)
	}
	return steps, note
}
