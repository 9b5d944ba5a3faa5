package agent

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm"
)

// ReservedPrefix starts the name of every compiled agent chain. A
// hand-written chain may not use it (the store and the API refuse it), so it
// can never shadow an agent's chain.
const ReservedPrefix = "__chain__"

// singlePrefix names the one-node chain an agent without spec.chain runs as.
const singlePrefix = "__agent__"

// CompiledTimeout is the wall-clock limit of a compiled agent chain, in
// seconds (model calls are slow; the engine's default is 300).
const CompiledTimeout = 1800

// maxCompiledNodes bounds one agent's expanded graph (fan-out × depth).
const maxCompiledNodes = 10000

// IsReservedName reports whether a chain name is reserved for compiled agent
// chains (it starts with "__chain__").
func IsReservedName(name string) bool { return strings.HasPrefix(name, ReservedPrefix) }

// ChainName is the name of agent's compiled chain: "__chain__<agent>".
func ChainName(agent string) string { return ReservedPrefix + agent }

// Node ids of the compiled chain: the invoked agent's id is its name; a link's
// id is the path of agent names below the root joined by "/" ("b", "b/c");
// an error handler's id is "<link id>!<handler agent>". Agent names contain
// neither "/" nor "!", so ids never collide.
const (
	pathSep       = "/"
	handlerSep    = "!"
	continueNode  = "!~continue" // suffix of the internal node that implements on_error: continue below a link with its own chain
	configAgent   = "agent"      // node.config key naming the agent (node.name holds it too)
	configContinu = "continue_handler"
)

// Graph is an agent's expanded chain, as GET /v1/agents/{name}/chain shows
// it: a compile-time artifact, available without running anything.
type Graph struct {
	Agent    string `json:"agent"`
	Chain    string `json:"chain"` // the compiled chain's name, __chain__<agent>
	Mode     string `json:"mode"`
	MaxDepth int    `json:"max_depth"`
	Links    []Link `json:"links"` // depth-first, in declaration order
}

// Link is one link of the expanded graph (or an error handler: HandlerFor set).
type Link struct {
	NodeID         string     `json:"node_id"`
	Agent          string     `json:"agent"`
	Depth          int        `json:"depth"`
	Via            *string    `json:"via"`    // the agent whose chain fires this link, at depth ≥ 2; null at depth 1
	Parent         string     `json:"parent"` // the node id of that agent
	When           *string    `json:"when"`   // as written; null when the rule has none
	Default        bool       `json:"default"`
	Mode           string     `json:"mode"` // the mode of the chain this link belongs to
	Input          string     `json:"input,omitempty"`
	OnError        string     `json:"on_error,omitempty"`
	TimeoutSeconds float64    `json:"timeout_seconds,omitempty"`
	Retry          *RetrySpec `json:"retry,omitempty"`
	HandlerFor     string     `json:"handler_for,omitempty"` // error handlers: the node id of the link they handle
}

// Set is a loaded, compiled set of agents. It is immutable and safe for
// concurrent use.
type Set struct {
	providers  llm.Kinds               // LoadOptions.Providers
	urlRefused func(url string) string // LoadOptions.URLRefused
	tools      func(name string) bool  // LoadOptions.Tools
	defs       map[string]*Definition
	names      []string
	chains     map[string]*chain.Chain
	graphs     map[string]*Graph
}

// NewSet checks references between agents and compiles every chain. All
// problems are reported together, each naming the agent (and its file) and
// the rule that refers.
func NewSet(defs []*Definition, opts LoadOptions) (*Set, error) {
	s := &Set{providers: opts.Providers, urlRefused: opts.URLRefused, tools: opts.Tools, defs: map[string]*Definition{}, chains: map[string]*chain.Chain{}, graphs: map[string]*Graph{}}
	var errs []string
	for _, d := range defs {
		if prev, dup := s.defs[d.Name]; dup {
			errs = append(errs, fmt.Sprintf("agent %q is defined twice: in %s and in %s", d.Name, orCode(prev.File), orCode(d.File)))
			continue
		}
		// Built in code, or parsed without the host's providers (Parse).
		if !d.checked || (opts.Providers != nil && !d.providersChecked) {
			if err := d.check(opts.Providers); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		s.defs[d.Name] = d
		s.names = append(s.names, d.Name)
	}
	sort.Strings(s.names)
	for _, name := range s.names {
		d := s.defs[name]
		if d.Tool != "" && opts.Tools != nil && !opts.Tools(d.Tool) {
			errs = append(errs, fmt.Sprintf("%s: tool %q does not exist on this host", d.where(), d.Tool))
		}
		if opts.Tools != nil {
			errs = append(errs, d.checkTools(opts.Tools)...)
		}
		if d.HasChain() {
			c, g, cerrs := s.compile(d)
			errs = append(errs, cerrs...)
			if len(cerrs) == 0 {
				s.chains[name], s.graphs[name] = c, g
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(dedupe(errs), "\n"))
	}
	return s, nil
}

func orCode(file string) string {
	if file == "" {
		return "(code)"
	}
	return file
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Len returns the number of agents.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.names)
}

// Names returns the agent names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.names...)
}

