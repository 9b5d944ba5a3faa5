package chain

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// --- builders -------------------------------------------------------------

func vtool(id string) Node { return Node{ID: id, Kind: KindTool, Name: "echo"} }

func vnode(id string, kind Kind, mod func(*Node)) Node {
	n := Node{ID: id, Kind: kind}
	if kind == KindTool {
		n.Name = "echo"
	}
	if mod != nil {
		mod(&n)
	}
	return n
}

func vedge(src, dst string) Edge { return Edge{ID: src + "->" + dst, Source: src, Target: dst} }

func vlabel(src, dst, label string) Edge {
	return Edge{ID: src + "->" + dst, Source: src, Target: dst, Label: label}
}

func vcond(src, dst, cond string) Edge {
	return Edge{ID: src + "->" + dst, Source: src, Target: dst, Condition: cond}
}

func vloop(src, dst string, max int) Edge {
	return Edge{ID: src + "->" + dst, Source: src, Target: dst, MaxIterations: max}
}

func vchain(nodes []Node, edges ...Edge) *Chain {
	return &Chain{Name: "test", Nodes: nodes, Edges: edges}
}

func vnodes(ns ...Node) []Node { return ns }

func errorsIn(issues []Issue) []Issue {
	var out []Issue
	for _, is := range issues {
		if is.Severity == SeverityError {
			out = append(out, is)
		}
	}
	return out
}

func dump(issues []Issue) string {
	var b strings.Builder
	for _, is := range issues {
		fmt.Fprintf(&b, "\n  %s %s", is.Severity, is.String())
	}
	return b.String()
}

func resolverOf(chains ...*Chain) func(string) (*Chain, bool) {
	m := map[string]*Chain{}
	for _, c := range chains {
		m[c.Name] = c
	}
	return func(name string) (*Chain, bool) { c, ok := m[name]; return c, ok }
}

func skillChain(name string, calls ...string) *Chain {
	c := &Chain{Name: name}
	for i, callee := range calls {
		c.Nodes = append(c.Nodes, Node{ID: fmt.Sprintf("s%d", i), Kind: KindSkill, Name: callee})
	}
	if len(c.Nodes) == 0 {
		c.Nodes = []Node{vtool("leaf")}
	}
	for i := 1; i < len(c.Nodes); i++ {
		c.Edges = append(c.Edges, vedge(c.Nodes[i-1].ID, c.Nodes[i].ID))
	}
	return c
}

// --- one row per rule ------------------------------------------------------

type ruleCase struct {
	name   string
	chain  *Chain
	opts   ValidateOptions
	rule   string
	sev    Severity
	node   string
	edge   string
	field  string
	phrase string
}

