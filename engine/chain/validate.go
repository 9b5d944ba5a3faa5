package chain

// Chain validation: the rules of docs/chain-format.md ("Validation rules"):
// structure, A2E compatibility and routing "all". Validate never
// panics, whatever the chain holds (hand-built chains with duplicate ids, nil
// fields or dangling edges included), and runs in O(nodes + edges).
//
// Rule codes (stable; the designer and the API key on them):
//
//	rule                       severity  what it means
//	-------------------------  --------  ----------------------------------------------------------
//	empty_chain                error     the chain has no nodes
//	too_many_nodes             error     more nodes than Limits.MaxNodes
//	too_many_edges             error     more edges than Limits.MaxEdges
//	missing_node_id            error     a node has an empty node_id
//	duplicate_node_id          error     two nodes share an id (the first one wins everywhere else)
//	reserved_id                error     a node id is a reserved context name (IsReserved)
//	unknown_kind               error     a node's kind is empty or not one of Kinds
//	duplicate_edge_id          error     two edges share an id
//	dangling_edge              error     an edge's source or target names no node
//	invalid_value              error     routing, dispatch, parallel_failure_mode, retry.backoff,
//	                                     on_max_reached or a chain-level number out of range
//	invalid_timeout            error     a node or the chain has a negative timeout
//	invalid_retry              error     retry.max_attempts not in 1..100, or a negative delay
//	invalid_max_iterations     error     an edge's max_iterations is negative
//	expression_syntax          error     an expression does not parse (Field and Pos say where)
//	missing_tool_name          error     a tool node has no name
//	unknown_tool               error     a tool node names a tool the host lacks (ValidateWith with Tools)
//	tool_unavailable           warning   a tool node names a tool of a source that cannot reach it now (an MCP server that is down)
//	unknown_credential         error     an http node's auth names a credential the host lacks (ValidateWith with Credential)
//	credential_type            error     ... a credential of a type a request cannot carry (a model key)
//	credential_not_allowed     error     ... a credential limited to other chains
//	credential_unreadable      error     ... a credential whose stored record cannot be read
//	credential_no_hosts        warning   ... an HTTP credential with no allowed hosts (sent nowhere)
//	missing_skill_name         error     a skill node has no name (the sub-chain it calls)
//	invalid_proc_argv          error     a proc node's config.argv is not a non-empty array of strings
//	invalid_interrupt_config   error     an interrupt node's config (schema, deadline, on_timeout, …) is wrong
//	branch_no_condition        error     a branch node has no condition
//	branch_no_edges            error     a branch node has neither a "true" nor a "false" edge
//	branch_missing_edge        warning   a branch node has only one of its "true"/"false" edges and no
//	                                     fallback ("default" or unlabelled) edge
//	condition_no_cases         error     a condition node declares no cases
//	invalid_handle             error     a case handle is empty or "default"
//	duplicate_handle           error     two cases of a condition node share a handle
//	condition_handles          error     a condition node lacks the edge for a case handle, or a
//	                                     default edge (labelled "default", or unlabelled: the router's fallback)
//	unknown_handle             warning   an edge from a condition/branch node whose label matches no handle
//	shadowed_fallback          warning   an unlabelled edge from a condition/branch node that also has a
//	                                     default edge: the router takes the default first, so it never fires
//	missing_map_node           error     a map node has no map_node
//	missing_items_path         error     a map node has no items_path
//	parallel_no_branches       warning   a parallel node has no branches (it runs and outputs [])
//	unknown_reference          error     map_node, branches[i] or on_error names no node
//	self_reference             error     map_node, branches[i] or on_error names the node itself
//	duplicate_branch           error     a parallel node lists a branch twice
//	ignored_field              warning   a field the node's kind (or the edge) does not use
//	attached_with_edges        error     a map body or parallel branch has edges, or an on_error
//	                                     handler has incoming edges
//	attached_conflict          error     a node is attached in two different relations
//	attached_kind              error     a map body or parallel branch is an interrupt, branch or condition
//	unknown_data_reference     error     input_map reads `<id>.output` / `node_results.<id>` of no node
//	attached_data_reference    error     input_map reads the output of a map body or parallel branch
//	unknown_name               warning   another expression (condition, case, set_state, items_path,
//	                                     edge condition) reads a name that is neither reserved nor a node
//	bare_word_comparison       warning   a condition (edge, branch, case) compares with a bare word
//	                                     that names nothing: JMESPath and {{ }} read it as a path
//	                                     (null), not text, so category == billing is always true
//	multiple_unconditional     error     routing "first": conditional edges with more than one
//	                                     unconditional edge alongside
//	multiple_defaults          error     routing "all": more than one edge with default: true
//	default_with_condition     error     routing "all": a default edge carries a condition
//	sibling_guard_parallel     error     routing "all", dispatch parallel: an edge condition reads
//	                                     steps/when (a sibling), which is always unset then
//	dispatch_ignored           warning   dispatch set on a node with routing "first"
//	chain_cycle                error     a cycle through no loop edge (max_iterations >= 1); path named
//	data_cycle                 error     nodes that wait for each other through input_map reads
//	loop_edge_not_in_cycle     warning   a loop edge on no cycle (its target starts as a root)
//	loop_continue_no_exit      warning   on_max_reached "continue" on an edge whose source has no other edge
//	unreachable                error     no root can activate the node, or (chains of more than one
//	                                     node) it is not connected at all; reachable: false exempts
//	unknown_entry_node         error     entry_node names no node
//	entry_not_root             error     entry_node is attached or has incoming (non-loop) edges
//	unknown_chain              error     a skill node calls a chain Resolve does not know
//	skill_cycle                error     sub-chains call each other in a cycle (full path named)
//	max_depth                  error     sub-chain nesting deeper than MaxDepth (full path named)
//	budget_unpriced            error     budget.run.cost or budget.day.cost set while the host has no
//	                                     price table (ValidateWith with Unpriced): a cost cannot be held
//	input_schema               error     a node's static input (input, minus input_map keys) or config does not
//	                                     fit its tool's or agent's schema (ValidateWith with Schemas); the
//	                                     field path is named: input.ms: want a number, got "fast"
//	input_check                error     a tool's own check of a node's static input fails: a code node's
//	                                     script does not parse (line and column in the script)
//	host_policy                warning   a tool's check finds what the host will refuse at run time: an
//	                                     http node's static URL at a loopback or private address without
//	                                     --http-allow-private, an agent's model.url without
//	                                     --model-allow-private (the message names the flag)
//	config_check               error     a node's own check of its config fails (ValidateWith with
//	                                     NodeConfig): an agent defined in its node names no model, its
//	                                     prompt does not parse, its output_schema is no schema
//	unknown_credential, credential_type, credential_not_allowed, credential_unreadable
//	                           error     also for an agent's config.model.credential (its provider's types)
//	test_name                  error     a test has no name, or shares it with another test
//	test_unknown_node          error     a test's mocks, errors, ran, not_ran or expect[i].node names no node
//	test_mock_router           error     a test mocks a branch or condition node
//	test_mock_shape            error     mock data does not fit the tool's output (ToolOutput knows it)
//	test_assertion_syntax      error     a test's expect path or that does not parse
//	test_assertion_form        error     an expect entry is not {path, equals} or {that}
//	test_status                error     a test's assert.status is not a status a run ends with
//	test_ran_conflict          error     a node is in both assert.ran and assert.not_ran
//	test_mock_conflict         error     a test gives a node both a mock and an error
//	pin_unknown_node           error     pinned_outputs names no node
//	pin_router                 error     pinned_outputs pins a branch or condition node
//
// Test issues name the test and field (`tests[1] "happy path".mocks.fetch`),
// pin issues the pin (`pinned_outputs.fetch`); Compile skips both, so a
// broken test or a stale pin never stops the chain from running.
//
// Chain names starting with "__chain__" are reserved for compiled agent
// chains; the store and the API refuse them for hand-written chains, so
// Validate does not.

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/expr"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/tool"
)

// Rule codes of validation issues (see the table above).
const (
	RuleEmptyChain            = "empty_chain"
	RuleTooManyNodes          = "too_many_nodes"
	RuleTooManyEdges          = "too_many_edges"
	RuleMissingNodeID         = "missing_node_id"
	RuleDuplicateNodeID       = "duplicate_node_id"
	RuleReservedID            = "reserved_id"
	RuleUnknownKind           = "unknown_kind"
	RuleDuplicateEdgeID       = "duplicate_edge_id"
	RuleDanglingEdge          = "dangling_edge"
	RuleInvalidValue          = "invalid_value"
	RuleInvalidTimeout        = "invalid_timeout"
	RuleInvalidRetry          = "invalid_retry"
	RuleInvalidMaxIterations  = "invalid_max_iterations"
	RuleExpressionSyntax      = "expression_syntax"
	RuleMissingToolName       = "missing_tool_name"
	RuleUnknownTool           = "unknown_tool"
	RuleToolUnavailable       = "tool_unavailable"
	RuleUnknownCredential     = "unknown_credential"
	RuleCredentialType        = "credential_type"
	RuleCredentialNotAllowed  = "credential_not_allowed"
	RuleCredentialUnreadable  = "credential_unreadable"
	RuleCredentialNoHosts     = "credential_no_hosts"
	RuleMissingSkillName      = "missing_skill_name"
	RuleInvalidProcArgv       = "invalid_proc_argv"
	RuleInterruptConfig       = "invalid_interrupt_config"
	RuleBranchNoCondition     = "branch_no_condition"
	RuleBranchNoEdges         = "branch_no_edges"
	RuleBranchMissingEdge     = "branch_missing_edge"
	RuleConditionNoCases      = "condition_no_cases"
	RuleInvalidHandle         = "invalid_handle"
	RuleDuplicateHandle       = "duplicate_handle"
	RuleConditionHandles      = "condition_handles"
	RuleUnknownHandle         = "unknown_handle"
	RuleMissingMapNode        = "missing_map_node"
	RuleMissingItemsPath      = "missing_items_path"
	RuleParallelNoBranches    = "parallel_no_branches"
	RuleUnknownReference      = "unknown_reference"
	RuleSelfReference         = "self_reference"
	RuleDuplicateBranch       = "duplicate_branch"
	RuleIgnoredField          = "ignored_field"
	RuleAttachedWithEdges     = "attached_with_edges"
	RuleAttachedConflict      = "attached_conflict"
	RuleAttachedKind          = "attached_kind"
	RuleUnknownDataReference  = "unknown_data_reference"
	RuleAttachedDataReference = "attached_data_reference"
	RuleUnknownName           = "unknown_name"
	RuleNodeField             = "node_field"
	RuleBareWordComparison    = "bare_word_comparison"
	RuleMultipleUnconditional = "multiple_unconditional"
	RuleMultipleDefaults      = "multiple_defaults"
	RuleDefaultWithCondition  = "default_with_condition"
	RuleSiblingGuardParallel  = "sibling_guard_parallel"
	RuleDispatchIgnored       = "dispatch_ignored"
	RuleChainCycle            = "chain_cycle"
	RuleDataCycle             = "data_cycle"
	RuleLoopEdgeNotInCycle    = "loop_edge_not_in_cycle"
	RuleLoopContinueNoExit    = "loop_continue_no_exit"
	RuleUnreachable           = "unreachable"
	RuleUnknownEntryNode      = "unknown_entry_node"
	RuleEntryNotRoot          = "entry_not_root"
	RuleUnknownChain          = "unknown_chain"
	RuleSkillCycle            = "skill_cycle"
	RuleMaxDepth              = "max_depth"
	RuleOverCeiling           = "over_ceiling"
	RuleShadowedFallback      = "shadowed_fallback"
	RuleBudgetUnpriced        = "budget_unpriced"
	maxListed                 = 5    // edges/handles named in one message before "and N more"
	maxSkillVisits            = 4096 // sub-chain expansions one ValidateWith may do
	maxSkillRecursion         = 256  // hard bound on sub-chain nesting explored
	defaultHandleLabel        = "default"
	branchTrueLabel           = "true"
	branchFalseLabel          = "false"
)

