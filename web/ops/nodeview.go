package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
)

// NodeView is what the editor's node view shows of one run for one node:
// the data the node received there (what `output` is in its input map and
// script; the run's input for a root) and what the node did.
type NodeView struct {
	Run    *store.Run         // nil: the chain has no run yet
	Record *engine.NodeResult // the node's own result in Run; nil when it did not run there
	// Received is the data the node received, or would receive when run
	// alone from Run (the node run's rule); HasReceived is false when Run
	// lacks it, and Missing says why.
	Received    any
	HasReceived bool
	Missing     string
	// From are the nodes whose output is Received: one, or several (then
	// Received is keyed by their ids); none: Received is the run's input.
	From []string
	// Withheld: Received or the node's input is a credentialed call's
	// answer, which this reader may not see.
	Withheld bool
}

// nodeViewRunsChecked bounds how many of the latest runs that reached a
// node are read to find one where it ran itself (not only pinned into
// another node's run).
const nodeViewRunsChecked = 5

// NodeView reads what node did in run runID ("": the latest run where the
// node ran, else the chain's latest run). Only the records the view shows
// are read (the node's and its upstream nodes'), never a run's whole log
// for a node with one upstream node or none, so a node whose input is
// megabytes opens fast; withhold replaces credentialed calls' answers.
func (s *Env) NodeView(ctx context.Context, ch *store.Chain, node, runID string, withhold bool) (*NodeView, error) {
	out := &NodeView{}
	if ch.Doc.Node(node) == nil {
		return nil, httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("node %q is not in the saved chain %q", node, ch.Name), map[string]any{"node_id": node})
	}
	var err error
	if runID != "" {
		if out.Run, err = s.DB.GetRunInfo(ctx, runID); err != nil {
			return nil, httpcore.StoreErr(err, fmt.Sprintf("run %q", runID))
		}
		if out.Run.ChainID != ch.ID {
			return nil, httpcore.Error(httpcore.EINVALID, "wrong_run", fmt.Sprintf("run %s is not a run of chain %q", runID, ch.Name), map[string]any{"path": "run", "run_id": runID})
		}
		if out.Record, err = s.DB.GetRunNode(ctx, runID, node); err != nil {
			return nil, err
		}
	} else if err := s.latestNodeRun(ctx, ch, node, out); err != nil {
		return nil, err
	}
	if out.Run == nil {
		return out, nil
	}
	if withhold && out.Record != nil && out.Record.Credentialed {
		out.Record = WithheldNode(out.Record)
	}
	if err := s.received(ctx, ch, node, out, withhold); err != nil {
		return nil, err
	}
	if out.Withheld && out.Record != nil && out.Record.Input != nil {
		// what its tool got is built from the withheld answer
		cp := *out.Record
		cp.Input = WithheldValue
		out.Record = &cp
	}
	return out, nil
}

// latestNodeRun picks the view's run: the latest that reached node where
// it ran itself, else the latest that reached it, else the chain's latest.
// The listed row is used as it is: it has all the view shows of a run but
// its input, which only a root's view reads (received).
func (s *Env) latestNodeRun(ctx context.Context, ch *store.Chain, node string, out *NodeView) error {
	p, err := s.DB.ListRunsPage(ctx, store.RunFilter{ChainID: ch.ID, NodeID: node, Limit: nodeViewRunsChecked, Brief: true})
	if err != nil {
		return err
	}
	for i := range p.Runs {
		rec, err := s.DB.GetRunNode(ctx, p.Runs[i].ID, node)
		if err != nil {
			return err
		}
		if i == 0 || (rec != nil && !rec.Reused) {
			out.Run, out.Record = &p.Runs[i], rec
		}
		if rec != nil && !rec.Reused {
			return nil
		}
	}
	if out.Run != nil {
		return nil
	}
	rs, _, err := s.DB.ListRuns(ctx, store.RunFilter{ChainID: ch.ID, Limit: 1, Brief: true})
	if err == nil && len(rs) > 0 {
		out.Run = &rs[0]
	}
	return err
}

// received fills what the node received in out.Run: a root the run's
// input; a node with one upstream node that node's output; a node with
// several the outputs of those whose edges into it fired there, as the
// node run decides (engine.NodeRun.Activators).
func (s *Env) received(ctx context.Context, ch *store.Chain, node string, out *NodeView, withhold bool) error {
	doc := ch.Doc
	var preds []string
	for _, e := range doc.Edges {
		if e.Target == node && !slices.Contains(preds, e.Source) {
			preds = append(preds, e.Source)
		}
	}
	if len(preds) == 0 {
		for i := range doc.Nodes {
			o := &doc.Nodes[i]
			if o.MapNode == node || slices.Contains(o.Branches, node) || o.ErrorHandler() == node {
				out.Missing = fmt.Sprintf("This node runs inside %q: what it receives comes from there (a map item, the branches' input, or the failure it handles). Open %q to see it.", o.ID, o.ID)
				return nil
			}
		}
		if out.Run.Input == nil {
			// a listed run row comes without its input
			r, err := s.DB.GetRunInfo(ctx, out.Run.ID)
			if err != nil {
				return httpcore.StoreErr(err, fmt.Sprintf("run %q", out.Run.ID))
			}
			out.Run = r
		}
		out.Received, out.HasReceived = out.Run.Input, true
		if out.Received == nil {
			out.Received = map[string]any{}
		}
		return nil
	}
	acts := preds
	if len(preds) > 1 {
		nr, err := s.Runs.PlanNodeRun(ctx, ch, node, engine.NodeRunSource{FromRun: out.Run.ID})
		var nre *engine.NodeRunError
		var ve *chain.ValidationError
		switch {
		case err == nil:
			acts = nr.Activators()
		case errors.As(err, &nre):
			out.Missing = nre.Error()
			return nil
		case errors.As(err, &ve):
			// An invalid draft cannot plan a node run: every upstream node
			// that finished is shown, as a node run would take them had
			// none of their edges fired.
		default:
			return err
		}
	}
	recs := make(map[string]any, len(acts))
	var from []string
	for _, id := range acts {
		rec, err := s.DB.GetRunNode(ctx, out.Run.ID, id)
		if err != nil {
			return err
		}
		if rec == nil || rec.Status != engine.PhaseDone {
			if len(acts) == 1 {
				out.Missing = fmt.Sprintf("Node %q, which this node receives from, did not finish in this run, so the run has no data for this node.", id)
				return nil
			}
			continue
		}
		v := rec.Output
		if withhold && rec.Credentialed {
			v, out.Withheld = WithheldValue, true
		}
		recs[id] = v
		from = append(from, id)
	}
	slices.Sort(from) // as the keys of Received are listed
	switch len(from) {
	case 0:
		out.Missing = "None of the nodes this node receives from finished in this run, so the run has no data for this node."
		return nil
	case 1:
		out.Received = recs[from[0]]
	default:
		out.Received = recs
	}
	out.HasReceived, out.From = true, from
	return nil
}