func ruleCases() []ruleCase {
	argvEmpty := vnode("cmd", KindProc, func(n *Node) { n.Config = map[string]any{"argv": []any{}} })
	return []ruleCase{
		{name: "empty_chain", chain: &Chain{Name: "x"}, rule: RuleEmptyChain, sev: SeverityError, phrase: "no nodes"},
		{name: "too_many_nodes", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vedge("a", "b"), vedge("b", "c")),
			opts: ValidateOptions{Limits: Limits{MaxNodes: 2}}, rule: RuleTooManyNodes, sev: SeverityError, phrase: "3 nodes, over the limit of 2"},
		{name: "too_many_edges", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vedge("a", "b"), vedge("b", "c")),
			opts: ValidateOptions{Limits: Limits{MaxEdges: 1}}, rule: RuleTooManyEdges, sev: SeverityError, phrase: "2 edges, over the limit of 1"},
		{name: "missing_node_id", chain: vchain(vnodes(vtool(""))), rule: RuleMissingNodeID, sev: SeverityError, field: "node_id", phrase: "has no node_id"},
		{name: "duplicate_node_id", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("a")), vedge("a", "b")),
			rule: RuleDuplicateNodeID, sev: SeverityError, node: "a", field: "node_id", phrase: `node id "a" is used by node #1 and again by node #3`},
		{name: "reserved_id", chain: vchain(vnodes(vtool("input"))), rule: RuleReservedID, sev: SeverityError, node: "input", phrase: "reserved"},
		{name: "unknown_kind", chain: vchain(vnodes(Node{ID: "a", Kind: "teleport"})), rule: RuleUnknownKind, sev: SeverityError, node: "a", field: "kind", phrase: `unknown kind "teleport"`},
		{name: "duplicate_edge_id", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c")),
			Edge{ID: "e", Source: "a", Target: "b"}, Edge{ID: "e", Source: "b", Target: "c"}),
			rule: RuleDuplicateEdgeID, sev: SeverityError, edge: "e", phrase: `edge id "e" is used by edges #1 and #2`},
		{name: "dangling_edge", chain: vchain(vnodes(vtool("a"), vtool("b")), vedge("a", "b"), vedge("b", "ghost")),
			rule: RuleDanglingEdge, sev: SeverityError, edge: "b->ghost", field: "target", phrase: `its target "ghost" is not a node`},
		{name: "dangling_edge_source", chain: vchain(vnodes(vtool("a"), vtool("b")), vedge("a", "b"), vedge("ghost", "b")),
			rule: RuleDanglingEdge, sev: SeverityError, edge: "ghost->b", field: "source", phrase: `its source "ghost" is not a node`},
		{name: "invalid_value", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Routing = "random" }))),
			rule: RuleInvalidValue, sev: SeverityError, node: "a", field: "routing", phrase: `unknown routing "random"`},
		{name: "invalid_timeout", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Timeout = -1 }))),
			rule: RuleInvalidTimeout, sev: SeverityError, node: "a", field: "timeout", phrase: "≥ 0"},
		{name: "invalid_retry", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Retry = &Retry{MaxAttempts: 0} }))),
			rule: RuleInvalidRetry, sev: SeverityError, node: "a", field: "retry.max_attempts", phrase: "between 1 and 100"},
		{name: "invalid_max_iterations", chain: vchain(vnodes(vtool("a"), vtool("b")), Edge{ID: "ab", Source: "a", Target: "b", MaxIterations: -2}),
			rule: RuleInvalidMaxIterations, sev: SeverityError, edge: "ab", field: "max_iterations", phrase: "max_iterations -2"},
		{name: "expression_syntax", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.InputMap = map[string]string{"text": "{{ output.x == }}"} }))),
			rule: RuleExpressionSyntax, sev: SeverityError, node: "a", field: "input_map.text", phrase: "input_map.text does not parse"},
		{name: "expression_syntax_edge", chain: vchain(vnodes(vtool("a"), vtool("b")), vcond("a", "b", "length(")),
			rule: RuleExpressionSyntax, sev: SeverityError, edge: "a->b", field: "condition", phrase: "condition does not parse"},
		{name: "missing_tool_name", chain: vchain(vnodes(Node{ID: "a", Kind: KindTool})), rule: RuleMissingToolName, sev: SeverityError, node: "a", field: "name", phrase: "tool node \"a\" has no name"},
		{name: "unknown_tool", chain: vchain(vnodes(vtool("a"))), opts: ValidateOptions{Tools: func(n string) bool { return n == "other" }},
			rule: RuleUnknownTool, sev: SeverityError, node: "a", field: "name", phrase: `calls tool "echo"`},
		{name: "missing_skill_name", chain: vchain(vnodes(Node{ID: "a", Kind: KindSkill})), rule: RuleMissingSkillName, sev: SeverityError, node: "a", field: "name", phrase: "skill node \"a\" has no name"},
		{name: "invalid_proc_argv", chain: vchain(vnodes(argvEmpty)), rule: RuleInvalidProcArgv, sev: SeverityError, node: "cmd", field: "config.argv", phrase: "config.argv is empty"},
		{name: "invalid_proc_argv_missing", chain: vchain(vnodes(Node{ID: "cmd", Kind: KindProc})), rule: RuleInvalidProcArgv, sev: SeverityError, node: "cmd", field: "config.argv", phrase: "has no config.argv"},
		{name: "branch_no_condition", chain: vchain(vnodes(Node{ID: "check", Kind: KindBranch}, vtool("yes"), vtool("no")), vlabel("check", "yes", "true"), vlabel("check", "no", "false")),
			rule: RuleBranchNoCondition, sev: SeverityError, node: "check", field: "condition", phrase: "has no condition"},
		{name: "branch_no_edges", chain: vchain(vnodes(Node{ID: "check", Kind: KindBranch, Condition: "input.ok"})),
			rule: RuleBranchNoEdges, sev: SeverityError, node: "check", phrase: `no edge labelled "true" or "false"`},
		{name: "branch_missing_edge", chain: vchain(vnodes(Node{ID: "check", Kind: KindBranch, Condition: "input.ok"}, vtool("yes")), vlabel("check", "yes", "true")),
			rule: RuleBranchMissingEdge, sev: SeverityWarning, node: "check", phrase: `no edge labelled "false"`},
		{name: "condition_no_cases", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition})), rule: RuleConditionNoCases, sev: SeverityError, node: "route", field: "cases", phrase: "has no cases"},
		{name: "invalid_handle", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "", When: "input.x"}}}, vtool("d")), vlabel("route", "d", "default")),
			rule: RuleInvalidHandle, sev: SeverityError, node: "route", field: "cases[0].handle", phrase: "case 0 has no handle"},
		{name: "duplicate_handle", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "a", When: "input.x"}, {Handle: "a", When: "input.y"}}}, vtool("x"), vtool("d")),
			vlabel("route", "x", "a"), vlabel("route", "d", "default")),
			rule: RuleDuplicateHandle, sev: SeverityError, node: "route", field: "cases[1].handle", phrase: `declares handle "a" twice`},
		{name: "condition_handles", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "refund", When: "input.refund"}, {Handle: "billing", When: "input.billing"}}}, vtool("b"), vtool("d")),
			vlabel("route", "b", "billing"), vlabel("route", "d", "default")),
			rule: RuleConditionHandles, sev: SeverityError, node: "route", phrase: `condition node "route" has no edge for handle "refund"; add an edge labelled "refund"`},
		{name: "condition_handles_default", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "refund", When: "input.refund"}}}, vtool("r")),
			vlabel("route", "r", "refund")),
			rule: RuleConditionHandles, sev: SeverityError, node: "route", phrase: `has no default edge; add an edge labelled "default"`},
		{name: "unknown_handle", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "refund", When: "input.refund"}}}, vtool("r"), vtool("d"), vtool("typo")),
			vlabel("route", "r", "refund"), vlabel("route", "d", "default"), vlabel("route", "typo", "refnd")),
			rule: RuleUnknownHandle, sev: SeverityWarning, edge: "route->typo", field: "label", phrase: `labelled "refnd", which matches no case handle`},
		{name: "shadowed_fallback", chain: vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "refund", When: "input.refund"}}}, vtool("r"), vtool("d"), vtool("other")),
			vlabel("route", "r", "refund"), vlabel("route", "d", "default"), vedge("route", "other")),
			rule: RuleShadowedFallback, sev: SeverityWarning, edge: "route->other", field: "label",
			phrase: `edge "route->other" (route -> other) from condition node "route" has no label, and the node's default edge "route->d" (route -> d) is taken whenever no handle matches, so this edge never fires; label it with a case handle, or delete it`},
		{name: "shadowed_fallback_branch", chain: vchain(vnodes(Node{ID: "check", Kind: KindBranch, Condition: "input.ok"}, vtool("yes"), vtool("d"), vtool("other")),
			vlabel("check", "yes", "true"), Edge{ID: "fallback", Source: "check", Target: "d", Default: true}, vedge("check", "other")),
			rule: RuleShadowedFallback, sev: SeverityWarning, edge: "check->other", field: "label", phrase: `from branch node "check" has no label, and the node's default edge "fallback"`},
		{name: "missing_map_node", chain: vchain(vnodes(Node{ID: "batch", Kind: KindMap, ItemsPath: "input.files"})),
			rule: RuleMissingMapNode, sev: SeverityError, node: "batch", field: "map_node", phrase: "has no map_node"},
		{name: "missing_items_path", chain: vchain(vnodes(Node{ID: "batch", Kind: KindMap, MapNode: "body"}, vtool("body"))),
			rule: RuleMissingItemsPath, sev: SeverityError, node: "batch", field: "items_path", phrase: "has no items_path"},
		{name: "parallel_no_branches", chain: vchain(vnodes(Node{ID: "fan", Kind: KindParallel})), rule: RuleParallelNoBranches, sev: SeverityWarning, node: "fan", phrase: "outputs []"},
		{name: "unknown_reference", chain: vchain(vnodes(Node{ID: "batch", Kind: KindMap, ItemsPath: "input.files", MapNode: "ghost"})),
			rule: RuleUnknownReference, sev: SeverityError, node: "batch", field: "map_node", phrase: `map_node "ghost" names no node`},
		{name: "unknown_reference_on_error", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.OnError = "fallback" }))),
			rule: RuleUnknownReference, sev: SeverityError, node: "a", field: "on_error", phrase: `on_error "fallback" names no node`},
		{name: "self_reference", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.OnError = "a" }))),
			rule: RuleSelfReference, sev: SeverityError, node: "a", field: "on_error", phrase: "names itself"},
		{name: "duplicate_branch", chain: vchain(vnodes(Node{ID: "fan", Kind: KindParallel, Branches: []string{"x", "x"}}, vtool("x"))),
			rule: RuleDuplicateBranch, sev: SeverityError, node: "fan", field: "branches[1]", phrase: `lists branch "x" twice`},
		{name: "ignored_field", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.ItemsPath = "input.files" }))),
			rule: RuleIgnoredField, sev: SeverityWarning, node: "a", field: "items_path", phrase: "used only by map nodes"},
		{name: "attached_with_edges", chain: vchain(vnodes(Node{ID: "m", Kind: KindMap, ItemsPath: "input.xs", MapNode: "body"}, vtool("body"), vtool("after")), vedge("body", "after")),
			rule: RuleAttachedWithEdges, sev: SeverityError, node: "body", phrase: `node "body" is the map body of "m"; it runs only inside "m", so its edges would never fire`},
		{name: "attached_with_edges_handler", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.OnError = "h" }), vtool("h"), vtool("b")), vedge("b", "h")),
			rule: RuleAttachedWithEdges, sev: SeverityError, node: "h", phrase: "may not have incoming edges"},
		{name: "attached_conflict", chain: vchain(vnodes(Node{ID: "m", Kind: KindMap, ItemsPath: "input.xs", MapNode: "x"}, Node{ID: "p", Kind: KindParallel, Branches: []string{"x"}}, vtool("x"))),
			rule: RuleAttachedConflict, sev: SeverityError, node: "x", phrase: "attached in only one way"},
		{name: "attached_kind", chain: vchain(vnodes(Node{ID: "p", Kind: KindParallel, Branches: []string{"ask"}}, Node{ID: "ask", Kind: KindInterrupt})),
			rule: RuleAttachedKind, sev: SeverityError, node: "ask", field: "kind", phrase: "may not be an interrupt node"},
		{name: "unknown_data_reference", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.InputMap = map[string]string{"text": "ghost.output"} }))),
			rule: RuleUnknownDataReference, sev: SeverityError, node: "a", field: "input_map.text", phrase: `there is no node "ghost"`},
		{name: "unknown_data_reference_node_results", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.InputMap = map[string]string{"text": "node_results.ghost.text"} }))),
			rule: RuleUnknownDataReference, sev: SeverityError, node: "a", field: "input_map.text", phrase: "reads node_results.ghost"},
		{name: "attached_data_reference", chain: vchain(vnodes(Node{ID: "m", Kind: KindMap, ItemsPath: "input.xs", MapNode: "body"}, vtool("body"),
			vnode("reader", KindTool, func(n *Node) { n.InputMap = map[string]string{"x": "body.output"} }))),
			rule: RuleAttachedDataReference, sev: SeverityError, node: "reader", field: "input_map.x", phrase: `"body" is the map body of "m" and runs only inside it`},
		{name: "unknown_name", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vcond("a", "b", "{{ ghost.x == 1 }}"), vedge("a", "c")),
			rule: RuleUnknownName, sev: SeverityWarning, edge: "a->b", field: "condition", phrase: "reads ghost"},
		{name: "bare_word_comparison_edge_condition", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vcond("a", "b", "category == billing"), vedge("a", "c")),
			rule: RuleBareWordComparison, sev: SeverityWarning, edge: "a->b", field: "condition", phrase: `condition "category == billing" compares two paths, category and billing, that name nothing: both read null, so it is always true; to compare with the text, write {{category}} == billing or category == 'billing'`},
		{name: "bare_word_comparison_branch_condition", chain: vchain(vnodes(Node{ID: "br", Kind: KindBranch, Condition: "input.plan != gold"}, vtool("t"), vtool("f")), vlabel("br", "t", "true"), vlabel("br", "f", "false")),
			rule: RuleBareWordComparison, sev: SeverityWarning, node: "br", field: "condition", phrase: `reads gold as a path, which names nothing and is always null, not as the text "gold"; to compare with the text, write {{input.plan}} != gold or input.plan != 'gold'`},
		{name: "bare_word_comparison_case_when", chain: vchain(vnodes(Node{ID: "c", Kind: KindCondition, Cases: []Case{{Handle: "x", When: "{{ input.tier == silver }}"}}}, vtool("x"), vtool("d")), vlabel("c", "x", "x"), vlabel("c", "d", "default")),
			rule: RuleBareWordComparison, sev: SeverityWarning, node: "c", field: "cases[0].when", phrase: `write {{input.tier}} == silver or input.tier == 'silver'`},
		{name: "multiple_unconditional", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("c"), vtool("d")), vcond("a", "b", "input.x"), vedge("a", "c"), vedge("a", "d")),
			rule: RuleMultipleUnconditional, sev: SeverityError, node: "a", phrase: `2 unconditional edges ("a->c", "a->d"); with routing "first" only one unconditional edge is the default taken when no condition matches (here "a->c")`},
		{name: "multiple_defaults", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Routing = RoutingAll }), vtool("b"), vtool("c")),
			Edge{ID: "ab", Source: "a", Target: "b", Default: true}, Edge{ID: "ac", Source: "a", Target: "c", Default: true}),
			rule: RuleMultipleDefaults, sev: SeverityError, node: "a", phrase: `2 default edges ("ab", "ac")`},
		{name: "default_with_condition", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Routing = RoutingAll }), vtool("b")),
			Edge{ID: "ab", Source: "a", Target: "b", Default: true, Condition: "{{ output.ok }}"}),
			rule: RuleDefaultWithCondition, sev: SeverityError, edge: "ab", field: "condition", phrase: "may not carry its own condition"},
		{name: "sibling_guard_parallel", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Routing = RoutingAll }), vtool("b"), vtool("c")),
			vedge("a", "b"), vcond("a", "c", "{{ steps.b.ok }}")),
			rule: RuleSiblingGuardParallel, sev: SeverityError, edge: "a->c", field: "condition", phrase: "set dispatch: sequential"},
		{name: "dispatch_ignored", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Dispatch = DispatchSequential }), vtool("b")), vedge("a", "b")),
			rule: RuleDispatchIgnored, sev: SeverityWarning, node: "a", field: "dispatch", phrase: `only applies with routing "all"`},
		{name: "chain_cycle", chain: vchain(vnodes(vtool("r"), vtool("a"), vtool("b"), vtool("c")), vedge("r", "a"), vedge("a", "b"), vedge("b", "c"), vedge("c", "a")),
			rule: RuleChainCycle, sev: SeverityError, node: "a", edge: "c->a", phrase: "cycle without max_iterations: a -> b -> c -> a"},
		{name: "data_cycle", chain: vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.InputMap = map[string]string{"x": "b.output"} }), vtool("b")), vedge("a", "b")),
			rule: RuleDataCycle, sev: SeverityError, node: "a", field: "input_map", phrase: `data dependency cycle b -> a -> b (each node waits for the one before it, through an edge or by reading its output): "a" reads b.output`},
		{name: "loop_edge_not_in_cycle", chain: vchain(vnodes(vtool("a"), vtool("b")), vloop("a", "b", 3)),
			rule: RuleLoopEdgeNotInCycle, sev: SeverityWarning, edge: "a->b", field: "max_iterations", phrase: `"b" starts as a root`},
		{name: "loop_continue_no_exit", chain: vchain(vnodes(vtool("a"), vtool("b")), vedge("a", "b"),
			Edge{ID: "back", Source: "b", Target: "a", MaxIterations: 3, OnMaxReached: OnMaxContinue}),
			rule: RuleLoopContinueNoExit, sev: SeverityWarning, edge: "back", field: "on_max_reached", phrase: `"b" has no other outgoing edge`},
		{name: "unreachable", chain: vchain(vnodes(vtool("r"), vtool("s"), vnode("diag", KindTool, func(n *Node) { f := false; n.Reachable = &f }), vtool("t")),
			vedge("r", "s"), vedge("diag", "t")),
			rule: RuleUnreachable, sev: SeverityError, node: "t", phrase: `node "t" is unreachable`},
		{name: "unreachable_orphan", chain: vchain(vnodes(vtool("a"), vtool("b"), vtool("lonely")), vedge("a", "b")),
			rule: RuleUnreachable, sev: SeverityError, node: "lonely", phrase: "not connected"},
		{name: "unknown_entry_node", chain: &Chain{Name: "x", EntryNode: "ghost", Nodes: vnodes(vtool("a"))},
			rule: RuleUnknownEntryNode, sev: SeverityError, field: "entry_node", phrase: `entry_node "ghost" names no node`},
		{name: "entry_not_root", chain: &Chain{Name: "x", EntryNode: "b", Nodes: vnodes(vtool("a"), vtool("b")), Edges: []Edge{vedge("a", "b")}},
			rule: RuleEntryNotRoot, sev: SeverityError, node: "b", field: "entry_node", phrase: `incoming edge ("a->b")`},
		{name: "unknown_chain", chain: skillChain("main", "sub"), opts: ValidateOptions{Resolve: resolverOf()},
			rule: RuleUnknownChain, sev: SeverityError, node: "s0", field: "name", phrase: `calls chain "sub", which does not exist`},
		{name: "skill_cycle", chain: skillChain("main", "a"), opts: ValidateOptions{Resolve: resolverOf(skillChain("a", "b"), skillChain("b", "a"))},
			rule: RuleSkillCycle, sev: SeverityError, node: "s0", field: "name", phrase: "main -> a -> b -> a"},
		{name: "skill_cycle_self", chain: skillChain("main", "main"), opts: ValidateOptions{Resolve: resolverOf()},
			rule: RuleSkillCycle, sev: SeverityError, node: "s0", field: "name", phrase: "main -> main"},
		{name: "max_depth", chain: skillChain("main", "c1"), opts: ValidateOptions{MaxDepth: 2, Resolve: resolverOf(skillChain("c1", "c2"), skillChain("c2", "c3"), skillChain("c3"))},
			rule: RuleMaxDepth, sev: SeverityError, node: "s0", field: "name", phrase: "3 deep (main -> c1 -> c2 -> c3), over max_depth 2"},
	}
}