// ValidateOptions add the checks that need the host.
type ValidateOptions struct {
	// Resolve finds sub-chains (skill nodes) by name; nil skips skill checks.
	Resolve func(name string) (*Chain, bool)
	// Tools reports whether a tool name is known; nil skips tool-name checks.
	Tools func(name string) bool
	// ToolUnavailable says why a known tool cannot be called now (its MCP
	// server is down): a warning, since the chain may be saved and the
	// server may be back by the time it runs. nil skips it.
	ToolUnavailable func(name string) string
	// MaxDepth bounds sub-chain nesting; 0 means the chain's max_depth, or
	// DefaultMaxDepth.
	MaxDepth int
	Limits   Limits
	// ToolOutput returns the known shape of a tool's output (a small JSON
	// Schema, see CheckShape), to check the tests' mocks; nil skips it.
	ToolOutput func(name string) (map[string]any, bool)
	// Schemas gives a node's input and config schemas (input_schema rule);
	// nil skips the rule.
	Schemas NodeSchemas
	// Check gives a node's tool's own check of its static input
	// (input_check rule; Registry.NodeCheck); nil skips the rule.
	Check func(nd *Node) tool.Check
	// SkipTests leaves the chain's test cases unchecked (Compile sets it:
	// a broken test never stops the chain from running).
	SkipTests bool
	// SkipPins leaves the pinned outputs unchecked (Compile sets it: only
	// a run that uses them checks them, with PinIssues).
	SkipPins bool
	// NodeConfig is a node's own check of its config (config_check rule):
	// an agent defined in its node, its credential and its model's URL
	// (agent.Set.CheckNode). credential is Credential (nil: skip them).
	NodeConfig func(nd *Node, credential func(name string) CredentialUse) []tool.Problem
	// Credential looks up a stored credential a node names (an http node's
	// auth.credential): its type, whether it exists and can be read,
	// whether this chain may use it and whether it may be sent anywhere.
	// nil skips the credential checks.
	Credential func(name string) CredentialUse
	// Unpriced says the host has no price table (--prices), so a budget
	// in cost could not be held: budget.*.cost is an error.
	Unpriced bool
}

// CredentialUse is what validation knows of a stored credential a node
// names.
type CredentialUse struct {
	Type    string
	Found   bool
	Allowed bool // this chain may use it
	// Unreadable says why its stored record cannot be read ("": it can).
	Unreadable string
	// NoHosts: no allowed hosts and no default ones, so every request
	// carrying it is refused.
	NoHosts bool
}

// Validate runs every structural check. It never panics, whatever the chain
// holds. Issues are sorted: errors first, then chain-level issues, nodes in
// declaration order, edges in declaration order, then by rule.
func Validate(c *Chain) []Issue { return ValidateWith(c, ValidateOptions{}) }

// ValidateWith is Validate plus the checks that need the host: tool names and
// sub-chain (skill) references.
func ValidateWith(c *Chain, opts ValidateOptions) []Issue {
	if c == nil {
		return []Issue{{Rule: RuleEmptyChain, Severity: SeverityError, Field: "nodes", Message: "there is no chain (nil); a chain needs at least one node"}}
	}
	return validateGraph(NewGraph(c), opts)
}

// validateGraph validates an already indexed chain (Compile shares its graph with the plan).
func validateGraph(g *Graph, opts ValidateOptions) []Issue {
	v := &validator{g: g, c: g.C, opts: opts, lim: opts.Limits.WithDefaults()}
	v.run()
	return v.sorted()
}

// keyed is an Issue with its sort position.
type keyed struct {
	Issue
	group int // 0 chain, 1 node, 2 edge, 3 test, 4 pin
	index int
}

type validator struct {
	g    *Graph
	c    *Chain
	opts ValidateOptions
	lim  Limits

	issues  []keyed
	primary []bool                         // the node is the first with its id (the one edges and references reach)
	attach  []uint8                        // relations the node is attached in (owner != itself), a bit per relation
	owned   [][]int                        // attached nodes by owner (owner != attached)
	readers [][]int                        // reverse of g.dataDeps
	reached []bool                         // forward reachability from the roots
	tgt     []int32                        // target node index per edge (-1: dangling)
	bare    map[*expr.Expr]map[string]bool // names bare_word_comparison already reported, per expression
	sc      schemaChecker                  // input_schema's checker, reused from node to node
}

const (
	bitMapBody uint8 = 1 << iota
	bitBranch
	bitHandler
)

func relBit(rel string) uint8 {
	switch rel {
	case RelMapBody:
		return bitMapBody
	case RelBranch:
		return bitBranch
	case RelHandler:
		return bitHandler
	}
	return 0
}

// ---------------------------------------------------------------- reporting

func (v *validator) add(group, index int, rule string, sev Severity, nodeID, edgeID, field, msg string, pos *int) {
	v.issues = append(v.issues, keyed{
		Issue: Issue{Rule: rule, Severity: sev, NodeID: nodeID, EdgeID: edgeID, Field: field, Pos: pos, Message: msg},
		group: group, index: index,
	})
}

// addAt is add for an expression error at byte offset pos of src.
func (v *validator) addAt(group, index int, rule string, sev Severity, nodeID, edgeID, field, msg, src string, pos int) {
	v.add(group, index, rule, sev, nodeID, edgeID, field, msg, &pos)
	is := &v.issues[len(v.issues)-1].Issue
	is.Line, is.Column = ExprPlace(src, pos)
}

func (v *validator) chainIssue(rule string, sev Severity, field, msg string) {
	v.add(0, 0, rule, sev, "", "", field, msg, nil)
}

func (v *validator) nodeIssue(i int, rule string, sev Severity, field, msg string) {
	v.add(1, i, rule, sev, v.c.Nodes[i].ID, "", field, msg, nil)
}

func (v *validator) edgeIssue(k int, rule string, sev Severity, field, msg string) {
	v.add(2, k, rule, sev, "", v.edgeID(k), field, msg, nil)
}

func (v *validator) sorted() []Issue {
	sort.SliceStable(v.issues, func(a, b int) bool {
		x, y := &v.issues[a], &v.issues[b]
		if rx, ry := sevRank(x.Severity), sevRank(y.Severity); rx != ry {
			return rx < ry
		}
		if x.group != y.group {
			return x.group < y.group
		}
		if x.index != y.index {
			return x.index < y.index
		}
		return x.Rule < y.Rule // ties keep the (deterministic) order of discovery
	})
	out := make([]Issue, len(v.issues))
	for i := range v.issues {
		out[i] = v.issues[i].Issue
	}
	return out
}

func sevRank(s Severity) int {
	if s == SeverityError {
		return 0
	}
	return 1
}

// node returns the quoted id of node i.
func (v *validator) node(i int) string { return strconv.Quote(v.c.Nodes[i].ID) }

// edgeID is the edge's id, or "source->target" for an unnamed (hand-built) edge.
func (v *validator) edgeID(k int) string {
	e := &v.c.Edges[k]
	if e.ID != "" {
		return e.ID
	}
	return e.Source + "->" + e.Target
}

// edge describes an edge for a message: `edge "id" (a -> b)`.
func (v *validator) edge(k int) string {
	e := &v.c.Edges[k]
	return fmt.Sprintf("edge %q (%s -> %s)", v.edgeID(k), e.Source, e.Target)
}

func (v *validator) edgeList(ks []int) string {
	parts := make([]string, 0, maxListed+1)
	for n, k := range ks {
		if n == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(ks)-maxListed))
			break
		}
		parts = append(parts, strconv.Quote(v.edgeID(k)))
	}
	return strings.Join(parts, ", ")
}

func quoteList(ss []string) string { return clip.Quoted(ss, maxListed) }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ---------------------------------------------------------------- driver

func (v *validator) run() {
	c, g := v.c, v.g
	n := len(c.Nodes)
	v.primary = make([]bool, n)
	v.attach = make([]uint8, n)
	v.owned = make([][]int, n)
	v.readers = make([][]int, n)
	for i := range c.Nodes {
		j, ok := g.Idx[c.Nodes[i].ID]
		v.primary[i] = ok && j == i
		for _, a := range g.Owners[i] {
			if a.Owner != i && a.Owner >= 0 && a.Owner < n {
				v.attach[i] |= relBit(a.Rel)
				v.owned[a.Owner] = append(v.owned[a.Owner], i)
			}
		}
		for _, d := range g.DataDeps[i] {
			v.readers[d] = append(v.readers[d], i)
		}
	}

	v.tgt = make([]int32, len(c.Edges))
	for k := range c.Edges {
		v.tgt[k] = -1
		if g.edgeOK[k] {
			v.tgt[k] = int32(g.Idx[c.Edges[k].Target])
		}
	}

	v.checkChain()
	v.checkNodeIDs()
	v.checkEdges()
	v.checkExprErrors()
	for i := range c.Nodes {
		v.checkNodeFields(i)
		v.checkReferences(i)
		if v.primary[i] {
			v.checkAttached(i)
			v.checkRouting(i)
		}
		v.checkDataRefs(i)
		v.checkInputSchema(i)
		v.checkInputCheck(i)
		v.checkNodeConfig(i)
	}
	v.checkEdgeExprNames()
	v.checkCycles()
	v.checkReachability()
	v.checkEntry()
	v.checkSkills()
	if !v.opts.SkipTests {
		v.checkTests()
	}
	if !v.opts.SkipPins {
		v.checkPins()
	}
}

// ---------------------------------------------------------------- chain level

