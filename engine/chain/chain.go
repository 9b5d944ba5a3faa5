// Package chain is Chain Studio's chain document: its types and JSON,
// strict decoding, normalising, patches and validation. Compile checks a
// chain once against a host's environment (ValidateOptions) and gives the
// Plan that package engine runs; the runtime never checks a chain itself.
package chain

import "encoding/json"

// Kind is a node's type.
type Kind string

// Node kinds (docs/chain-format.md, "Node kinds"). A2E defines tool, skill,
// proc, branch and map; routed chains add condition, parallel and interrupt;
// agent chaining adds agent.
const (
	KindTool      Kind = "tool"
	KindSkill     Kind = "skill"
	KindProc      Kind = "proc"
	KindBranch    Kind = "branch"
	KindMap       Kind = "map"
	KindCondition Kind = "condition"
	KindParallel  Kind = "parallel"
	KindInterrupt Kind = "interrupt"
	KindAgent     Kind = "agent"
)

// Kinds lists every node kind in palette order.
var Kinds = []Kind{KindTool, KindSkill, KindProc, KindBranch, KindCondition, KindMap, KindParallel, KindInterrupt, KindAgent}

func (k Kind) valid() bool {
	for _, v := range Kinds {
		if v == k {
			return true
		}
	}
	return false
}

// Routing policies for a node's outgoing edges.
const (
	RoutingFirst = "first" // the first true conditional edge, else the default, else the first unconditional
	RoutingAll   = "all"   // every true edge and every unconditional edge; the default only if no guard matched
)

// Dispatch orders for edges fired under routing "all".
const (
	DispatchParallel   = "parallel"
	DispatchSequential = "sequential"
)

// Error policies (Node.OnError); any other value names a handler node.
const (
	OnErrorAbort    = "abort"
	OnErrorStop     = "stop" // agent chains' spelling of abort
	OnErrorSkip     = "skip"
	OnErrorContinue = "continue"
)

// Parallel failure modes: how a map or parallel node combines failed items
// or branches (docs/chain-format.md, "Failed map items and parallel branches").
const (
	FailContinue   = "continue"
	FailFast       = "fail_fast"
	FailAnySuccess = "any_success"
)

// Edge behaviour when a loop edge reaches max_iterations.
const (
	OnMaxError    = "error"
	OnMaxContinue = "continue"
)

// Chain is one chain document. Field names are the JSON names documented in
// docs/chain-format.md.
type Chain struct {
	Name             string  `json:"name"`
	Description      string  `json:"description,omitempty"`
	EntryNode        string  `json:"entry_node,omitempty"`
	StrictRouting    bool    `json:"strict_routing,omitempty"`
	StrictConditions bool    `json:"strict_conditions,omitempty"`
	Timeout          float64 `json:"timeout,omitempty"` // seconds; 0 = DefaultTimeout
	MaxConcurrency   int     `json:"max_concurrency,omitempty"`
	MaxDepth         int     `json:"max_depth,omitempty"` // sub-chain (skill) nesting; 0 = DefaultMaxDepth
	// SampleInput is an example run input kept with the chain: the designer's
	// run dialog starts from it and `studio run` uses it when no --input is
	// given. It never changes how a run executes.
	SampleInput map[string]any `json:"sample_input,omitempty"`
	// Budget holds the chain's runs' model calls to limits of its own,
	// beside the studio's (budget.go).
	Budget *ModelBudget `json:"budget,omitempty"`
	Nodes  []Node       `json:"nodes"`
	Edges  []Edge       `json:"edges,omitempty"`
	// Tests are the chain's test cases (engine/chaintest runs them); they
	// never change how a run executes.
	Tests []Test `json:"tests,omitempty"`
	// PinnedOutputs maps a node id to the output the node gives instead of
	// running in the designer's runs of the draft (pins.go). Like the
	// tests they never change how a published or triggered run executes.
	PinnedOutputs map[string]any `json:"pinned_outputs,omitempty"`
	// Notes are the designer's sticky notes on the canvas (notes.go);
	// like positions they never change how a run executes.
	Notes []Note `json:"notes,omitempty"`
}