func TestValidateRules(t *testing.T) {
	t.Parallel()
	for _, tc := range ruleCases() {
		t.Run(tc.name, func(t *testing.T) {
			issues := ValidateWith(tc.chain, tc.opts)
			if len(issues) != 1 {
				t.Fatalf("want exactly one issue %s, got %d:%s", tc.rule, len(issues), dump(issues))
			}
			is := issues[0]
			if is.Rule != tc.rule || is.Severity != tc.sev {
				t.Fatalf("want %s %s, got:%s", tc.sev, tc.rule, dump(issues))
			}
			if is.NodeID != tc.node || is.EdgeID != tc.edge {
				t.Errorf("node/edge = %q/%q, want %q/%q:%s", is.NodeID, is.EdgeID, tc.node, tc.edge, dump(issues))
			}
			if tc.field != "" && is.Field != tc.field {
				t.Errorf("field = %q, want %q", is.Field, tc.field)
			}
			if !strings.Contains(is.Message, tc.phrase) {
				t.Errorf("message %q does not contain %q", is.Message, tc.phrase)
			}
			if tc.rule == RuleExpressionSyntax && is.Pos == nil {
				t.Errorf("expression_syntax without a position")
			}
		})
	}
}

// Every rule in the table at the top of validate.go has a row.
func TestValidateRulesCovered(t *testing.T) {
	t.Parallel()
	rows := map[string]bool{}
	for _, tc := range ruleCases() {
		rows[tc.rule] = true
	}
	for _, r := range []string{
		RuleEmptyChain, RuleTooManyNodes, RuleTooManyEdges, RuleMissingNodeID, RuleDuplicateNodeID, RuleReservedID,
		RuleUnknownKind, RuleDuplicateEdgeID, RuleDanglingEdge, RuleInvalidValue, RuleInvalidTimeout, RuleInvalidRetry,
		RuleInvalidMaxIterations, RuleExpressionSyntax, RuleMissingToolName, RuleUnknownTool, RuleMissingSkillName,
		RuleInvalidProcArgv, RuleBranchNoCondition, RuleBranchNoEdges, RuleBranchMissingEdge, RuleConditionNoCases,
		RuleInvalidHandle, RuleDuplicateHandle, RuleConditionHandles, RuleUnknownHandle, RuleMissingMapNode,
		RuleMissingItemsPath, RuleParallelNoBranches, RuleUnknownReference, RuleSelfReference, RuleDuplicateBranch,
		RuleIgnoredField, RuleAttachedWithEdges, RuleAttachedConflict, RuleAttachedKind, RuleUnknownDataReference,
		RuleAttachedDataReference, RuleUnknownName, RuleMultipleUnconditional, RuleMultipleDefaults,
		RuleDefaultWithCondition, RuleSiblingGuardParallel, RuleDispatchIgnored, RuleChainCycle, RuleDataCycle,
		RuleLoopEdgeNotInCycle, RuleLoopContinueNoExit, RuleUnreachable, RuleUnknownEntryNode, RuleEntryNotRoot,
		RuleUnknownChain, RuleSkillCycle, RuleMaxDepth, RuleBareWordComparison, RuleShadowedFallback,
	} {
		if !rows[r] {
			t.Errorf("rule %s has no table row", r)
		}
	}
}