func (v *validator) checkChain() {
	c := v.c
	if len(c.Nodes) == 0 {
		v.chainIssue(RuleEmptyChain, SeverityError, "nodes", "the chain has no nodes; add at least one")
	}
	if len(c.Nodes) > v.lim.MaxNodes {
		v.chainIssue(RuleTooManyNodes, SeverityError, "nodes", fmt.Sprintf("the chain has %d nodes, over the limit of %d", len(c.Nodes), v.lim.MaxNodes))
	}
	if len(c.Edges) > v.lim.MaxEdges {
		v.chainIssue(RuleTooManyEdges, SeverityError, "edges", fmt.Sprintf("the chain has %d edges, over the limit of %d", len(c.Edges), v.lim.MaxEdges))
	}
	if c.Timeout < 0 {
		v.chainIssue(RuleInvalidTimeout, SeverityError, "timeout", fmt.Sprintf("the chain timeout is %g; it must be a number of seconds ≥ 0 (0 means the default of %ds)", c.Timeout, DefaultTimeout))
	}
	if c.MaxConcurrency < 0 {
		v.chainIssue(RuleInvalidValue, SeverityError, "max_concurrency", fmt.Sprintf("max_concurrency is %d; it must be ≥ 0 (0 means the host default)", c.MaxConcurrency))
	}
	if c.MaxDepth < 0 {
		v.chainIssue(RuleInvalidValue, SeverityError, "max_depth", fmt.Sprintf("max_depth is %d; it must be ≥ 1 (0 means the default of %d)", c.MaxDepth, DefaultMaxDepth))
	}
	if c.Timeout > v.lim.MaxChainTimeout {
		v.chainIssue(RuleOverCeiling, SeverityError, "timeout", fmt.Sprintf("the chain timeout is %gs, over this server's ceiling of %gs (ceiling max_chain_timeout, flag %s)", c.Timeout, v.lim.MaxChainTimeout, BudgetFlags["timeout"]))
	}
	for _, f := range c.Budget.fields() {
		switch {
		case f.value < 0:
			v.chainIssue(RuleInvalidValue, SeverityError, f.path, fmt.Sprintf("%s is %g; a budget is 0 (none) or more", f.path, f.value))
		case f.cost && f.value > 0 && v.opts.Unpriced:
			v.chainIssue(RuleBudgetUnpriced, SeverityError, f.path, fmt.Sprintf("%s is %g, but this studio has no price table (--prices): a call's cost is its tokens at its model's price; set a budget in tokens or start the studio with --prices", f.path, f.value))
		}
	}
	if c.MaxDepth > v.lim.MaxDepth {
		v.chainIssue(RuleOverCeiling, SeverityError, "max_depth", fmt.Sprintf("max_depth is %d, over this server's ceiling of %d (ceiling max_depth, flag %s)", c.MaxDepth, v.lim.MaxDepth, BudgetFlags["max_depth"]))
	}
}

// ---------------------------------------------------------------- nodes

func (v *validator) checkNodeIDs() {
	c := v.c
	for i := range c.Nodes {
		nd := &c.Nodes[i]
		if nd.ID == "" {
			v.nodeIssue(i, RuleMissingNodeID, SeverityError, "node_id", fmt.Sprintf("node #%d has no node_id; give it a unique id", i+1))
		} else if !v.primary[i] {
			first := v.g.Idx[nd.ID]
			v.nodeIssue(i, RuleDuplicateNodeID, SeverityError, "node_id", fmt.Sprintf("node id %s is used by node #%d and again by node #%d; node ids must be unique (edges and references reach only the first)", v.node(i), first+1, i+1))
		}
		if IsReserved(nd.ID) {
			v.nodeIssue(i, RuleReservedID, SeverityError, "node_id", fmt.Sprintf("node id %s is reserved for the expression context (reserved: %s); rename the node", v.node(i), strings.Join(ReservedNames, ", ")))
		}
		if !nd.Kind.valid() {
			msg := fmt.Sprintf("node %s has unknown kind %q (one of %s)", v.node(i), nd.Kind, kindList())
			if nd.Kind == "" {
				msg = fmt.Sprintf("node %s has no kind (one of %s)", v.node(i), kindList())
			}
			v.nodeIssue(i, RuleUnknownKind, SeverityError, "kind", msg)
		}
	}
}

// checkCredential: a static auth.credential of an http node names a stored
// credential of a type a request can carry, which this chain may use. A
// name computed by input_map is checked when the call is made.
func (v *validator) checkCredential(i int) {
	nd := &v.c.Nodes[i]
	if v.opts.Credential == nil || nd.Name != "http" {
		return
	}
	auth, ok := nd.Input["auth"].(map[string]any)
	if !ok {
		return
	}
	name, ok := auth["credential"].(string)
	if !ok || name == "" {
		return
	}
	cu := v.opts.Credential(name)
	typ, found, allowed := cu.Type, cu.Found, cu.Allowed
	switch {
	case !found:
		v.nodeIssue(i, RuleUnknownCredential, SeverityError, "input.auth.credential", fmt.Sprintf("node %s uses credential %q, which this studio does not have; an admin adds it in Settings → Credentials", v.node(i), name))
	case cu.Unreadable != "":
		v.nodeIssue(i, RuleCredentialUnreadable, SeverityError, "input.auth.credential", fmt.Sprintf("node %s uses credential %q, which exists but cannot be read (%s); an admin removes it and adds it again in Settings → Credentials", v.node(i), name, cu.Unreadable))
	case !slices.Contains(credential.TypesFor(credential.UseHTTP), typ):
		v.nodeIssue(i, RuleCredentialType, SeverityError, "input.auth.credential", fmt.Sprintf("node %s uses credential %q of type %s, which an HTTP request cannot carry (use %s)", v.node(i), name, typ, strings.Join(credential.TypesFor(credential.UseHTTP), ", ")))
	case !allowed:
		v.nodeIssue(i, RuleCredentialNotAllowed, SeverityError, "input.auth.credential", fmt.Sprintf("node %s uses credential %q, which this chain may not use; an admin can allow it in Settings → Credentials", v.node(i), name))
	case cu.NoHosts:
		v.nodeIssue(i, RuleCredentialNoHosts, SeverityWarning, "input.auth.credential", fmt.Sprintf("node %s uses credential %q, which has no allowed hosts, so every request carrying it is refused; an admin sets its allowed hosts in Settings → Credentials", v.node(i), name))
	}
}

func (v *validator) checkNodeFields(i int) {
	nd := &v.c.Nodes[i]
	switch nd.Kind {
	case KindTool:
		if nd.Name == "" {
			v.nodeIssue(i, RuleMissingToolName, SeverityError, "name", fmt.Sprintf("tool node %s has no name; set name to the tool it calls", v.node(i)))
		} else if v.opts.Tools != nil && !v.opts.Tools(nd.Name) {
			v.nodeIssue(i, RuleUnknownTool, SeverityError, "name", fmt.Sprintf("tool node %s calls tool %q, which this host does not provide", v.node(i), nd.Name))
		} else if v.opts.ToolUnavailable != nil {
			if why := v.opts.ToolUnavailable(nd.Name); why != "" {
				v.nodeIssue(i, RuleToolUnavailable, SeverityWarning, "name", fmt.Sprintf("tool node %s calls tool %q, which cannot be reached now (%s); a run fails at this node until it can", v.node(i), nd.Name, why))
			}
		}
		v.checkCredential(i)
	case KindSkill:
		if nd.Name == "" {
			v.nodeIssue(i, RuleMissingSkillName, SeverityError, "name", fmt.Sprintf("skill node %s has no name; set name to the chain it calls", v.node(i)))
		}
	case KindProc:
		v.checkArgv(i)
	case KindInterrupt:
		v.checkInterruptConfig(i)
	case KindBranch:
		if nd.Condition == "" {
			v.nodeIssue(i, RuleBranchNoCondition, SeverityError, "condition", fmt.Sprintf("branch node %s has no condition; set condition to the expression that picks its \"true\" or \"false\" edge", v.node(i)))
		}
	case KindCondition:
		if len(nd.Cases) == 0 {
			v.nodeIssue(i, RuleConditionNoCases, SeverityError, "cases", fmt.Sprintf("condition node %s has no cases; add at least one case with a handle and a when expression", v.node(i)))
		}
	case KindMap:
		if nd.MapNode == "" {
			v.nodeIssue(i, RuleMissingMapNode, SeverityError, "map_node", fmt.Sprintf("map node %s has no map_node; set it to the node applied to each item", v.node(i)))
		}
		if nd.ItemsPath == "" {
			v.nodeIssue(i, RuleMissingItemsPath, SeverityError, "items_path", fmt.Sprintf("map node %s has no items_path; set it to the expression giving the list to iterate", v.node(i)))
		}
	case KindParallel:
		if len(nd.Branches) == 0 {
			v.nodeIssue(i, RuleParallelNoBranches, SeverityWarning, "branches", fmt.Sprintf("parallel node %s has no branches; it runs and outputs []", v.node(i)))
		}
	}
	if nd.Kind != KindMap {
		if nd.MapNode != "" {
			v.nodeIssue(i, RuleIgnoredField, SeverityWarning, "map_node", fmt.Sprintf("node %s is a %s node; map_node is used only by map nodes and is ignored", v.node(i), kindName(nd.Kind)))
		}
		if nd.ItemsPath != "" {
			v.nodeIssue(i, RuleIgnoredField, SeverityWarning, "items_path", fmt.Sprintf("node %s is a %s node; items_path is used only by map nodes and is ignored", v.node(i), kindName(nd.Kind)))
		}
	}
	if nd.Kind != KindParallel && len(nd.Branches) > 0 {
		v.nodeIssue(i, RuleIgnoredField, SeverityWarning, "branches", fmt.Sprintf("node %s is a %s node; branches is used only by parallel nodes and is ignored", v.node(i), kindName(nd.Kind)))
	}
	if nd.Kind != KindCondition && len(nd.Cases) > 0 {
		v.nodeIssue(i, RuleIgnoredField, SeverityWarning, "cases", fmt.Sprintf("node %s is a %s node; cases are used only by condition nodes and are ignored", v.node(i), kindName(nd.Kind)))
	}
	if nd.StaticOnly {
		v.checkStaticOnly(i)
	}

	switch nd.Routing {
	case "", RoutingFirst, RoutingAll:
	default:
		v.nodeIssue(i, RuleInvalidValue, SeverityError, "routing", fmt.Sprintf("node %s has unknown routing %q (first or all)", v.node(i), nd.Routing))
	}
	switch nd.Dispatch {
	case "", DispatchParallel, DispatchSequential:
	default:
		v.nodeIssue(i, RuleInvalidValue, SeverityError, "dispatch", fmt.Sprintf("node %s has unknown dispatch %q (parallel or sequential)", v.node(i), nd.Dispatch))
	}
	switch nd.ParallelFailureMode {
	case "", FailContinue, FailFast, FailAnySuccess:
	default:
		v.nodeIssue(i, RuleInvalidValue, SeverityError, "parallel_failure_mode", fmt.Sprintf("node %s has unknown parallel_failure_mode %q (continue, fail_fast or any_success)", v.node(i), nd.ParallelFailureMode))
	}
	if nd.Timeout < 0 {
		v.nodeIssue(i, RuleInvalidTimeout, SeverityError, "timeout", fmt.Sprintf("node %s has timeout %g; it must be a number of seconds ≥ 0 (0 means no per-attempt limit)", v.node(i), nd.Timeout))
	}
	if r := nd.Retry; r != nil {
		if r.MaxAttempts < 1 || r.MaxAttempts > 100 {
			v.nodeIssue(i, RuleInvalidRetry, SeverityError, "retry.max_attempts", fmt.Sprintf("node %s has retry.max_attempts %d; it must be between 1 and 100 (1 means no retry)", v.node(i), r.MaxAttempts))
		}
		if r.InitialDelaySeconds < 0 || r.InitialDelaySeconds > 3600 {
			v.nodeIssue(i, RuleInvalidRetry, SeverityError, "retry.initial_delay_seconds", fmt.Sprintf("node %s has retry.initial_delay_seconds %g; it must be between 0 and 3600", v.node(i), r.InitialDelaySeconds))
		}
		switch r.Backoff {
		case "", "fixed", "exponential":
		default:
			v.nodeIssue(i, RuleInvalidValue, SeverityError, "retry.backoff", fmt.Sprintf("node %s has unknown retry.backoff %q (fixed or exponential)", v.node(i), r.Backoff))
		}
	}
}