// Node is one step. The first block of fields is A2E's ChainNode, spelled as
// A2E spells them (docs/chain-format.md, "A2E compatibility").
type Node struct {
	ID        string            `json:"node_id"`
	Kind      Kind              `json:"kind"`
	Name      string            `json:"name,omitempty"`
	Input     map[string]any    `json:"input,omitempty"`
	InputMap  map[string]string `json:"input_map,omitempty"`
	Condition string            `json:"condition,omitempty"`
	TrueNode  string            `json:"true_node,omitempty"`
	FalseNode string            `json:"false_node,omitempty"`
	ItemsPath string            `json:"items_path,omitempty"`
	MapNode   string            `json:"map_node,omitempty"`
	NextNode  string            `json:"next_node,omitempty"`
	OnError   string            `json:"on_error,omitempty"`

	Label               string            `json:"label,omitempty"`
	Description         string            `json:"description,omitempty"`
	Timeout             float64           `json:"timeout,omitempty"` // seconds per attempt
	Retry               *Retry            `json:"retry,omitempty"`
	Routing             string            `json:"routing,omitempty"`
	Dispatch            string            `json:"dispatch,omitempty"`
	SetState            map[string]string `json:"set_state,omitempty"`
	Cases               []Case            `json:"cases,omitempty"`
	Branches            []string          `json:"branches,omitempty"`
	ParallelFailureMode string            `json:"parallel_failure_mode,omitempty"`
	Reachable           *bool             `json:"reachable,omitempty"`
	StaticOnly          bool              `json:"static_only,omitempty"` // a root keeps to its static input (dataflow.go)
	Position            *Position         `json:"position,omitempty"`
	Config              map[string]any    `json:"config,omitempty"`
}

// Retry is a node's retry policy.
type Retry struct {
	MaxAttempts         int     `json:"max_attempts"`
	Backoff             string  `json:"backoff,omitempty"` // fixed | exponential
	InitialDelaySeconds float64 `json:"initial_delay_seconds,omitempty"`
}

// Case is one ordered case of a condition node: the first case whose When is
// true sets the node's matched handle.
type Case struct {
	Handle string `json:"handle"`
	When   string `json:"when"`
}

// Position is a node's place on the designer's canvas.
type Position struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Edge connects two nodes.
type Edge struct {
	ID            string `json:"id,omitempty"`
	Source        string `json:"source"`
	Target        string `json:"target"`
	Label         string `json:"label,omitempty"`
	Condition     string `json:"condition,omitempty"`
	Default       bool   `json:"default,omitempty"`
	MaxIterations int    `json:"max_iterations,omitempty"`
	OnMaxReached  string `json:"on_max_reached,omitempty"`
}

// IsLoop reports whether the edge is a loop edge: one that may fire again and
// is never waited for by its target.
func (e *Edge) IsLoop() bool { return e.MaxIterations >= 1 }

// RoutingOrDefault returns the node's routing policy.
func (n *Node) RoutingOrDefault() string {
	if n.Routing == "" {
		return RoutingFirst
	}
	return n.Routing
}

// DispatchOrDefault returns the node's dispatch order under routing "all".
func (n *Node) DispatchOrDefault() string {
	if n.Dispatch == "" {
		return DispatchParallel
	}
	return n.Dispatch
}

// OnErrorOrDefault returns the node's error policy, with "stop" folded into "abort".
func (n *Node) OnErrorOrDefault() string {
	switch n.OnError {
	case "", OnErrorStop:
		return OnErrorAbort
	}
	return n.OnError
}

// ErrorHandler returns the node id named by on_error, or "".
func (n *Node) ErrorHandler() string {
	switch n.OnErrorOrDefault() {
	case OnErrorAbort, OnErrorSkip, OnErrorContinue:
		return ""
	}
	return n.OnError
}

// FailureModeOrDefault returns the parallel/map failure mode.
func (n *Node) FailureModeOrDefault() string {
	if n.ParallelFailureMode == "" {
		return FailContinue
	}
	return n.ParallelFailureMode
}

// IsReachableRequired reports whether validation must prove the node reachable.
func (n *Node) IsReachableRequired() bool { return n.Reachable == nil || *n.Reachable }

// Clone returns a deep copy of the chain (via JSON, which is what a chain is).
func (c *Chain) Clone() *Chain {
	b, err := json.Marshal(c)
	if err != nil {
		panic("engine: chain is not JSON-safe: " + err.Error())
	}
	var out Chain
	if err := json.Unmarshal(b, &out); err != nil {
		panic("engine: chain does not round-trip: " + err.Error())
	}
	return &out
}

// Node returns the node with the given id, or nil.
func (c *Chain) Node(id string) *Node {
	for i := range c.Nodes {
		if c.Nodes[i].ID == id {
			return &c.Nodes[i]
		}
	}
	return nil
}

// ReservedNames are the names an expression's context gives meaning to; a node
// id may not take one of them, or `<id>.output` would be ambiguous.
var ReservedNames = []string{"input", "state", "node_results", "output", "steps", "item", "index", "resume", "error", "trigger", "when", "chain", "run"}

// IsReserved reports whether id is a reserved context name.
func IsReserved(id string) bool {
	for _, r := range ReservedNames {
		if r == id {
			return true
		}
	}
	return false
}