// --- the validation table (docs/chain-format.md, "Validation rules") -------

func TestValidateRoutedChainTable(t *testing.T) {
	t.Parallel()
	rows := []struct {
		rule  string // the seed's row
		chain *Chain
		want  string
	}{
		{"Chain has at least one node", &Chain{}, RuleEmptyChain},
		{"All edge source and target IDs reference existing nodes",
			vchain(vnodes(vtool("a")), vedge("a", "nope")), RuleDanglingEdge},
		{"Cyclic edges have max_iterations >= 1",
			vchain(vnodes(vtool("a"), vtool("b")), vedge("a", "b"), vedge("b", "a")), RuleChainCycle},
		{"Condition nodes have an edge for every declared handle, plus a default",
			vchain(vnodes(Node{ID: "c", Kind: KindCondition, Cases: []Case{{Handle: "x", When: "input.x"}}}, vtool("d")), vlabel("c", "d", "default")), RuleConditionHandles},
		{"Non-condition sources have at most one unconditional edge alongside conditionals",
			vchain(vnodes(vtool("a"), vtool("b"), vtool("c"), vtool("d")), vcond("a", "b", "input.x"), vedge("a", "c"), vedge("a", "d")), RuleMultipleUnconditional},
		{"Every node is reachable via some edge",
			vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vedge("a", "b")), RuleUnreachable},
	}
	for _, r := range rows {
		t.Run(r.rule, func(t *testing.T) {
			issues := Validate(r.chain)
			found := false
			for _, is := range issues {
				if is.Rule == r.want {
					found = true
					if is.Severity != SeverityError {
						t.Errorf("%s is %s, the seed says error", r.want, is.Severity)
					}
				}
			}
			if !found {
				t.Fatalf("want %s, got:%s", r.want, dump(issues))
			}
		})
	}
}

// --- valid chains ----------------------------------------------------------

func TestValidateValidChains(t *testing.T) {
	t.Parallel()
	f := false
	cases := map[string]*Chain{
		"single node": vchain(vnodes(vtool("only"))),
		// A2E style: no edges at all, only input_map data references.
		"a2e linear input_map only": vchain(vnodes(
			vnode("read", KindTool, func(n *Node) { n.Input = map[string]any{"path": "/x"} }),
			vnode("summarize", KindSkill, func(n *Node) { n.Name = "summarizer"; n.InputMap = map[string]string{"text": "read.output"} }),
			vnode("store", KindTool, func(n *Node) { n.InputMap = map[string]string{"data": "node_results.summarize"} }),
		)),
		"capped loop": vchain(vnodes(vtool("start"), vtool("work"), vtool("check"), vtool("done")),
			vedge("start", "work"), vedge("work", "check"), vcond("check", "done", "{{ output.ok }}"),
			Edge{ID: "again", Source: "check", Target: "work", MaxIterations: 3}),
		"reachable false orphan": vchain(vnodes(vtool("a"), vtool("b"), vnode("diag", KindTool, func(n *Node) { n.Reachable = &f })), vedge("a", "b")),
		"everything": {
			Name: "support", EntryNode: "intake",
			Nodes: []Node{
				vnode("intake", KindTool, func(n *Node) {
					n.OnError = "oops"
					n.Retry = &Retry{MaxAttempts: 3, Backoff: "exponential"}
					n.Timeout = 30
				}),
				{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "refund", When: "{{ intake.output.kind == 'refund' }}"}, {Handle: "billing", When: "{{ intake.output.kind == 'billing' }}"}}},
				{ID: "check", Kind: KindBranch, Condition: "length(input.items) > `0`"},
				{ID: "batch", Kind: KindMap, ItemsPath: "input.items", MapNode: "each"},
				vnode("each", KindTool, func(n *Node) { n.InputMap = map[string]string{"x": "item"} }),
				{ID: "fan", Kind: KindParallel, Branches: []string{"b1", "b2"}, ParallelFailureMode: FailFast},
				vtool("b1"), vtool("b2"),
				{ID: "approve", Kind: KindInterrupt},
				vnode("notify", KindTool, func(n *Node) { n.Routing = RoutingAll; n.Dispatch = DispatchSequential }),
				vnode("email", KindTool, func(n *Node) { n.InputMap = map[string]string{"body": "notify.output"} }),
				vtool("crm"), vtool("triage"),
				vnode("oops", KindTool, nil),
				{ID: "wc", Kind: KindProc, Config: map[string]any{"argv": []any{"wc", "-l"}}},
				vnode("end", KindTool, func(n *Node) { n.InputMap = map[string]string{"all": "node_results.fan", "b": "batch.output"} }),
			},
			Edges: []Edge{
				vedge("intake", "route"),
				vlabel("route", "check", "refund"), vlabel("route", "fan", "billing"), vlabel("route", "approve", "default"),
				vlabel("check", "batch", "true"), vlabel("check", "approve", "false"),
				vedge("batch", "end"), vedge("fan", "end"), vedge("approve", "notify"),
				vcond("notify", "email", "{{ output.urgent }}"), vcond("notify", "crm", "{{ steps.email }}"),
				{ID: "notify->triage", Source: "notify", Target: "triage", Default: true},
				vedge("oops", "wc"), vedge("wc", "end"), vedge("triage", "end"),
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			opts := ValidateOptions{Tools: func(string) bool { return true }, Resolve: resolverOf(skillChain("summarizer"))}
			if issues := ValidateWith(c, opts); len(issues) != 0 {
				t.Fatalf("want no issues, got:%s", dump(issues))
			}
		})
	}
}