func withArticle(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

func kindName(k Kind) string {
	if k == "" {
		return "kind-less"
	}
	return string(k)
}

// checkStaticOnly warns when static_only changes nothing: the run's input
// would not flow into node i anyway (dataflow.go). Without the host's
// schemas only the kind is known.
func (v *validator) checkStaticOnly(i int) {
	nd := &v.c.Nodes[i]
	why := ""
	switch {
	case nd.Kind != KindTool:
		why = fmt.Sprintf("node %s is a %s node; static_only is used only by tool nodes and is ignored", v.node(i), kindName(nd.Kind))
	case v.opts.Schemas == nil:
		return
	default:
		in, _ := v.opts.Schemas(nd)
		if v.g.dataFlowField(i, in) != "" {
			return
		}
		why = fmt.Sprintf("node %s sets static_only, which changes nothing: only a root tool node (no edge feeds it) with a static input, no input_map and a tool with a data field that the input leaves unset gets the run's input by default", v.node(i))
	}
	v.nodeIssue(i, RuleIgnoredField, SeverityWarning, "static_only", why)
}

// checkArgv: a proc node needs config.argv, a non-empty array of strings whose
// first element (the program) is not empty. argv supplied through input or
// input_map instead is accepted (it is only known at run time).
// checkInterruptConfig reports every problem of an interrupt node's config
// (approval.go), and an on_timeout "edge" without an edge labelled timeout.
func (v *validator) checkInterruptConfig(i int) {
	ic, issues := ParseInterruptConfig(v.c.Nodes[i].Config)
	for _, is := range issues {
		v.nodeIssue(i, RuleInterruptConfig, SeverityError, is.Field, fmt.Sprintf("interrupt node %s: %s %s", v.node(i), is.Field, is.Msg))
	}
	v.checkAskNames(i, ic)
	if ic.OnTimeout == OnTimeoutEdge {
		for _, ei := range v.g.Out[i] {
			if v.c.Edges[ei].Label == LabelTimeout {
				return
			}
		}
		v.nodeIssue(i, RuleInterruptConfig, SeverityError, "config.on_timeout", fmt.Sprintf("interrupt node %s: config.on_timeout is \"edge\" but no outgoing edge is labelled \"timeout\"; add one or choose reject or default", v.node(i)))
	}
}

// checkAskNames warns about names the prompt's templates and the fields'
// expressions read that resolve to nothing, and about `steps`, which only
// a sequential dispatch fills: a node's output is read as <id>.output.
func (v *validator) checkAskNames(i int, ic *InterruptConfig) {
	check := func(field string, refs []expr.Ref) {
		v.warnRefNames(i, -1, field, refs, nil)
		for _, r := range refs {
			if r.Root != "steps" || r.Field == "" || v.sequentialTarget(i) {
				continue
			}
			v.nodeIssue(i, RuleUnknownName, SeverityWarning, field, fmt.Sprintf("interrupt node %s: %s reads steps.%s, but steps holds only the links a sequential dispatch already ran and is empty here; read a node's output as %s.output", v.node(i), field, r.Field, r.Field))
		}
	}
	TemplateRefs(ic.Prompt, "config.prompt", check)
	for _, f := range ic.Fields {
		check("config.fields."+f.Label, f.Expr.Refs())
	}
}

// sequentialTarget reports whether an edge into node i comes from a node
// that dispatches its links one after another (where `steps` is set).
func (v *validator) sequentialTarget(i int) bool {
	for _, ei := range v.g.In[i] {
		if s, ok := v.g.Idx[v.c.Edges[ei].Source]; ok && v.c.Nodes[s].RoutingOrDefault() == RoutingAll && v.c.Nodes[s].DispatchOrDefault() == DispatchSequential {
			return true
		}
	}
	return false
}

func (v *validator) checkArgv(i int) {
	nd := &v.c.Nodes[i]
	raw, ok := nd.Config["argv"]
	if !ok {
		if _, in := nd.Input["argv"]; in {
			return
		}
		if _, in := nd.InputMap["argv"]; in {
			return
		}
		v.nodeIssue(i, RuleInvalidProcArgv, SeverityError, "config.argv", fmt.Sprintf("proc node %s has no config.argv; set it to the program and its arguments, e.g. [\"wc\", \"-l\"]", v.node(i)))
		return
	}
	var argv []string
	switch a := raw.(type) {
	case []string:
		argv = a
	case []any:
		for k, x := range a {
			s, isStr := x.(string)
			if !isStr {
				v.nodeIssue(i, RuleInvalidProcArgv, SeverityError, "config.argv", fmt.Sprintf("proc node %s: config.argv[%d] is %s; every element must be a string", v.node(i), k, jsonTypeName(x)))
				return
			}
			argv = append(argv, s)
		}
	default:
		v.nodeIssue(i, RuleInvalidProcArgv, SeverityError, "config.argv", fmt.Sprintf("proc node %s: config.argv is %s; it must be an array of strings", v.node(i), jsonTypeName(raw)))
		return
	}
	switch {
	case len(argv) == 0:
		v.nodeIssue(i, RuleInvalidProcArgv, SeverityError, "config.argv", fmt.Sprintf("proc node %s: config.argv is empty; it needs at least the program", v.node(i)))
	case argv[0] == "":
		v.nodeIssue(i, RuleInvalidProcArgv, SeverityError, "config.argv", fmt.Sprintf("proc node %s: config.argv[0] (the program) is empty", v.node(i)))
	}
}

func jsonTypeName(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, float32, int, int64, int32:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", x)
}

// checkReferences: map_node, branches and on_error must name other nodes.
func (v *validator) checkReferences(i int) {
	nd := &v.c.Nodes[i]
	g := v.g
	if nd.Kind == KindMap && nd.MapNode != "" {
		if _, ok := g.Idx[nd.MapNode]; !ok {
			v.nodeIssue(i, RuleUnknownReference, SeverityError, "map_node", fmt.Sprintf("map node %s: map_node %q names no node", v.node(i), nd.MapNode))
		} else if nd.MapNode == nd.ID {
			v.nodeIssue(i, RuleSelfReference, SeverityError, "map_node", fmt.Sprintf("map node %s names itself as its map_node; name the node applied to each item", v.node(i)))
		}
	}
	if nd.Kind == KindParallel {
		seen := make(map[string]int, len(nd.Branches))
		for k, b := range nd.Branches {
			field := "branches[" + itoa(k) + "]"
			if j, dup := seen[b]; dup {
				v.nodeIssue(i, RuleDuplicateBranch, SeverityError, field, fmt.Sprintf("parallel node %s lists branch %q twice (branches[%d] and branches[%d])", v.node(i), b, j, k))
				continue
			}
			seen[b] = k
			switch _, ok := g.Idx[b]; {
			case b == "":
				v.nodeIssue(i, RuleUnknownReference, SeverityError, field, fmt.Sprintf("parallel node %s: %s is empty; name a node", v.node(i), field))
			case !ok:
				v.nodeIssue(i, RuleUnknownReference, SeverityError, field, fmt.Sprintf("parallel node %s: %s %q names no node", v.node(i), field, b))
			case b == nd.ID:
				v.nodeIssue(i, RuleSelfReference, SeverityError, field, fmt.Sprintf("parallel node %s lists itself as a branch", v.node(i)))
			}
		}
	}
	if h := nd.ErrorHandler(); h != "" {
		if _, ok := g.Idx[h]; !ok {
			v.nodeIssue(i, RuleUnknownReference, SeverityError, "on_error", fmt.Sprintf("node %s: on_error %q names no node (use abort, skip, continue or the id of a handler node)", v.node(i), h))
		} else if h == nd.ID {
			v.nodeIssue(i, RuleSelfReference, SeverityError, "on_error", fmt.Sprintf("node %s names itself as its on_error handler", v.node(i)))
		}
	}
}

// checkAttached: map bodies and parallel branches run only inside their
// owner, so they may have no edges and may not route; error handlers may
// continue the flow with outgoing edges but cannot be entered by one.
func (v *validator) checkAttached(i int) {
	bits := v.attach[i]
	if bits == 0 {
		return
	}
	g, nd := v.g, &v.c.Nodes[i]
	// describe the first map/parallel relation, else the first handler one
	rel, owner := "", ""
	for _, a := range g.Owners[i] {
		if a.Owner == i {
			continue
		}
		if rel == "" || (rel == RelHandler && a.Rel != RelHandler) {
			rel, owner = a.Rel, v.node(a.Owner)
		}
	}
	if bits&(bits-1) != 0 { // more than one relation
		var rels []string
		for _, r := range []struct {
			bit  uint8
			desc string
		}{{bitMapBody, "a map body (map_node)"}, {bitBranch, "a parallel branch (branches)"}, {bitHandler, "an error handler (on_error)"}} {
			if bits&r.bit != 0 {
				rels = append(rels, r.desc)
			}
		}
		v.nodeIssue(i, RuleAttachedConflict, SeverityError, "", fmt.Sprintf("node %s is attached as %s; a node may be attached in only one way", v.node(i), strings.Join(rels, " and as ")))
	}
	inner := bits&(bitMapBody|bitBranch) != 0
	if inner {
		what := "the map body of " + owner
		if rel == RelBranch {
			what = "a parallel branch of " + owner
		}
		var ks []int
		ks = append(ks, g.In[i]...)
		ks = append(ks, g.LoopIn[i]...)
		ks = append(ks, g.Out[i]...)
		if len(ks) > 0 {
			sort.Ints(ks)
			v.nodeIssue(i, RuleAttachedWithEdges, SeverityError, "", fmt.Sprintf("node %s is %s; it runs only inside %s, so its edges would never fire (%s: %s); remove them", v.node(i), what, owner, plural(len(ks), "edge", "edges"), v.edgeList(ks)))
		}
		switch nd.Kind {
		case KindInterrupt, KindBranch, KindCondition:
			v.nodeIssue(i, RuleAttachedKind, SeverityError, "kind", fmt.Sprintf("node %s is %s and may not be %s node: it runs only inside %s and cannot pause or route", v.node(i), what, withArticle(string(nd.Kind)), owner))
		}
		return
	}
	// handler only
	var ks []int
	ks = append(ks, g.In[i]...)
	ks = append(ks, g.LoopIn[i]...)
	if len(ks) > 0 {
		sort.Ints(ks)
		v.nodeIssue(i, RuleAttachedWithEdges, SeverityError, "", fmt.Sprintf("node %s is the on_error handler of %s; it starts only when %s fails, so it may not have incoming edges (%s: %s); outgoing edges are fine", v.node(i), owner, owner, plural(len(ks), "edge", "edges"), v.edgeList(ks)))
	}
}

// ---------------------------------------------------------------- edges

func (v *validator) checkEdges() {
	c, g := v.c, v.g
	ids := make(map[string]int32, len(c.Edges))
	for k := range c.Edges {
		e := &c.Edges[k]
		if e.ID != "" {
			if j, dup := ids[e.ID]; dup {
				v.edgeIssue(k, RuleDuplicateEdgeID, SeverityError, "id", fmt.Sprintf("edge id %q is used by edges #%d and #%d; edge ids must be unique", e.ID, j+1, k+1))
			} else {
				ids[e.ID] = int32(k)
			}
		}
		okS, okT := true, true
		if !g.edgeOK[k] {
			_, okS = g.Idx[e.Source]
			_, okT = g.Idx[e.Target]
		}
		switch {
		case !okS && !okT:
			v.edgeIssue(k, RuleDanglingEdge, SeverityError, "", fmt.Sprintf("%s: neither its source %q nor its target %q is a node", v.edge(k), e.Source, e.Target))
		case !okS:
			v.edgeIssue(k, RuleDanglingEdge, SeverityError, "source", fmt.Sprintf("%s: its source %q is not a node", v.edge(k), e.Source))
		case !okT:
			v.edgeIssue(k, RuleDanglingEdge, SeverityError, "target", fmt.Sprintf("%s: its target %q is not a node", v.edge(k), e.Target))
		}
		if e.MaxIterations < 0 {
			v.edgeIssue(k, RuleInvalidMaxIterations, SeverityError, "max_iterations", fmt.Sprintf("%s has max_iterations %d; a loop edge needs max_iterations ≥ 1 (0 or absent on other edges)", v.edge(k), e.MaxIterations))
		}
		if e.MaxIterations > v.lim.MaxIterations {
			v.edgeIssue(k, RuleOverCeiling, SeverityError, "max_iterations", fmt.Sprintf("%s has max_iterations %d, over this server's ceiling of %d (ceiling max_iterations, flag %s)", v.edge(k), e.MaxIterations, v.lim.MaxIterations, BudgetFlags["max_iterations"]))
		}
		switch e.OnMaxReached {
		case "", OnMaxError, OnMaxContinue:
			if e.OnMaxReached != "" && !e.IsLoop() {
				v.edgeIssue(k, RuleIgnoredField, SeverityWarning, "on_max_reached", fmt.Sprintf("%s sets on_max_reached but is not a loop edge (no max_iterations ≥ 1); it is ignored", v.edge(k)))
			}
		default:
			v.edgeIssue(k, RuleInvalidValue, SeverityError, "on_max_reached", fmt.Sprintf("%s has unknown on_max_reached %q (error or continue)", v.edge(k), e.OnMaxReached))
		}
		if e.IsLoop() && e.OnMaxReached == OnMaxContinue && g.edgeOK[k] {
			if s := g.Idx[e.Source]; len(g.Out[s]) == 1 {
				v.edgeIssue(k, RuleLoopContinueNoExit, SeverityWarning, "on_max_reached", fmt.Sprintf("loop %s continues when it reaches max_iterations %d, but %s has no other outgoing edge, so the flow just stops there; add an exit edge from %s", v.edge(k), e.MaxIterations, v.node(s), v.node(s)))
			}
		}
	}
}

// ---------------------------------------------------------------- expressions

func (v *validator) checkExprErrors() {
	n, m := len(v.c.Nodes), len(v.c.Edges)
	for _, xe := range v.g.exprErrs {
		detail := ""
		var se *expr.SyntaxError
		hasPos := xe.err != nil && errors.As(xe.err, &se)
		if hasPos {
			line, col := ExprPlace(se.Src, se.Pos)
			detail = fmt.Sprintf("%s (at line %d, column %d)", se.Msg, line, col)
		} else if xe.err != nil {
			detail = xe.err.Error()
		}
		var group, index int
		var nodeID, edgeID, msg string
		switch {
		case xe.edge >= 0 && xe.edge < m:
			group, index, edgeID = 2, xe.edge, v.edgeID(xe.edge)
			msg = fmt.Sprintf("%s: %s does not parse: %s", v.edge(xe.edge), xe.field, detail)
		case xe.node >= 0 && xe.node < n:
			group, index, nodeID = 1, xe.node, v.c.Nodes[xe.node].ID
			msg = fmt.Sprintf("node %s: %s does not parse: %s", v.node(xe.node), xe.field, detail)
		default:
			msg = fmt.Sprintf("%s does not parse: %s", xe.field, detail)
		}
		if hasPos {
			v.addAt(group, index, RuleExpressionSyntax, SeverityError, nodeID, edgeID, xe.field, msg, se.Src, se.Pos)
		} else {
			v.add(group, index, RuleExpressionSyntax, SeverityError, nodeID, edgeID, xe.field, msg, nil)
		}
	}
}

// refTarget returns the node id a reference reads (`<id>.output`,
// `node_results.<id>`), or "" when it reads a context name.
func refTarget(r expr.Ref) (id string, text string) {
	switch {
	case r.Root == "" || r.Root == "@":
		return "", ""
	case r.Root == "node_results":
		if r.Field == "" {
			return "", ""
		}
		return r.Field, "node_results." + r.Field
	case IsReserved(r.Root):
		return "", ""
	}
	return r.Root, r.Root
}

// checkDataRefs: input_map must read real, independently run nodes; other
// expressions reading unknown names get a warning (they read null).
func (v *validator) checkDataRefs(i int) {
	g := v.g
	for _, ne := range g.InputMap[i] {
		if ne.Expr == nil {
			continue
		}
		field := "input_map." + ne.Key
		for _, r := range ne.Expr.Refs() {
			id, text := refTarget(r)
			if id == "" {
				continue
			}
			j, ok := g.Idx[id]
			if !ok {
				v.nodeIssue(i, RuleUnknownDataReference, SeverityError, field, fmt.Sprintf("node %s: %s reads %s, but there is no node %q (context names: %s)%s", v.node(i), field, text, id, strings.Join(ReservedNames, ", "), v.didYouMean(id)))
				continue
			}
			v.warnNodeField(i, -1, field, r)
			if j == i || v.attach[j]&(bitMapBody|bitBranch) == 0 {
				continue
			}
			what, owner := v.innerOwner(j)
			v.nodeIssue(i, RuleAttachedDataReference, SeverityError, field, fmt.Sprintf("node %s: %s reads %s, but %s is %s %s and runs only inside it; read %s.output instead", v.node(i), field, text, v.node(j), what, owner, strings.Trim(owner, `"`)))
		}
	}
	if v.primary[i] {
		nd := &v.c.Nodes[i]
		v.warnBareWords(i, -1, "condition", g.Condition[i])
		v.warnNames(i, -1, "condition", g.Condition[i])
		v.warnNames(i, -1, "items_path", g.Items[i])
		for k, e := range g.Cases[i] {
			if k < len(nd.Cases) {
				v.warnBareWords(i, -1, "cases["+itoa(k)+"].when", e)
				v.warnNames(i, -1, "cases["+itoa(k)+"].when", e)
			}
		}
		for _, ne := range g.SetState[i] {
			v.warnNames(i, -1, "set_state."+ne.Key, ne.Expr)
		}
	}
}

// innerOwner describes the map/parallel relation of an attached node.
func (v *validator) innerOwner(j int) (what, owner string) {
	for _, a := range v.g.Owners[j] {
		if a.Owner == j {
			continue
		}
		switch a.Rel {
		case RelMapBody:
			return "the map body of", v.node(a.Owner)
		case RelBranch:
			return "a parallel branch of", v.node(a.Owner)
		}
	}
	return "attached to", `""`
}

func (v *validator) checkEdgeExprNames() {
	for k := range v.c.Edges {
		if v.g.edgeOK[k] {
			v.warnBareWords(-1, k, "condition", v.g.EdgeCond[k])
			v.warnNames(-1, k, "condition", v.g.EdgeCond[k])
		}
	}
}

// warnBareWords warns about a condition comparing with a bare word that
// names nothing (category == billing): it reads null, not the text, and
// says how to write the comparison.
func (v *validator) warnBareWords(node, edge int, field string, e *expr.Expr) {
	if e == nil {
		return
	}
	for _, b := range expr.BareWords(e, v.knownName) {
		if v.bare == nil {
			v.bare = map[*expr.Expr]map[string]bool{}
		}
		if v.bare[e] == nil {
			v.bare[e] = map[string]bool{}
		}
		v.bare[e][b.Word] = true
		var what string
		if b.Both {
			v.bare[e][b.Other] = true
			always := "false"
			if b.Op == "==" {
				always = "true" // null == null
			}
			what = fmt.Sprintf("%s %q compares two paths, %s and %s, that name nothing: both read null, so it is always %s", field, e.Source(), b.Other, b.Word, always)
		} else {
			what = fmt.Sprintf("%s %q reads %s as a path, which names nothing and is always null, not as the text %q", field, e.Source(), b.Word, b.Word)
		}
		msg := fmt.Sprintf("%s; to compare with the text, write %s", what, b.Fix())
		if b.Both {
			msg += fmt.Sprintf(" (%s names nothing either: read it from where it is, e.g. input.%s or state.%s)", b.Other, b.Other, b.Other)
		}
		if node >= 0 {
			v.nodeIssue(node, RuleBareWordComparison, SeverityWarning, field, fmt.Sprintf("node %s: %s", v.node(node), msg))
		} else {
			v.edgeIssue(edge, RuleBareWordComparison, SeverityWarning, field, fmt.Sprintf("%s: %s", v.edge(edge), msg))
		}
	}
}

// knownName reports whether a bare name resolves: a context name or a node.
func (v *validator) knownName(name string) bool {
	if IsReserved(name) {
		return true
	}
	_, ok := v.g.Idx[name]
	return ok
}

// didYouMean is "; did you mean X?" for the context name or node id
// closest to an unknown name, or "".
func (v *validator) didYouMean(name string) string {
	if alt := SuggestName(v.c, name); alt != "" {
		return "; did you mean " + alt + "?"
	}
	return ""
}

// warnNames warns about names an expression reads that resolve to nothing.
func (v *validator) warnNames(node, edge int, field string, e *expr.Expr) {
	if e == nil {
		return
	}
	v.warnRefNames(node, edge, field, e.Refs(), v.bare[e])
}

// warnRefNames is warnNames over the references of an expression or a
// template; explained holds the names bare_word_comparison already named.
func (v *validator) warnRefNames(node, edge int, field string, refs []expr.Ref, explained map[string]bool) {
	for _, r := range refs {
		id, text := refTarget(r)
		if id == "" {
			continue
		}
		if _, ok := v.g.Idx[id]; ok {
			v.warnNodeField(node, edge, field, r)
			continue
		}
		if explained[r.Root] {
			continue // already explained by bare_word_comparison
		}
		hint := v.didYouMean(id)
		if node >= 0 {
			v.nodeIssue(node, RuleUnknownName, SeverityWarning, field, fmt.Sprintf("node %s: %s reads %s, which is neither a node nor a context name (%s); it is always null%s", v.node(node), field, text, strings.Join(ReservedNames, ", "), hint))
		} else {
			v.edgeIssue(edge, RuleUnknownName, SeverityWarning, field, fmt.Sprintf("%s: condition reads %s, which is neither a node nor a context name (%s); it is always null%s", v.edge(edge), text, strings.Join(ReservedNames, ", "), hint))
		}
	}
}

// warnNodeField warns about `<id>.<field>` with a field other than output:
// a node's entry in the context holds only its output, so the path is
// always null. (A2E SDK examples write `$.read.path` for read's output.)
func (v *validator) warnNodeField(node, edge int, field string, r expr.Ref) {
	if r.Root == "node_results" || r.Field == "" || r.Field == "output" {
		return
	}
	msg := fmt.Sprintf("reads %s.%s, but %s holds only the node's output (%s.output); it is always null: read %s.output.%s", r.Root, r.Field, r.Root, r.Root, r.Root, r.Field)
	if node >= 0 {
		v.nodeIssue(node, RuleNodeField, SeverityWarning, field, fmt.Sprintf("node %s: %s %s", v.node(node), field, msg))
	} else {
		v.edgeIssue(edge, RuleNodeField, SeverityWarning, field, fmt.Sprintf("%s: condition %s", v.edge(edge), msg))
	}
}

// ---------------------------------------------------------------- routing

func (v *validator) checkRouting(i int) {
	g, c := v.g, v.c
	nd := &c.Nodes[i]
	out := g.Out[i]
	switch nd.Kind {
	case KindCondition:
		v.checkConditionHandles(i)
		return
	case KindBranch:
		// routed like a condition node whose handles are "true" and "false":
		// the labelled edge, else "default", else an unlabelled edge
		hasTrue, hasFalse, fallback := false, false, false
		for _, k := range out {
			if c.Edges[k].Default {
				fallback = true
			}
			switch lbl := c.Edges[k].Label; lbl {
			case branchTrueLabel:
				hasTrue = true
			case branchFalseLabel:
				hasFalse = true
			case defaultHandleLabel, "":
				fallback = true
			default:
				v.edgeIssue(k, RuleUnknownHandle, SeverityWarning, "label", fmt.Sprintf("%s from branch node %s is labelled %q; a branch node picks the edge labelled \"true\" or \"false\" (else \"default\", else an unlabelled one), so this edge never fires", v.edge(k), v.node(i), lbl))
			}
		}
		v.warnShadowedFallback(i, "branch", `"true" or "false"`)
		switch {
		case !hasTrue && !hasFalse:
			v.nodeIssue(i, RuleBranchNoEdges, SeverityError, "", fmt.Sprintf("branch node %s has no edge labelled \"true\" or \"false\"; add at least one (true_node/false_node in A2E)", v.node(i)))
		case fallback:
		case !hasTrue:
			v.nodeIssue(i, RuleBranchMissingEdge, SeverityWarning, "", fmt.Sprintf("branch node %s has no edge labelled \"true\" (and no default edge); when its condition is true the branch ends there", v.node(i)))
		case !hasFalse:
			v.nodeIssue(i, RuleBranchMissingEdge, SeverityWarning, "", fmt.Sprintf("branch node %s has no edge labelled \"false\" (and no default edge); when its condition is false the branch ends there", v.node(i)))
		}
		return
	}
	if nd.RoutingOrDefault() == RoutingAll {
		var defaults []int
		for _, k := range out {
			e := &c.Edges[k]
			if !e.Default {
				continue
			}
			defaults = append(defaults, k)
			if e.Condition != "" {
				v.edgeIssue(k, RuleDefaultWithCondition, SeverityError, "condition", fmt.Sprintf("default %s from %s also has a condition; a default edge fires only when no conditional edge matched and may not carry its own condition", v.edge(k), v.node(i)))
			}
		}
		if len(defaults) > 1 {
			v.nodeIssue(i, RuleMultipleDefaults, SeverityError, "", fmt.Sprintf("node %s has %d default edges (%s); with routing \"all\" at most one edge may set default: true", v.node(i), len(defaults), v.edgeList(defaults)))
		}
		if nd.DispatchOrDefault() == DispatchParallel {
			for _, k := range out {
				e := g.EdgeCond[k]
				if e == nil {
					continue
				}
				for _, r := range e.Refs() {
					if r.Root == "steps" || r.Root == "when" {
						v.edgeIssue(k, RuleSiblingGuardParallel, SeverityError, "condition", fmt.Sprintf("%s: its condition reads %s (a sibling's result), but %s dispatches its edges in parallel, where every guard is evaluated before any sibling runs, so it is always unset; set dispatch: sequential on %s", v.edge(k), r.Root, v.node(i), v.node(i)))
						break
					}
				}
			}
		}
		return
	}
	if nd.Dispatch != "" {
		v.nodeIssue(i, RuleDispatchIgnored, SeverityWarning, "dispatch", fmt.Sprintf("node %s sets dispatch %q, which only applies with routing \"all\"; with routing \"first\" one edge fires and dispatch is ignored", v.node(i), nd.Dispatch))
	}
	conditional := 0
	var uncond []int
	for _, k := range out {
		if c.Edges[k].Condition != "" {
			conditional++
		} else {
			uncond = append(uncond, k)
		}
	}
	if conditional > 0 && len(uncond) > 1 {
		def := uncond[0]
		for _, k := range uncond {
			if c.Edges[k].Default {
				def = k
				break
			}
		}
		v.nodeIssue(i, RuleMultipleUnconditional, SeverityError, "", fmt.Sprintf("node %s has %s and %d unconditional edges (%s); with routing \"first\" only one unconditional edge is the default taken when no condition matches (here %q) and the others never fire; keep one unconditional edge, add conditions, or set routing: all", v.node(i), plural(conditional, "conditional edge", "conditional edges"), len(uncond), v.edgeList(uncond), c.Edges[def].ID))
	}
}

func (v *validator) checkConditionHandles(i int) {
	c, g := v.c, v.g
	nd := &c.Nodes[i]
	out := g.Out[i]
	labels := make(map[string]bool, len(out))
	hasDefault := false
	for _, k := range out {
		e := &c.Edges[k]
		labels[e.Label] = true
		if e.Label == defaultHandleLabel || e.Label == "" || e.Default { // how the router falls back
			hasDefault = true
		}
	}
	handles := make(map[string]int, len(nd.Cases))
	var order []string
	for k, cs := range nd.Cases {
		field := "cases[" + itoa(k) + "].handle"
		switch {
		case cs.Handle == "":
			v.nodeIssue(i, RuleInvalidHandle, SeverityError, field, fmt.Sprintf("condition node %s: case %d has no handle; name the handle its edge is labelled with", v.node(i), k))
			continue
		case cs.Handle == defaultHandleLabel:
			v.nodeIssue(i, RuleInvalidHandle, SeverityError, field, fmt.Sprintf("condition node %s: case %d uses the handle \"default\", which is reserved for the edge taken when no case matches; rename it", v.node(i), k))
			continue
		}
		if j, dup := handles[cs.Handle]; dup {
			v.nodeIssue(i, RuleDuplicateHandle, SeverityError, field, fmt.Sprintf("condition node %s declares handle %q twice (cases[%d] and cases[%d]); the second case can never match", v.node(i), cs.Handle, j, k))
			continue
		}
		handles[cs.Handle] = k
		order = append(order, cs.Handle)
	}
	for _, h := range order {
		if !labels[h] {
			v.nodeIssue(i, RuleConditionHandles, SeverityError, "cases["+itoa(handles[h])+"].handle", fmt.Sprintf("condition node %s has no edge for handle %q; add an edge labelled %q", v.node(i), h, h))
		}
	}
	v.warnShadowedFallback(i, "condition", "a case handle")
	if len(nd.Cases) > 0 && !hasDefault {
		v.nodeIssue(i, RuleConditionHandles, SeverityError, "edges", fmt.Sprintf("condition node %s has no default edge; add an edge labelled \"default\" (taken when no case matches)", v.node(i)))
	}
	for _, k := range out {
		lbl := c.Edges[k].Label
		if lbl == "" || lbl == defaultHandleLabel {
			continue
		}
		if _, ok := handles[lbl]; !ok {
			v.edgeIssue(k, RuleUnknownHandle, SeverityWarning, "label", fmt.Sprintf("%s from condition node %s is labelled %q, which matches no case handle (handles: %s), so it never fires", v.edge(k), v.node(i), lbl, quoteList(order)))
		}
	}
}

// warnShadowedFallback warns about each unlabelled edge out of condition or
// branch node i when the node also has a default edge (labelled "default" or
// default: true): routeMatched tries the matched handle, then the default,
// and only then an unlabelled edge, so the unlabelled one can never fire. A
// default that is a loop edge does not shadow it: once the loop reaches its
// max_iterations the router passes over it to the unlabelled edge.
func (v *validator) warnShadowedFallback(i int, kind, handles string) {
	c := v.c
	def := -1
	for _, k := range v.g.Out[i] {
		if e := &c.Edges[k]; (e.Label == defaultHandleLabel || e.Default) && !e.IsLoop() {
			def = k
			break
		}
	}
	if def < 0 {
		return
	}
	for _, k := range v.g.Out[i] {
		if e := &c.Edges[k]; e.Label == "" && !e.Default {
			v.edgeIssue(k, RuleShadowedFallback, SeverityWarning, "label", fmt.Sprintf("%s from %s node %s has no label, and the node's default %s is taken whenever no handle matches, so this edge never fires; label it with %s, or delete it", v.edge(k), kind, v.node(i), v.edge(def), handles))
		}
	}
}

// ---------------------------------------------------------------- cycles

// csr is a compact adjacency list: the successors of u are
// adj[off[u]:off[u+1]], and kind[...] says what each arc is.
type csr struct {
	off  []int32
	adj  []int32
	kind []int32 // >= 0: edge index; -1: data dependency (reader waits for dep)
}

func buildCSR(n int, each func(emit func(u, t, kind int))) *csr {
	g := &csr{off: make([]int32, n+1)}
	each(func(u, _, _ int) { g.off[u+1]++ })
	for u := 0; u < n; u++ {
		g.off[u+1] += g.off[u]
	}
	m := g.off[n]
	g.adj = make([]int32, m)
	g.kind = make([]int32, m)
	fill := make([]int32, n)
	copy(fill, g.off[:n])
	each(func(u, t, kind int) {
		p := fill[u]
		g.adj[p] = int32(t)
		g.kind[p] = int32(kind)
		fill[u]++
	})
	return g
}

// scc computes strongly connected components with an iterative Tarjan; it
// returns each node's component number.
func (g *csr) scc() (comp []int32, ncomp int) {
	n := len(g.off) - 1
	index := make([]int32, n)
	low := make([]int32, n)
	comp = make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
		comp[i] = -1
	}
	stack := make([]int32, 0, 64)
	type frame struct{ v, next int32 }
	calls := make([]frame, 0, 64)
	var counter int32
	for s := 0; s < n; s++ {
		if index[s] >= 0 {
			continue
		}
		calls = append(calls, frame{int32(s), g.off[s]})
		index[s], low[s] = counter, counter
		counter++
		stack = append(stack, int32(s))
		onStack[s] = true
		for len(calls) > 0 {
			f := &calls[len(calls)-1]
			u := f.v
			if f.next < g.off[u+1] {
				w := g.adj[f.next]
				f.next++
				if index[w] < 0 {
					index[w], low[w] = counter, counter
					counter++
					stack = append(stack, w)
					onStack[w] = true
					calls = append(calls, frame{w, g.off[w]})
				} else if onStack[w] && index[w] < low[u] {
					low[u] = index[w]
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				p := calls[len(calls)-1].v
				if low[u] < low[p] {
					low[p] = low[u]
				}
			}
			if low[u] == index[u] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = int32(ncomp)
					if w == u {
						break
					}
				}
				ncomp++
			}
		}
	}
	return comp, ncomp
}

