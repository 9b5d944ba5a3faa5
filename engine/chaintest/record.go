package chaintest

import (
	"encoding/json"
	"fmt"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
)

// Recorded is what a finished run leaves that a test can be made of.
type Recorded struct {
	Input       map[string]any
	Status      chain.RunStatus
	FinalOutput any
	Nodes       []engine.NodeResult
}

// FromRun makes a test of a finished run of chain c ("save this run as a
// test"): the run's input; every node that can reach outside (a tool that is
// not pure in reg, proc, skill, agent, interrupt) gets its recorded output as
// a mock, or its error as an error; the route taken becomes ran / not_ran;
// the final status and output become assertions. Nodes that are no longer in
// c are left out. A map or parallel node whose body or branch reaches
// outside is mocked whole, since its items cannot be told apart.
func FromRun(c *chain.Chain, reg *engine.Registry, name string, run Recorded) (chain.Test, error) {
	t := chain.Test{Name: name, Input: run.Input, Mocks: map[string]any{}, Errors: map[string]string{}}
	switch run.Status {
	case chain.StatusCompleted, chain.StatusPartial, chain.StatusFailed:
	default:
		return t, fmt.Errorf("the run is %s: only a completed, partial or failed run can become a test", run.Status)
	}
	outside := func(nd *chain.Node) bool {
		switch nd.Kind {
		case chain.KindTool:
			return !reg.IsInline(nd.Name)
		case chain.KindProc, chain.KindSkill, chain.KindAgent, chain.KindInterrupt:
			return true
		}
		return false
	}
	attached := map[string]bool{}
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		var inner []string
		switch nd.Kind {
		case chain.KindMap:
			inner = []string{nd.MapNode}
		case chain.KindParallel:
			inner = nd.Branches
		}
		for _, id := range inner {
			attached[id] = true
		}
	}
	wholes := map[string]bool{} // map and parallel nodes mocked whole
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		for _, id := range append([]string{nd.MapNode}, nd.Branches...) {
			if in := c.Node(id); id != "" && in != nil && (nd.Kind == chain.KindMap || nd.Kind == chain.KindParallel) && outside(in) {
				wholes[nd.ID] = true
			}
		}
	}
	for _, nr := range run.Nodes {
		nd := c.Node(nr.NodeID)
		if nd == nil {
			continue
		}
		ran := nr.Status == engine.PhaseDone || nr.Status == engine.PhaseError ||
			(nr.Status == engine.PhaseSkip && nr.Reason == engine.ReasonOnErrorSkip)
		if !attached[nd.ID] {
			if ran {
				t.Assert.Ran = append(t.Assert.Ran, nd.ID)
			} else if nr.Status == engine.PhaseSkip {
				t.Assert.NotRan = append(t.Assert.NotRan, nd.ID)
			}
		}
		if !ran || attached[nd.ID] || (!outside(nd) && !wholes[nd.ID]) {
			continue
		}
		if nr.Status == engine.PhaseDone {
			t.Mocks[nd.ID] = nr.Output
		} else {
			t.Errors[nd.ID] = nr.Error
		}
	}
	t.Assert.Status = run.Status
	out, err := json.Marshal(run.FinalOutput)
	if err != nil {
		return t, fmt.Errorf("the run's final output is not JSON: %w", err)
	}
	t.Assert.Expect = []chain.Expect{{Path: "output", Equals: out}}
	if len(t.Mocks) == 0 {
		t.Mocks = nil
	}
	if len(t.Errors) == 0 {
		t.Errors = nil
	}
	return t, nil
}