// Get returns an agent's definition.
func (s *Set) Get(name string) (*Definition, bool) {
	if s == nil {
		return nil, false
	}
	d, ok := s.defs[name]
	return d, ok
}

// Graph returns the expanded chain of an agent that declares one.
func (s *Set) Graph(name string) (*Graph, bool) {
	if s == nil {
		return nil, false
	}
	g, ok := s.graphs[name]
	return g, ok
}

// Chain returns a copy of the compiled chain of an agent that declares one.
func (s *Set) Chain(name string) (*chain.Chain, bool) {
	if s == nil {
		return nil, false
	}
	c, ok := s.chains[name]
	if !ok {
		return nil, false
	}
	return c.Clone(), true
}

// ResolveChain finds a compiled chain by its chain name ("__chain__<agent>").
func (s *Set) ResolveChain(chainName string) (*chain.Chain, bool) {
	if !IsReservedName(chainName) {
		return nil, false
	}
	return s.Chain(strings.TrimPrefix(chainName, ReservedPrefix))
}

// RunChain returns the chain that runs an agent: its compiled chain, or, for
// an agent without spec.chain, a chain of the one agent node
// ("__agent__<name>").
func (s *Set) RunChain(name string) (*chain.Chain, bool) {
	if c, ok := s.Chain(name); ok {
		return c, true
	}
	if _, ok := s.Get(name); !ok {
		return nil, false
	}
	return &chain.Chain{
		Name:             singlePrefix + name,
		Description:      "agent " + name,
		StrictConditions: true,
		Timeout:          CompiledTimeout,
		Nodes:            []chain.Node{{ID: name, Kind: chain.KindAgent, Name: name, Label: name, Config: map[string]any{configAgent: name}}},
	}, true
}

// compiler expands one agent's chain.
type compiler struct {
	s        *Set
	root     *Definition
	maxDepth int
	c        *chain.Chain
	g        *Graph
	errs     []string
	row      int
	overflow bool
}

func (s *Set) compile(root *Definition) (*chain.Chain, *Graph, []string) {
	spec := root.Spec.Chain
	k := &compiler{s: s, root: root, maxDepth: spec.MaxDepthOrDefault()}
	k.c = &chain.Chain{
		Name:             ChainName(root.Name),
		Description:      fmt.Sprintf("compiled from spec.chain of agent %s", root.Name),
		StrictConditions: true,
		Timeout:          CompiledTimeout,
		MaxDepth:         k.maxDepth,
	}
	k.g = &Graph{Agent: root.Name, Chain: k.c.Name, Mode: spec.ModeOrDefault(), MaxDepth: k.maxDepth, Links: []Link{}}
	k.addNode(chain.Node{ID: root.Name, Kind: chain.KindAgent, Name: root.Name, Label: root.Name,
		Routing: chain.RoutingAll, Dispatch: spec.ModeOrDefault(), Config: map[string]any{configAgent: root.Name}}, 0)
	k.expand(root, root.Name, []string{root.Name}, 0)
	if len(k.errs) > 0 {
		return nil, nil, k.errs
	}
	if issues := chain.Validate(k.c); chain.HasErrors(issues) {
		for _, is := range issues {
			if is.Severity == chain.SeverityError {
				k.errs = append(k.errs, fmt.Sprintf("%s: the compiled chain %s is invalid (%s): %s", root.where(), k.c.Name, is.Rule, is.Message))
			}
		}
		return nil, nil, k.errs
	}
	return k.c, k.g, nil
}

func (k *compiler) addNode(n chain.Node, depth int) {
	n.Position = &chain.Position{X: float64(depth * 280), Y: float64(k.row * 120)}
	k.row++
	k.c.Nodes = append(k.c.Nodes, n)
}

func (k *compiler) fail(format string, args ...any) {
	k.errs = append(k.errs, fmt.Sprintf(format, args...))
}