// cyclicComponents returns, per component, its smallest node index when the
// component holds a cycle (more than one node, or a self-arc), else -1.
func (g *csr) cyclicComponents(comp []int32, ncomp int) []int32 {
	n := len(g.off) - 1
	size := make([]int32, ncomp)
	first := make([]int32, ncomp)
	for i := range first {
		first[i] = -1
	}
	self := make([]bool, ncomp)
	for u := 0; u < n; u++ {
		c := comp[u]
		size[c]++
		if first[c] < 0 {
			first[c] = int32(u)
		}
		for p := g.off[u]; p < g.off[u+1]; p++ {
			if int(g.adj[p]) == u {
				self[c] = true
			}
		}
	}
	for c := range first {
		if size[c] < 2 && !self[c] {
			first[c] = -1
		}
	}
	return first
}

// pathWithin finds a shortest path from 'from' to 'to' that stays inside
// component c (BFS), returning the arcs taken (positions in adj). A path
// exists whenever both ends are in the same component. from == to means a
// cycle through 'from'.
func (g *csr) pathWithin(comp []int32, c int32, from, to int, seen []int32, stamp int32) []int32 {
	type step struct{ node, parentStep, arc int32 }
	steps := []step{{int32(from), -1, -1}}
	seen[from] = stamp
	for h := 0; h < len(steps); h++ {
		u := steps[h].node
		for p := g.off[u]; p < g.off[u+1]; p++ {
			w := g.adj[p]
			if comp[w] != c {
				continue
			}
			if int(w) == to {
				var arcs []int32
				arcs = append(arcs, p)
				for s := int32(h); steps[s].parentStep >= 0; s = steps[s].parentStep {
					arcs = append(arcs, steps[s].arc)
				}
				for a, b := 0, len(arcs)-1; a < b; a, b = a+1, b-1 {
					arcs[a], arcs[b] = arcs[b], arcs[a]
				}
				return arcs
			}
			if seen[w] == stamp {
				continue
			}
			seen[w] = stamp
			steps = append(steps, step{w, int32(h), p})
		}
	}
	return nil
}

