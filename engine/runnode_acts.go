package engine

import "slices"

// Activators are the upstream nodes whose output the planned node receives,
// as if their edges into it had fired (none for a root, which receives the
// run's input). The editor's node view shows their outputs as what the
// node receives; the node run gives it the same.
func (nr *NodeRun) Activators() []string { return slices.Clone(nr.record.Activators) }
