package ops

import (
	"reflect"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// WithheldValue stands for a credentialed call's output for a reader who
// may not see it.
var WithheldValue = map[string]any{
	"withheld": "the answer to a request that carried a stored credential; editors and admins see it (--viewers-see-credentialed-output shows it to everyone)",
}

// SeesCredentialed reports whether the caller may see credentialed calls'
// outputs.
func (s *Env) SeesCredentialed(c echo.Context) bool {
	return s.ViewersSeeCredentialed || httpcore.RoleAllows(httpcore.CallerOf(c).Role, httpcore.ActEdit)
}

// WithholdEvents returns evs with the outputs of credentialed calls
// replaced, copying only when one is (evs may be shared).
func WithholdEvents(evs []engine.Event) []engine.Event {
	var out []engine.Event
	for i := range evs {
		if !evs[i].Credentialed || evs[i].Output == nil {
			continue
		}
		if out == nil {
			out = append([]engine.Event(nil), evs...)
		}
		out[i].Output, out[i].OutputJSON = WithheldValue, nil
	}
	if out == nil {
		return evs
	}
	return out
}

// WithheldRun is r with the outputs of its credentialed calls replaced in
// its node results and outputs, and its final output when one of them
// produced it: r itself when it has none, else a copy (r's maps and slices
// may be shared).
func WithheldRun(orig *store.Run) *store.Run {
	nodes, final, hidden := WithheldResults(orig.Nodes, orig.FinalOutput)
	if len(hidden) == 0 {
		return orig
	}
	r := *orig
	r.Nodes, r.FinalOutput = nodes, final
	if r.Outputs != nil {
		outs := make(map[string]any, len(r.Outputs))
		for k, v := range r.Outputs {
			outs[k] = v
		}
		for _, id := range hidden {
			if _, ok := outs[id]; ok {
				outs[id] = WithheldValue
			}
		}
		r.Outputs = outs
	}
	return &r
}

// WithheldResults replaces the outputs of the credentialed calls among
// nodes, and final when one of them produced it; hidden lists their ids
// (none: nodes and final are returned as they are).
func WithheldResults(nodes []engine.NodeResult, final any) (_ []engine.NodeResult, _ any, hidden []string) {
	out := nodes
	for i, n := range nodes {
		if !n.Credentialed || n.Output == nil {
			continue
		}
		if hidden == nil {
			out = append([]engine.NodeResult(nil), nodes...)
		}
		hidden = append(hidden, n.NodeID)
		if final != nil && n.Status == engine.PhaseDone && reflect.DeepEqual(n.Output, final) {
			final = WithheldValue
		}
		out[i].Output = WithheldValue
	}
	return out, final, hidden
}

// WithheldNode is nr with its output withheld when it is a credentialed
// call's (nil stays nil).
func WithheldNode(nr *engine.NodeResult) *engine.NodeResult {
	if nr == nil || !nr.Credentialed || nr.Output == nil {
		return nr
	}
	cp := *nr
	cp.Output = WithheldValue
	return &cp
}