// arcSource returns the source node of arc p (binary search over off).
func (g *csr) arcSource(p int32) int {
	n := len(g.off) - 1
	return sort.Search(n, func(u int) bool { return g.off[u+1] > p })
}

func (v *validator) checkCycles() {
	c, g := v.c, v.g
	n := len(c.Nodes)
	if n == 0 {
		return
	}
	ctrlArcs := func(emit func(u, t, kind int), loops bool) {
		for u := 0; u < n; u++ {
			for _, k := range g.Out[u] {
				if c.Edges[k].IsLoop() && !loops {
					continue
				}
				emit(u, int(v.tgt[k]), k)
			}
		}
	}
	seen := make([]int32, n)
	stamp := int32(0)

	// chain_cycle: cycles through non-loop edges.
	ctrl := buildCSR(n, func(emit func(u, t, kind int)) { ctrlArcs(emit, false) })
	comp, ncomp := ctrl.scc()
	starts := ctrl.cyclicComponents(comp, ncomp)
	ctrlCyclic := make([]bool, ncomp)
	for ci, s := range starts {
		if s < 0 {
			continue
		}
		ctrlCyclic[ci] = true
		stamp++
		arcs := ctrl.pathWithin(comp, int32(ci), int(s), int(s), seen, stamp)
		if len(arcs) == 0 {
			continue
		}
		path := []string{c.Nodes[s].ID}
		for _, p := range arcs {
			path = append(path, c.Nodes[ctrl.adj[p]].ID)
		}
		back := int(ctrl.kind[arcs[len(arcs)-1]])
		v.add(1, int(s), RuleChainCycle, SeverityError, c.Nodes[s].ID, v.edgeID(back), "",
			fmt.Sprintf("cycle without max_iterations: %s; set max_iterations ≥ 1 on the edge that loops back (e.g. %s) so the cycle is bounded", strings.Join(path, " -> "), v.edge(back)), nil)
	}

	// data_cycle: waits through non-loop edges and input_map reads.
	hasData := false
	for i := 0; i < n && !hasData; i++ {
		hasData = len(g.DataDeps[i]) > 0
	}
	if hasData {
		wait := buildCSR(n, func(emit func(u, t, kind int)) {
			ctrlArcs(emit, false)
			for i := 0; i < n; i++ {
				for _, d := range g.DataDeps[i] {
					emit(d, i, -1)
				}
			}
		})
		wcomp, wn := wait.scc()
		wstarts := wait.cyclicComponents(wcomp, wn)
		done := make([]bool, wn)
		for i := 0; i < n; i++ { // readers in declaration order
			for _, d := range g.DataDeps[i] {
				ci := wcomp[i]
				if wcomp[d] != ci || done[ci] || wstarts[ci] < 0 {
					continue
				}
				if comp[d] == comp[i] {
					// both on one control cycle (already chain_cycle): this
					// read adds no wait the cycle does not already have
					continue
				}
				done[ci] = true
				stamp++
				arcs := wait.pathWithin(wcomp, ci, i, d, seen, stamp)
				path := []string{c.Nodes[d].ID, c.Nodes[i].ID}
				reads := []string{fmt.Sprintf("%s reads %s.output", v.node(i), c.Nodes[d].ID)}
				for _, p := range arcs {
					t := int(wait.adj[p])
					path = append(path, c.Nodes[t].ID)
					if wait.kind[p] < 0 {
						reads = append(reads, fmt.Sprintf("%s reads %s.output", v.node(t), c.Nodes[wait.arcSource(p)].ID))
					}
				}
				v.nodeIssue(i, RuleDataCycle, SeverityError, "input_map", fmt.Sprintf("data dependency cycle %s (each node waits for the one before it, through an edge or by reading its output): %s, so these nodes wait for each other forever; break the cycle (pass the value through state, or read it after the loop)", strings.Join(path, " -> "), strings.Join(reads, " and ")))
			}
		}
	}

	// loop_edge_not_in_cycle: a loop edge whose target cannot lead back to its source.
	anyLoop := false
	for k := range c.Edges {
		if g.edgeOK[k] && c.Edges[k].IsLoop() {
			anyLoop = true
			break
		}
	}
	if anyLoop {
		all := buildCSR(n, func(emit func(u, t, kind int)) { ctrlArcs(emit, true) })
		acomp, _ := all.scc()
		for k := range c.Edges {
			e := &c.Edges[k]
			if !g.edgeOK[k] || !e.IsLoop() {
				continue
			}
			s, t := g.Idx[e.Source], g.Idx[e.Target]
			if s == t || acomp[s] == acomp[t] {
				continue
			}
			v.edgeIssue(k, RuleLoopEdgeNotInCycle, SeverityWarning, "max_iterations", fmt.Sprintf("%s has max_iterations %d but is on no cycle: %s cannot lead back to %s, and because loop edges are not waited for, %s starts as a root; remove max_iterations or close the loop", v.edge(k), e.MaxIterations, strconv.Quote(e.Target), strconv.Quote(e.Source), strconv.Quote(e.Target)))
		}
	}
}