func TestValidateDecodedA2EExample(t *testing.T) {
	t.Parallel()
	doc := `{"type":"chain/req","id":"c1","version":"1.0","ts":1716123456.789,"session_id":"s1","chain_id":"abc123","nodes":[{"node_id":"read","kind":"tool","name":"read_file","input":{"path":"/data/input.txt"},"input_map":{},"next_node":"summarize","on_error":"abort"},{"node_id":"summarize","kind":"skill","name":"text_summarizer","input":{},"input_map":{"text":"read.output"},"on_error":"abort"}],"entry_node":"read","initial_input":{},"streaming":true,"timeout":300}`
	c, err := Decode([]byte(doc), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if issues := Validate(c); len(issues) != 0 {
		t.Fatalf("A2E's linear example should be valid:%s", dump(issues))
	}
}

// --- specific behaviours ------------------------------------------------------

func TestValidateCycleWithAndWithoutMaxIterations(t *testing.T) {
	t.Parallel()
	capped := vchain(vnodes(vtool("a"), vtool("b"), vtool("c"), vtool("out")),
		vedge("a", "b"), vedge("b", "c"), vloop("c", "a", 5), vcond("c", "out", "{{ output.done }}"))
	if issues := Validate(capped); len(issues) != 0 {
		t.Fatalf("capped cycle: want no issues, got:%s", dump(issues))
	}
	uncapped := vchain(vnodes(vtool("r"), vtool("a"), vtool("b"), vtool("c"), vtool("out")),
		vedge("r", "a"), vedge("a", "b"), vedge("b", "c"), vedge("c", "a"), vcond("c", "out", "{{ output.done }}"))
	errs := errorsIn(Validate(uncapped))
	if len(errs) != 1 || errs[0].Rule != RuleChainCycle || !strings.Contains(errs[0].Message, "a -> b -> c -> a") || errs[0].EdgeID != "c->a" {
		t.Fatalf("uncapped cycle: want one chain_cycle naming a -> b -> c -> a, got:%s", dump(errs))
	}
}

func TestValidateSelfLoop(t *testing.T) {
	t.Parallel()
	issues := Validate(vchain(vnodes(vtool("r"), vtool("a")), vedge("r", "a"), vedge("a", "a")))
	errs := errorsIn(issues)
	if len(errs) != 1 || errs[0].Rule != RuleChainCycle || !strings.Contains(errs[0].Message, "a -> a") {
		t.Fatalf("want chain_cycle a -> a, got:%s", dump(issues))
	}
	if issues := Validate(vchain(vnodes(vtool("r"), vtool("a")), vedge("r", "a"), vloop("a", "a", 2))); len(issues) != 0 {
		t.Fatalf("capped self loop: want no issues, got:%s", dump(issues))
	}
}

func TestValidateCycleReportedOncePerComponent(t *testing.T) {
	t.Parallel()
	// two overlapping cycles in one component, plus a separate one
	c := vchain(vnodes(vtool("r"), vtool("a"), vtool("b"), vtool("c"), vtool("x"), vtool("y")),
		vedge("r", "a"), vedge("a", "b"), vedge("b", "a"), vedge("b", "c"), vedge("c", "a"),
		vedge("r", "x"), vedge("x", "y"), vedge("y", "x"))
	var cycles []Issue
	for _, is := range Validate(c) {
		if is.Rule == RuleChainCycle {
			cycles = append(cycles, is)
		}
	}
	if len(cycles) != 2 || cycles[0].NodeID != "a" || cycles[1].NodeID != "x" {
		t.Fatalf("want one chain_cycle per cyclic component (a, x), got:%s", dump(cycles))
	}
	if !strings.Contains(cycles[0].Message, "a -> b -> a") || !strings.Contains(cycles[1].Message, "x -> y -> x") {
		t.Fatalf("want shortest concrete cycles, got:%s", dump(cycles))
	}
}

func TestValidateNodesOnlyOnACycleAreUnreachable(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(vtool("r"), vtool("s"), vtool("x"), vtool("y")), vedge("r", "s"), vedge("x", "y"), vedge("y", "x"))
	got := map[string]bool{}
	for _, is := range Validate(c) {
		if is.Rule == RuleUnreachable {
			got[is.NodeID] = true
			if !strings.Contains(is.Message, "no root leads there") {
				t.Errorf("message %q should explain no root leads there", is.Message)
			}
		}
	}
	if !got["x"] || !got["y"] || got["r"] || got["s"] {
		t.Fatalf("want x and y unreachable, got %v", got)
	}
}

func TestValidateReachableFalseExemptsOrphan(t *testing.T) {
	t.Parallel()
	f := false
	c := vchain(vnodes(vtool("a"), vtool("b"), vnode("diag", KindTool, func(n *Node) { n.Reachable = &f })), vedge("a", "b"))
	if issues := Validate(c); len(issues) != 0 {
		t.Fatalf("want no issues, got:%s", dump(issues))
	}
	c.Nodes[2].Reachable = nil
	errs := errorsIn(Validate(c))
	if len(errs) != 1 || errs[0].Rule != RuleUnreachable || errs[0].NodeID != "diag" || !strings.Contains(errs[0].Message, "not connected") {
		t.Fatalf("without reachable:false, want diag not connected, got:%s", dump(errs))
	}
}

func TestValidateDataOnlyNodesAreNotOrphans(t *testing.T) {
	t.Parallel()
	// b has no edges but reads a; c has no edges but is read by d, which hangs off a.
	c := vchain(vnodes(vtool("a"), vnode("b", KindTool, func(n *Node) { n.InputMap = map[string]string{"x": "a.output"} }),
		vtool("c"), vnode("d", KindTool, func(n *Node) { n.InputMap = map[string]string{"y": "{{ c.output }}"} })),
		vedge("a", "d"))
	if issues := Validate(c); len(issues) != 0 {
		t.Fatalf("want no issues, got:%s", dump(issues))
	}
}

func TestValidateAttachedNodesReachableThroughOwner(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(
		Node{ID: "m", Kind: KindMap, ItemsPath: "input.xs", MapNode: "body"},
		Node{ID: "body", Kind: KindMap, ItemsPath: "item.ys", MapNode: "inner"}, // nested map
		vnode("inner", KindTool, func(n *Node) { n.OnError = "h" }),
		vtool("h"), vtool("after")),
		vedge("h", "after")) // a handler may continue the flow
	if issues := Validate(c); len(issues) != 0 {
		t.Fatalf("want no issues, got:%s", dump(issues))
	}
}

func TestValidateAttachmentCycleUnreachable(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(vtool("r"),
		Node{ID: "m1", Kind: KindMap, ItemsPath: "input.xs", MapNode: "m2"},
		Node{ID: "m2", Kind: KindMap, ItemsPath: "input.xs", MapNode: "m1"}))
	got := map[string]bool{}
	for _, is := range Validate(c) {
		if is.Rule == RuleUnreachable {
			got[is.NodeID] = true
		}
	}
	if !got["m1"] || !got["m2"] {
		t.Fatalf("maps that are each other's body never run; got %v", got)
	}
}

func TestValidateDataCycleThroughLoop(t *testing.T) {
	t.Parallel()
	// a waits for c's output, but c runs only after a (the loop edge is not waited for).
	c := vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.InputMap = map[string]string{"prev": "c.output"} }), vtool("b"), vtool("c"), vtool("out")),
		vedge("a", "b"), vedge("b", "c"), vloop("c", "a", 3), vcond("c", "out", "{{ output.done }}"))
	errs := errorsIn(Validate(c))
	if len(errs) != 1 || errs[0].Rule != RuleDataCycle || !strings.Contains(errs[0].Message, "c -> a -> b -> c") {
		t.Fatalf("want data_cycle c -> a -> b -> c, got:%s", dump(errs))
	}
}