// expand adds the links of parent's chain below the node parentID. path is
// the agents from the root to parent.
func (k *compiler) expand(parent *Definition, parentID string, path []string, depth int) {
	spec := parent.Spec.Chain
	mode := spec.ModeOrDefault()
	for i := range spec.OnComplete {
		r := &spec.OnComplete[i]
		ref := fmt.Sprintf("spec.chain.on_complete[%d]", i)
		target, ok := k.s.defs[r.Agent]
		if !ok {
			k.fail("%s: %s names agent %q, which does not exist (path: %s)", parent.where(), ref, r.Agent, strings.Join(append(clone(path), r.Agent), " -> "))
			continue
		}
		full := append(clone(path), r.Agent)
		if contains(path, r.Agent) {
			k.fail("agent %q: cycle in spec.chain: %s (declared in %s, %s)", k.root.Name, strings.Join(full, " -> "), parent.where(), ref)
			continue
		}
		d := depth + 1
		if d > k.maxDepth {
			k.fail("agent %q: spec.chain expands deeper than max_depth %d: %s is %d links deep (declared in %s, %s)", k.root.Name, k.maxDepth, strings.Join(full, " -> "), d, parent.where(), ref)
			continue
		}
		if len(k.c.Nodes) >= maxCompiledNodes {
			if !k.overflow {
				k.overflow = true
				k.fail("agent %q: spec.chain expands to more than %d nodes; reduce the fan-out or max_depth", k.root.Name, maxCompiledNodes)
			}
			return
		}
		id := r.Agent
		if depth > 0 {
			id = parentID + pathSep + r.Agent
		}
		node := chain.Node{
			ID: id, Kind: chain.KindAgent, Name: r.Agent, Label: r.Agent,
			InputMap: map[string]string{
				"query":      r.InputOrDefault(),
				"context":    "{{ trigger.context }}",
				"session_id": "{{ trigger.session_id }}",
			},
			Timeout: r.TimeoutSeconds,
			Config:  map[string]any{configAgent: r.Agent},
		}
		if r.Retry != nil {
			node.Retry = &chain.Retry{MaxAttempts: int(r.Retry.MaxAttempts), Backoff: r.Retry.Backoff, InitialDelaySeconds: r.Retry.InitialDelaySeconds}
		}
		expands := target.HasChain()
		if expands {
			node.Routing = chain.RoutingAll
			node.Dispatch = target.Spec.Chain.ModeOrDefault()
		}
		link := Link{NodeID: id, Agent: r.Agent, Depth: d, Parent: parentID, Default: r.Default, Mode: mode,
			Input: r.InputOrDefault(), OnError: r.OnErrorOrDefault(), TimeoutSeconds: r.TimeoutSeconds, Retry: r.Retry}
		if depth > 0 {
			via := parent.Name
			link.Via = &via
		}
		if r.When != "" {
			w := r.When
			link.When = &w
		}
		var handler *chain.Node
		var handlerLink *Link
		switch pol := r.OnErrorOrDefault(); pol {
		case OnErrorStop:
			node.OnError = chain.OnErrorAbort
		case OnErrorContinue:
			node.OnError = chain.OnErrorContinue
			if expands {
				// The engine evaluates a failed node's edges under
				// on_error: continue; a failed agent's own chain must not
				// fire, so the error jumps to a no-op handler instead (the
				// link's edges are then pruned: upstream_stopped).
				node.OnError = id + continueNode
				handler = &chain.Node{ID: node.OnError, Kind: chain.KindAgent, Label: "continue",
					Description: "on_error: continue of " + id, Config: map[string]any{configContinu: true}}
			}
		default:
			if _, ok := k.s.defs[pol]; !ok {
				k.fail("%s: %s.on_error names agent %q, which does not exist (on_error is stop, continue or the name of an agent)", parent.where(), ref, pol)
				continue
			}
			node.OnError = id + handlerSep + pol
			handler = &chain.Node{ID: node.OnError, Kind: chain.KindAgent, Name: pol, Label: pol,
				Description: "on_error handler of " + id,
				InputMap: map[string]string{
					"query":      "{{ error.message }}",
					"error":      "{{ error }}",
					"context":    "{{ trigger.context }}",
					"session_id": "{{ trigger.session_id }}",
				},
				Config: map[string]any{configAgent: pol}}
			hl := Link{NodeID: node.OnError, Agent: pol, Depth: d, Via: link.Via, Parent: parentID, Mode: mode,
				Input: "{{ error.message }}", OnError: OnErrorStop, HandlerFor: id}
			handlerLink = &hl
		}
		k.addNode(node, d)
		k.c.Edges = append(k.c.Edges, chain.Edge{ID: parentID + "->" + id, Source: parentID, Target: id,
			Label: r.Agent, Condition: r.When, Default: r.Default})
		k.g.Links = append(k.g.Links, link)
		if handler != nil {
			k.addNode(*handler, d)
		}
		if handlerLink != nil {
			k.g.Links = append(k.g.Links, *handlerLink)
		}
		if expands {
			k.expand(target, id, full, d)
		}
	}
}

func clone(ss []string) []string { return append([]string(nil), ss...) }

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