// ---------------------------------------------------------------- reachability

// isRoot: a node that starts when the run starts.
func (v *validator) isRoot(i int) bool {
	return v.primary[i] && v.attach[i] == 0 && len(v.g.In[i]) == 0 && v.c.Nodes[i].IsReachableRequired()
}

func (v *validator) checkReachability() {
	c, g := v.c, v.g
	n := len(c.Nodes)
	v.reached = make([]bool, n)
	queue := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if v.isRoot(i) {
			v.reached[i] = true
			queue = append(queue, i)
		}
	}
	visit := func(j int) {
		if !v.reached[j] {
			v.reached[j] = true
			queue = append(queue, j)
		}
	}
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		for _, k := range g.Out[u] {
			visit(int(v.tgt[k]))
		}
		for _, r := range v.readers[u] {
			visit(r)
		}
		for _, a := range v.owned[u] {
			visit(a)
		}
	}
	for i := 0; i < n; i++ {
		nd := &c.Nodes[i]
		if !v.primary[i] || !nd.IsReachableRequired() {
			continue
		}
		if n > 1 && len(g.In[i]) == 0 && len(g.LoopIn[i]) == 0 && len(g.Out[i]) == 0 &&
			len(g.DataDeps[i]) == 0 && len(v.readers[i]) == 0 && v.attach[i] == 0 && len(v.owned[i]) == 0 {
			v.nodeIssue(i, RuleUnreachable, SeverityError, "", fmt.Sprintf("node %s is not connected: it has no edges, reads no node's output, is read by none and is attached to none; connect it, or set reachable: false for a diagnostic node", v.node(i)))
			continue
		}
		if v.reached[i] {
			continue
		}
		var why string
		switch {
		case v.attach[i] != 0:
			why = "it is attached only to nodes that never run"
		case len(g.In[i]) > 0:
			why = fmt.Sprintf("it waits for %s (%s) and no root leads there (a node that sits only on a cycle never starts)", plural(len(g.In[i]), "incoming edge", "incoming edges"), v.edgeList(g.In[i]))
		default:
			why = "no root leads to it"
		}
		v.nodeIssue(i, RuleUnreachable, SeverityError, "", fmt.Sprintf("node %s is unreachable: %s; connect it to the flow, or set reachable: false", v.node(i), why))
	}
}