func TestValidateDataCycleNotDoubledWithChainCycle(t *testing.T) {
	t.Parallel()
	// b reads a, and a -> b -> a is a control cycle: one chain_cycle, no data_cycle.
	c := vchain(vnodes(vtool("r"), vtool("a"), vnode("b", KindTool, func(n *Node) { n.InputMap = map[string]string{"x": "a.output"} })),
		vedge("r", "a"), vedge("a", "b"), vedge("b", "a"))
	errs := errorsIn(Validate(c))
	if len(errs) != 1 || errs[0].Rule != RuleChainCycle {
		t.Fatalf("want only chain_cycle, got:%s", dump(errs))
	}
}

func TestValidateConditionUnlabelledEdgeIsDefault(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "a", When: "input.a"}}}, vtool("x"), vtool("y")),
		vlabel("route", "x", "a"), vedge("route", "y"))
	if issues := Validate(c); len(issues) != 0 {
		t.Fatalf("an unlabelled edge is the router's fallback; want no issues, got:%s", dump(issues))
	}
}

// A default that is a loop edge does not shadow an unlabelled edge: at the
// loop's cap the router passes over it to the unlabelled one.
func TestValidateLoopDefaultDoesNotShadowFallback(t *testing.T) {
	t.Parallel()
	loop := vloop("route", "start", 3)
	loop.Label = "default"
	c := vchain(vnodes(vtool("start"), Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "done", When: "input.done"}}}, vtool("fin"), vtool("out")),
		vedge("start", "route"), vlabel("route", "fin", "done"), loop, vedge("route", "out"))
	for _, is := range Validate(c) {
		if is.Rule == RuleShadowedFallback {
			t.Errorf("loop default reported as shadowing: %s", is.String())
		}
	}
}

func TestValidateConditionEachMissingHandleIsOwnError(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "a", When: "input.a"}, {Handle: "b", When: "input.b"}}}))
	var msgs []string
	for _, is := range Validate(c) {
		if is.Rule == RuleConditionHandles {
			msgs = append(msgs, is.Message)
		}
	}
	if len(msgs) != 3 || !strings.Contains(msgs[0], `"a"`) || !strings.Contains(msgs[1], `"b"`) || !strings.Contains(msgs[2], "default") {
		t.Fatalf("want errors for a, b and default, got %q", msgs)
	}
}

func TestValidateEntryAttached(t *testing.T) {
	t.Parallel()
	c := &Chain{Name: "x", EntryNode: "body", Nodes: vnodes(Node{ID: "m", Kind: KindMap, ItemsPath: "input.xs", MapNode: "body"}, vtool("body"))}
	errs := errorsIn(Validate(c))
	if len(errs) != 1 || errs[0].Rule != RuleEntryNotRoot || !strings.Contains(errs[0].Message, "attached") {
		t.Fatalf("want entry_not_root (attached), got:%s", dump(errs))
	}
}

func TestValidateSkillDepthOK(t *testing.T) {
	t.Parallel()
	// exactly MaxDepth levels is fine; a diamond is not a cycle.
	opts := ValidateOptions{MaxDepth: 3, Resolve: resolverOf(skillChain("a", "b", "c"), skillChain("b", "d"), skillChain("c", "d"), skillChain("d"))}
	if issues := ValidateWith(skillChain("main", "a"), opts); len(issues) != 0 {
		t.Fatalf("want no issues, got:%s", dump(issues))
	}
	opts.MaxDepth = 2
	errs := errorsIn(ValidateWith(skillChain("main", "a"), opts))
	if len(errs) != 1 || errs[0].Rule != RuleMaxDepth || !strings.Contains(errs[0].Message, "main -> a -> b -> d") {
		t.Fatalf("want one max_depth naming main -> a -> b -> d, got:%s", dump(errs))
	}
}

func TestValidateSkillCycleThroughTopAndNestedUnknown(t *testing.T) {
	t.Parallel()
	opts := ValidateOptions{Resolve: resolverOf(skillChain("a", "main"), skillChain("b", "nowhere"))}
	issues := ValidateWith(skillChain("main", "a", "b"), opts)
	if len(issues) != 2 {
		t.Fatalf("want skill_cycle and unknown_chain, got:%s", dump(issues))
	}
	if issues[0].Rule != RuleSkillCycle || issues[0].NodeID != "s0" || !strings.Contains(issues[0].Message, "main -> a -> main") {
		t.Errorf("want skill_cycle main -> a -> main on s0, got:%s", dump(issues[:1]))
	}
	if issues[1].Rule != RuleUnknownChain || issues[1].NodeID != "s1" || !strings.Contains(issues[1].Message, `chain "b" calls chain "nowhere"`) || !strings.Contains(issues[1].Message, "main -> b -> nowhere") {
		t.Errorf("want unknown_chain naming b -> nowhere on s1, got:%s", dump(issues[1:]))
	}
}

func TestValidateCompiledAgentChainNameAccepted(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(vtool("a")))
	c.Name = "__chain__sales-qualifier"
	if issues := ValidateWith(c, ValidateOptions{Resolve: resolverOf()}); len(issues) != 0 {
		t.Fatalf("the __chain__ prefix is the store's business; got:%s", dump(issues))
	}
}

func TestValidateSkillChainMaxDepthField(t *testing.T) {
	t.Parallel()
	c := skillChain("main", "c1")
	c.MaxDepth = 1
	opts := ValidateOptions{Resolve: resolverOf(skillChain("c1", "c2"), skillChain("c2"))}
	errs := errorsIn(ValidateWith(c, opts))
	if len(errs) != 1 || errs[0].Rule != RuleMaxDepth {
		t.Fatalf("the chain's max_depth applies when opts set none; got:%s", dump(errs))
	}
}

func TestValidateSkillResolveCalledOncePerName(t *testing.T) {
	t.Parallel()
	calls := map[string]int{}
	chains := map[string]*Chain{}
	// a wide diamond-heavy call graph: every level calls every chain of the next
	const levels, width = 5, 8
	for l := 0; l < levels; l++ {
		for w := 0; w < width; w++ {
			var callees []string
			if l+1 < levels {
				for x := 0; x < width; x++ {
					callees = append(callees, fmt.Sprintf("l%dw%d", l+1, x))
				}
			}
			name := fmt.Sprintf("l%dw%d", l, w)
			chains[name] = skillChain(name, callees...)
		}
	}
	var top []string
	for w := 0; w < width; w++ {
		top = append(top, fmt.Sprintf("l0w%d", w))
	}
	opts := ValidateOptions{MaxDepth: 10, Resolve: func(n string) (*Chain, bool) { calls[n]++; c, ok := chains[n]; return c, ok }}
	if issues := ValidateWith(skillChain("main", top...), opts); len(issues) != 0 {
		t.Fatalf("want no issues, got:%s", dump(issues))
	}
	for n, k := range calls {
		if k != 1 {
			t.Errorf("Resolve(%q) called %d times", n, k)
		}
	}
}

func TestValidateSortedErrorsFirst(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(vnode("a", KindTool, func(n *Node) { n.Dispatch = DispatchSequential }), vtool("b"), Node{ID: "c", Kind: KindTool}),
		vedge("a", "b"), vedge("b", "c"), vedge("c", "ghost"))
	issues := Validate(c)
	want := []string{RuleMissingToolName, RuleDanglingEdge, RuleDispatchIgnored}
	if len(issues) != len(want) {
		t.Fatalf("got:%s", dump(issues))
	}
	for i, r := range want {
		if issues[i].Rule != r {
			t.Fatalf("order: want %v, got:%s", want, dump(issues))
		}
	}
	// deterministic
	for k := 0; k < 20; k++ {
		again := Validate(c)
		for i := range again {
			if again[i].Message != issues[i].Message {
				t.Fatal("issues are not deterministic")
			}
		}
	}
}

