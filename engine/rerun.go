package engine

import (
	"errors"

	"github.com/chainstudio/studio/engine/chain"
)

// rerunPlan is what a run takes from outside its own chain instead of
// running it: the outputs a re-run keeps from the earlier run, the one node
// a node run (RunNode) runs alone, the mocks a chain test gives, and the
// state patch a re-run starts from. Only the coordinator goroutine changes
// it. Workers read mocks and mockErrs (mocked, for map bodies and parallel
// branches): both are set before the first node starts and never change.
//
// statePatch belongs here rather than to the scope: expressions read the
// state it was written into (runScope.state); the plan keeps it only so the
// state writes of the reused nodes, applied after it, do not overwrite it.
type rerunPlan struct {
	reuse      map[string]*NodeRecord // a re-run: the kept records of the nodes upstream of its start
	only       int                    // a node run alone (RunNode): its index + 1; 0 for a whole run
	mocks      map[string]any         // RunOptions.Mocks: the caller's, read-only, shared with workers
	mockErrs   map[string]string      // RunOptions.MockErrors: the caller's, read-only, shared with workers
	pins       map[string]any         // RunOptions.UsePins: the chain's pinned outputs, read-only, shared with workers
	statePatch map[string]any         // a re-run's modified_state: reused nodes do not overwrite it
}

// single reports whether the run is one node run alone: then no edge
// decision reaches another node and no handler starts.
func (p *rerunPlan) single() bool { return p.only > 0 }

// alone is the node a single run runs.
func (p *rerunPlan) alone() int { return p.only - 1 }

// runAlone makes the run node i's alone.
func (p *rerunPlan) runAlone(i int) { p.only = i + 1 }

// takeReused returns the kept record of node id, once: the node's next
// pass (a loop) runs it.
func (p *rerunPlan) takeReused(id string) (*NodeRecord, bool) {
	rec, ok := p.reuse[id]
	if ok {
		delete(p.reuse, id)
	}
	return rec, ok
}

// patched drops from a reused node's state writes the keys the state patch
// sets, and reports whether the patch must be written again over them (the
// user's patch wins over what the kept outputs wrote; the record keeps only
// the writes that stand, so a replay gets the same state).
func (p *rerunPlan) patched(writes map[string]any) bool {
	if len(writes) == 0 || len(p.statePatch) == 0 {
		return false
	}
	for k := range p.statePatch {
		delete(writes, k)
	}
	return true
}

// mocked returns the output (or error) RunOptions.Mocks (MockErrors) give
// node nd instead of running it, else its pin when the run uses the pins
// (pinned true). Routers are never mocked nor pinned: their output is
// their input.
func (p *rerunPlan) mocked(nd *chain.Node) (out any, err error, pinned, ok bool) {
	if (p.mocks == nil && p.mockErrs == nil && p.pins == nil) || !chain.Pinnable(nd.Kind) {
		return nil, nil, false, false
	}
	if msg, ok := p.mockErrs[nd.ID]; ok {
		return nil, errors.New(msg), false, true
	}
	if out, ok := p.mocks[nd.ID]; ok {
		return chain.NormalizeValue(out), nil, false, true
	}
	if out, ok := p.pins[nd.ID]; ok {
		return chain.NormalizeValue(out), nil, true, true
	}
	return nil, nil, false, false
}

// pinnedNode reports whether node nd gives its pin instead of running
// (and no mock takes its place), for its start event.
func (p *rerunPlan) pinnedNode(nd *chain.Node) bool {
	if p.pins == nil || !chain.Pinnable(nd.Kind) {
		return false
	}
	_, mock := p.mocks[nd.ID]
	_, fail := p.mockErrs[nd.ID]
	_, pin := p.pins[nd.ID]
	return pin && !mock && !fail
}