func (v *validator) checkEntry() {
	c, g := v.c, v.g
	if c.EntryNode == "" {
		return
	}
	i, ok := g.Idx[c.EntryNode]
	if !ok {
		v.chainIssue(RuleUnknownEntryNode, SeverityError, "entry_node", fmt.Sprintf("entry_node %q names no node", c.EntryNode))
		return
	}
	switch {
	case v.attach[i] != 0:
		v.add(1, i, RuleEntryNotRoot, SeverityError, c.Nodes[i].ID, "", "entry_node", fmt.Sprintf("entry node %s is attached to another node (map body, parallel branch or on_error handler), so it cannot start the chain", v.node(i)), nil)
	case len(g.In[i]) > 0:
		v.add(1, i, RuleEntryNotRoot, SeverityError, c.Nodes[i].ID, "", "entry_node", fmt.Sprintf("entry node %s has %s (%s), so it waits for them instead of starting the chain; remove them or make them loop edges (max_iterations ≥ 1)", v.node(i), plural(len(g.In[i]), "incoming edge", "incoming edges"), v.edgeList(g.In[i])), nil)
	}
}

// ---------------------------------------------------------------- sub-chains

type skillCall struct {
	name string
	node string // the first skill node calling it
}

// skillMemo is what exploring one sub-chain found: the deepest nesting below
// it and one path that reaches that depth.
type skillMemo struct {
	height  int
	deepest []string // chain names below the sub-chain, outermost first
}

type skillChecker struct {
	v       *validator
	max     int
	calls   map[string][]skillCall // callee names per resolved chain
	known   map[string]bool        // resolvable
	memo    map[string]skillMemo   // sub-chains explored completely (not cut by max_depth)
	visits  int
	seen    map[string]bool // issue messages already reported
	topNode int             // node of the top-level chain the walk started from
	// depthReported: max_depth is reported once per top-level skill node
	// (the first too-deep path found), not once per path
	depthReported map[int]bool
}

// checkSkills follows skill nodes into the chains they call, recursively:
// every called chain must exist, no chain may be on its own call path, and
// nesting may not exceed max depth. Each sub-chain is resolved and explored
// once (memoised), so the walk is linear in the call graph.
func (v *validator) checkSkills() {
	if v.opts.Resolve == nil {
		return
	}
	max := v.opts.MaxDepth
	if max <= 0 {
		max = v.c.MaxDepth
	}
	if max <= 0 {
		max = DefaultMaxDepth
	}
	sc := &skillChecker{v: v, max: max, calls: map[string][]skillCall{}, known: map[string]bool{},
		memo: map[string]skillMemo{}, seen: map[string]bool{}, depthReported: map[int]bool{}}
	top := v.c.Name
	done := map[string]bool{}
	for i := range v.c.Nodes {
		nd := &v.c.Nodes[i]
		if nd.Kind != KindSkill || nd.Name == "" || done[nd.Name] {
			continue
		}
		done[nd.Name] = true
		sc.topNode = i
		sc.call([]string{top}, nd.Name)
	}
}

// resolve looks a chain up once and returns the sub-chains it calls.
func (sc *skillChecker) resolve(name string) ([]skillCall, bool) {
	if ok, cached := sc.known[name]; cached {
		return sc.calls[name], ok
	}
	ch, ok := sc.v.opts.Resolve(name)
	sc.known[name] = ok
	if !ok || ch == nil {
		return nil, ok
	}
	var calls []skillCall
	dedup := map[string]bool{}
	for i := range ch.Nodes {
		nd := &ch.Nodes[i]
		if nd.Kind == KindSkill && nd.Name != "" && !dedup[nd.Name] {
			dedup[nd.Name] = true
			calls = append(calls, skillCall{name: nd.Name, node: nd.ID})
		}
	}
	sc.calls[name] = calls
	return calls, true
}

func (sc *skillChecker) report(rule, msg string) {
	if sc.seen[rule+"\x00"+msg] {
		return
	}
	sc.seen[rule+"\x00"+msg] = true
	sc.v.nodeIssue(sc.topNode, rule, SeverityError, "name", msg)
}

func (sc *skillChecker) tooDeep(path []string) {
	if sc.depthReported[sc.topNode] {
		return
	}
	sc.depthReported[sc.topNode] = true
	sc.report(RuleMaxDepth, fmt.Sprintf("skill node %s nests sub-chains %d deep (%s), over max_depth %d", sc.v.node(sc.topNode), len(path)-1, strings.Join(path, " -> "), sc.max))
}

// call checks that the last chain on path may call callee; path[0] is the
// chain being validated. It returns what lies below callee, and complete =
// false when the walk below was cut short (max_depth, limits).
func (sc *skillChecker) call(path []string, callee string) (m skillMemo, complete bool) {
	v := sc.v
	topNode := v.node(sc.topNode)
	for k, p := range path {
		if p == callee {
			cycle := strings.Join(append(append([]string(nil), path[k:]...), callee), " -> ")
			full := strings.Join(append(append([]string(nil), path...), callee), " -> ")
			msg := fmt.Sprintf("skill node %s leads into a sub-chain cycle %s (full path %s); a chain may not call itself, directly or through others", topNode, cycle, full)
			if k == 0 {
				msg = fmt.Sprintf("skill node %s starts a sub-chain cycle: %s; a chain may not call itself, directly or through others", topNode, full)
			}
			sc.report(RuleSkillCycle, msg)
			return skillMemo{}, true
		}
	}
	depth := len(path) // nesting level of callee
	here := append(append([]string(nil), path...), callee)
	if depth > sc.max {
		sc.tooDeep(here)
		return skillMemo{}, false
	}
	calls, ok := sc.resolve(callee)
	if !ok {
		who := "chain " + strconv.Quote(path[len(path)-1])
		if len(path) == 1 {
			who = "node " + topNode
		}
		sc.report(RuleUnknownChain, fmt.Sprintf("skill node %s: %s calls chain %q, which does not exist (path %s)", topNode, who, callee, strings.Join(here, " -> ")))
		return skillMemo{}, true
	}
	if m, done := sc.memo[callee]; done {
		if depth+m.height > sc.max {
			sc.tooDeep(append(here, m.deepest...))
		}
		return m, true
	}
	sc.visits++
	if sc.visits > maxSkillVisits || len(path) > maxSkillRecursion {
		return skillMemo{}, false // give up quietly on pathological call graphs
	}
	complete = true
	for _, cl := range calls {
		below, ok := sc.call(here, cl.name)
		if !ok {
			complete = false
		}
		if below.height+1 > m.height {
			m.height = below.height + 1
			m.deepest = append([]string{cl.name}, below.deepest...)
		}
	}
	if complete {
		sc.memo[callee] = m
	}
	return m, complete
}

// ---------------------------------------------------------------- one field

// WithExpr returns a copy of c with src in one expression field: field
// (condition, items_path, cases[N].when, input_map.KEY or set_state.KEY) of
// node nodeID, or the condition of edge edgeID (its id, or "source->target").
// c's own nodes, edges, cases and maps are left as they are. ok is false
// when c has no such field (an unknown node or edge, a case it lacks).
func WithExpr(c *Chain, nodeID, edgeID, field, src string) (out *Chain, ok bool) {
	cp := *c
	if edgeID != "" {
		if field != "condition" {
			return c, false
		}
		cp.Edges = append([]Edge(nil), c.Edges...)
		for i := range cp.Edges {
			if e := &cp.Edges[i]; e.ID == edgeID || e.Source+"->"+e.Target == edgeID {
				e.Condition, ok = src, true
			}
		}
		return &cp, ok
	}
	cp.Nodes = append([]Node(nil), c.Nodes...)
	for i := range cp.Nodes {
		n := &cp.Nodes[i]
		if n.ID != nodeID {
			continue
		}
		var k int
		switch {
		case field == "condition":
			n.Condition, ok = src, true
		case field == "items_path":
			n.ItemsPath, ok = src, true
		case strings.HasPrefix(field, "input_map."):
			n.InputMap, ok = withKey(n.InputMap, strings.TrimPrefix(field, "input_map."), src), true
		case strings.HasPrefix(field, "set_state."):
			n.SetState, ok = withKey(n.SetState, strings.TrimPrefix(field, "set_state."), src), true
		default:
			if _, err := fmt.Sscanf(field, "cases[%d].when", &k); err == nil && field == "cases["+itoa(k)+"].when" && k >= 0 && k < len(n.Cases) {
				n.Cases = append([]Case(nil), n.Cases...)
				n.Cases[k].When, ok = src, true
			}
		}
	}
	return &cp, ok
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// FieldIssues is what the validator says about one expression field when it
// holds src: the issues ValidateWith reports with that node (or edge) and
// field, other than expression_syntax (a field check shows the parse error
// itself, with its caret). The designer's field check shows these, so the
// field and the Validation panel never disagree. nil when c has no such
// field.
func FieldIssues(c *Chain, nodeID, edgeID, field, src string, opts ValidateOptions) []Issue {
	doc, ok := WithExpr(c, nodeID, edgeID, field, src)
	if !ok {
		return nil
	}
	opts.SkipTests, opts.SkipPins = true, true
	var out []Issue
	for _, is := range ValidateWith(doc, opts) {
		if is.Field != field || is.Rule == RuleExpressionSyntax {
			continue
		}
		if (edgeID != "" && is.EdgeID == edgeID) || (edgeID == "" && is.EdgeID == "" && is.NodeID == nodeID) {
			out = append(out, is)
		}
	}
	return out
}