func TestValidateHandBuiltGarbage(t *testing.T) {
	t.Parallel()
	f := false
	chains := []*Chain{
		nil,
		{},
		{Nodes: []Node{{}}},
		{Nodes: []Node{{}, {}}, Edges: []Edge{{}, {Source: "", Target: ""}}},
		{Nodes: []Node{{ID: "a", Kind: KindMap, MapNode: "a", Branches: []string{"a", ""}}, {ID: "a", Kind: KindParallel, Branches: []string{"a", "a", ""}, OnError: "a"}},
			Edges: []Edge{{Source: "a", Target: "a", MaxIterations: -1, OnMaxReached: "??"}}},
		{Nodes: []Node{{ID: "c", Kind: KindCondition, Cases: []Case{{}, {Handle: "default"}}, Retry: &Retry{MaxAttempts: -1, Backoff: "x"}, Reachable: &f}},
			Edges: []Edge{{ID: "e", Source: "c", Target: "c", Default: true, Condition: "{{"}}},
		{Nodes: []Node{{ID: "p", Kind: KindProc, Config: map[string]any{"argv": []any{1, nil}}}, {ID: "q", Kind: KindProc, Config: map[string]any{"argv": "ls"}}, {ID: "r", Kind: KindProc, Config: map[string]any{"argv": []string{""}}}}},
		{EntryNode: "x", Timeout: -1, MaxConcurrency: -1, MaxDepth: -1, Nodes: []Node{{ID: "x", Kind: KindSkill, Name: "x"}}},
	}
	for i, c := range chains {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("chain %d: Validate panicked: %v", i, r)
				}
			}()
			issues := ValidateWith(c, ValidateOptions{Resolve: func(string) (*Chain, bool) { return nil, true }, Tools: func(string) bool { return false }})
			if i > 0 && !HasErrors(issues) {
				t.Errorf("chain %d: want errors", i)
			}
		}()
	}
}

// --- fuzzing -------------------------------------------------------------------

func FuzzValidate(f *testing.F) {
	seeds := []string{
		`{"nodes":[{"node_id":"a","kind":"tool","name":"t"}]}`,
		`{"name":"x","nodes":[{"node_id":"a","kind":"tool","name":"t","next_node":"b"},{"node_id":"b","kind":"skill","name":"x","input_map":{"t":"a.output"}}]}`,
		`{"nodes":[{"node_id":"r","kind":"condition","cases":[{"handle":"h","when":"{{ input.x }}"}]},{"node_id":"b","kind":"branch","condition":"input.y","true_node":"r"}],"edges":[{"source":"r","target":"b","label":"h"},{"source":"b","target":"r","max_iterations":2,"on_max_reached":"continue"}]}`,
		`{"nodes":[{"node_id":"m","kind":"map","items_path":"input.xs","map_node":"m"},{"node_id":"p","kind":"parallel","branches":["m","p","q"],"on_error":"p"}]}`,
		`{"entry_node":"z","nodes":[{"node_id":"a","kind":"tool","routing":"all","dispatch":"parallel"},{"node_id":"b","kind":"proc","config":{"argv":["ls"]}}],"edges":[{"source":"a","target":"b","default":true,"condition":"{{ steps.x }}"},{"source":"a","target":"a"}]}`,
		`{"type":"chain/req","id":"c1","nodes":[{"node_id":"read","kind":"tool","name":"read_file","next_node":"s"},{"node_id":"s","kind":"skill","name":"t","input_map":{"text":"read.output"}}],"entry_node":"read"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data, Limits{MaxNodes: 200, MaxEdges: 400})
		if err != nil {
			return
		}
		Validate(c)
		ValidateWith(c, ValidateOptions{
			Resolve:  func(name string) (*Chain, bool) { return c, name != "" && name[0] != 'z' },
			Tools:    func(name string) bool { return len(name)%2 == 0 },
			MaxDepth: 3,
		})
	})
}

// FuzzValidateHandBuilt builds chains straight from the bytes, as a host or
// the designer might (duplicate ids, dangling edges, self references,
// unparseable expressions, values decode would refuse), and validates them.
func FuzzValidateHandBuilt(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20})
	f.Add([]byte("\x00\x00\x05\x01\x00\x01\x01\x01\x02\x01\x02\x00\x00\x01\x01\x00\x02\x02"))
	f.Add([]byte("map parallel condition branch loop cycle"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := chainFromBytes(data)
		Validate(c)
		sub := chainFromBytes(append([]byte{3}, data...))
		ValidateWith(c, ValidateOptions{
			Resolve: func(name string) (*Chain, bool) {
				switch name {
				case "a", "b":
					return c, true
				case "c":
					return sub, true
				case "d":
					return nil, true
				}
				return nil, false
			},
			Tools:    func(name string) bool { return name != "e" },
			MaxDepth: int(len(data) % 4),
			Limits:   Limits{MaxNodes: 6, MaxEdges: 9},
		})
	})
}

func chainFromBytes(data []byte) *Chain {
	ids := []string{"a", "b", "c", "d", "e", "", "input", "ghost"}
	kinds := append(append([]Kind(nil), Kinds...), "", "bogus")
	exprs := []string{"a.output", "node_results.b", "{{ steps.x }}", "{{ ghost.y == 1 }}", "{{", "length(", "input.x",
		"c.output.z", "", "@", "{{ when.a }}", "node_results", "{{ d.output.ok }} == yes", "`1`"}
	labels := []string{"", "default", "true", "false", "h1", "h2", "x"}
	pos := 0
	next := func() int {
		if pos >= len(data) {
			return 0
		}
		b := int(data[pos])
		pos++
		return b
	}
	pick := func(ss []string) string { return ss[next()%len(ss)] }
	c := &Chain{Name: pick(ids), MaxDepth: next()%4 - 1, Timeout: float64(next()%3 - 1)}
	for pos < len(data) {
		switch next() % 4 {
		case 0, 3:
			n := Node{ID: pick(ids), Kind: kinds[next()%len(kinds)], Name: pick(ids)}
			flags := next()
			if flags&1 != 0 {
				n.MapNode = pick(ids)
				n.ItemsPath = pick(exprs)
			}
			if flags&2 != 0 {
				n.Branches = []string{pick(ids), pick(ids)}
			}
			if flags&4 != 0 {
				n.OnError = pick(append(ids, "abort", "skip", "continue", "stop"))
			}
			if flags&8 != 0 {
				n.Cases = []Case{{Handle: pick(labels), When: pick(exprs)}, {Handle: pick(labels), When: pick(exprs)}}
			}
			if flags&16 != 0 {
				n.Condition = pick(exprs)
				n.InputMap = map[string]string{"x": pick(exprs), "y": pick(exprs)}
				n.SetState = map[string]string{"s": pick(exprs)}
			}
			if flags&32 != 0 {
				n.Routing = pick([]string{"", "first", "all", "zzz"})
				n.Dispatch = pick([]string{"", "parallel", "sequential", "zzz"})
			}
			if flags&64 != 0 {
				r := next()%2 == 0
				n.Reachable = &r
				n.Retry = &Retry{MaxAttempts: next()%4 - 1, Backoff: pick([]string{"", "fixed", "x"}), InitialDelaySeconds: float64(next()%3 - 1)}
				n.Timeout = float64(next()%3 - 1)
			}
			if flags&128 != 0 {
				n.Config = map[string]any{"argv": []any{pick(ids), float64(next())}}
			}
			c.Nodes = append(c.Nodes, n)
		case 1:
			e := Edge{ID: pick([]string{"", "e1", "e2"}), Source: pick(ids), Target: pick(ids), Label: pick(labels)}
			flags := next()
			if flags&1 != 0 {
				e.Condition = pick(exprs)
			}
			e.Default = flags&2 != 0
			e.MaxIterations = next()%4 - 1
			e.OnMaxReached = pick([]string{"", "error", "continue", "zzz"})
			c.Edges = append(c.Edges, e)
		case 2:
			c.EntryNode = pick(ids)
		}
	}
	return c
}

// --- performance -------------------------------------------------------------

// bigChain: n nodes, each i -> i+1 and i -> i+2 (about 2n edges); every
// third node routes with a conditional edge, every fifth reads an earlier
// node's output.
func bigChain(n int) *Chain {
	c := &Chain{Name: "big", Nodes: make([]Node, n), Edges: make([]Edge, 0, 2*n)}
	for i := 0; i < n; i++ {
		nd := Node{ID: fmt.Sprintf("n%d", i), Kind: KindTool, Name: "echo"}
		if i%5 == 0 && i > 0 {
			nd.InputMap = map[string]string{"prev": fmt.Sprintf("n%d.output.value", i-1), "x": "{{ input.x }}"}
		}
		c.Nodes[i] = nd
	}
	for i := 0; i < n; i++ {
		id := c.Nodes[i].ID
		if i+1 < n {
			e := Edge{ID: id + "a", Source: id, Target: c.Nodes[i+1].ID}
			if i%3 == 0 {
				e.Condition = "{{ output.ok == true }}"
			}
			c.Edges = append(c.Edges, e)
		}
		if i+2 < n {
			c.Edges = append(c.Edges, Edge{ID: id + "b", Source: id, Target: c.Nodes[i+2].ID})
		}
	}
	return c
}

func TestValidateBigChain(t *testing.T) {
	c := bigChain(10_000)
	start := time.Now()
	issues := Validate(c)
	if len(issues) != 0 {
		t.Fatalf("want no issues, got %d:%s", len(issues), dump(issues[:min(len(issues), 5)]))
	}
	t.Logf("10k nodes, %d edges: %v", len(c.Edges), time.Since(start))

	// A 10,000-node cycle and 10,000-node unreachable line must not recurse.
	cyc := bigChain(10_000)
	cyc.Edges = append(cyc.Edges, Edge{ID: "back", Source: "n9999", Target: "n0"})
	var cycles []Issue
	for _, is := range Validate(cyc) {
		if is.Rule == RuleChainCycle {
			cycles = append(cycles, is)
		}
	}
	if len(cycles) != 1 {
		t.Fatalf("want one chain_cycle, got %d", len(cycles))
	}
}

// BenchmarkValidate10kNodes is the designer's case: the chain is validated
// again after an edit, so its expressions are already parsed (cached).
func BenchmarkValidate10kNodes(b *testing.B) {
	c := bigChain(10_000)
	Validate(c)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if issues := Validate(c); len(issues) != 0 {
			b.Fatal(issues[0])
		}
	}
}

// BenchmarkValidate10kNodesCold parses every expression (a first import).
func BenchmarkValidate10kNodesCold(b *testing.B) {
	c := bigChain(10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resetExprCache()
		if issues := Validate(c); len(issues) != 0 {
			b.Fatal(issues[0])
		}
	}
}

// BenchmarkValidate10kNodesChecksOnly measures the checks without building
// the graph (which parses every expression).
func BenchmarkValidate10kNodesChecksOnly(b *testing.B) {
	g := NewGraph(bigChain(10_000))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if issues := validateGraph(g, ValidateOptions{}); len(issues) != 0 {
			b.Fatal(issues[0])
		}
	}
}

// BenchmarkValidate10kNodesGraphBuild measures building the graph alone (it
// parses every expression), the other part of Validate.
func BenchmarkValidate10kNodesGraphBuild(b *testing.B) {
	c := bigChain(10_000)
	b.ReportAllocs()
	for b.Loop() {
		NewGraph(c)
	}
}

// A bare word that is a node id, a context name, or text in the template
// comparison spelling is not reported; the word reported is not reported
// again as unknown_name.
func TestValidateBareWordsNotReported(t *testing.T) {
	t.Parallel()
	for _, cond := range []string{"{{input.category}} == billing", "input.category == 'billing'", "input.x == b", "output.ok == input.ok"} {
		issues := Validate(vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vcond("a", "b", cond), vedge("a", "c")))
		for _, is := range issues {
			if is.Rule == RuleBareWordComparison || is.Rule == RuleUnknownName {
				t.Errorf("%s: %s", cond, is.Message)
			}
		}
	}
	issues := Validate(vchain(vnodes(vtool("a"), vtool("b"), vtool("c")), vcond("a", "b", "category == billing"), vedge("a", "c")))
	for _, is := range issues {
		if is.Rule == RuleUnknownName {
			t.Errorf("reported twice: %s", is.Message)
		}
	}
}

// FieldIssues is Validate's say on one field holding the text being typed:
// the bare-word warning of that case, not the other case's, and nothing for
// a field the chain lacks.
func TestFieldIssuesAreTheValidatorsForThatField(t *testing.T) {
	t.Parallel()
	c := vchain(vnodes(Node{ID: "route", Kind: KindCondition, Cases: []Case{{Handle: "a", When: "input.x == 'a'"}, {Handle: "b", When: "input.x == bee"}}}, vtool("x"), vtool("y"), vtool("d")),
		vlabel("route", "x", "a"), vlabel("route", "y", "b"), vlabel("route", "d", "default"))
	got := FieldIssues(c, "route", "", "cases[0].when", "input.x == high", ValidateOptions{})
	if len(got) != 1 || got[0].Rule != RuleBareWordComparison || !strings.Contains(got[0].Message, "input.x == 'high'") {
		t.Fatalf("cases[0].when:%s", dump(got))
	}
	if c.Nodes[0].Cases[0].When != "input.x == 'a'" {
		t.Errorf("FieldIssues changed the chain: %q", c.Nodes[0].Cases[0].When)
	}
	if got := FieldIssues(c, "route", "", "cases[0].when", "input.x == 'high'", ValidateOptions{}); len(got) != 0 {
		t.Errorf("a quoted comparison:%s", dump(got))
	}
	if got := FieldIssues(c, "route", "", "cases[2].when", "input.x == high", ValidateOptions{}); got != nil {
		t.Errorf("a case the chain lacks:%s", dump(got))
	}
	if got := FieldIssues(c, "", "route->x", "condition", "input.x == high", ValidateOptions{}); len(got) != 1 || got[0].EdgeID != "route->x" {
		t.Errorf("edge condition:%s", dump(got))
	}
}

func TestValidateCredentialReferences(t *testing.T) {
	stored := map[string]CredentialUse{
		"github": {Type: "bearer", Allowed: true}, "llm": {Type: "openai", Allowed: true}, "other": {Type: "bearer"},
		"broken":  {Type: "bearer", Allowed: true, Unreadable: "sealed fields: bad base64"},
		"nowhere": {Type: "bearer", Allowed: true, NoHosts: true},
	}
	opts := ValidateOptions{Credential: func(name string) CredentialUse {
		c, ok := stored[name]
		c.Found = ok
		return c
	}}
	for name, want := range map[string]string{"github": "", "nope": RuleUnknownCredential, "llm": RuleCredentialType, "other": RuleCredentialNotAllowed,
		"broken": RuleCredentialUnreadable, "nowhere": RuleCredentialNoHosts} {
		c := &Chain{Name: "c", Nodes: []Node{{ID: "h", Kind: KindTool, Name: "http", Input: map[string]any{"url": "http://127.0.0.1/", "auth": map[string]any{"credential": name}}}}}
		var got []Issue
		for _, is := range ValidateWith(c, opts) {
			if strings.Contains(is.Rule, "credential") {
				got = append(got, is)
			}
		}
		if want == "" {
			if len(got) != 0 {
				t.Errorf("%s: %+v", name, got)
			}
			continue
		}
		if len(got) != 1 || got[0].Rule != want || got[0].Field != "input.auth.credential" || !strings.Contains(got[0].Message, `"`+name+`"`) || got[0].NodeID != "h" {
			t.Errorf("%s: %+v, want one %s naming it", name, got, want)
		}
		if name == "broken" && (!strings.Contains(got[0].Message, "cannot be read") || strings.Contains(got[0].Message, "does not have")) {
			t.Errorf("an unreadable credential is said to exist and be unreadable: %s", got[0].Message)
		}
	}
}
