package agent

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

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

// Set is the agents a host runs, compiled: those loaded from files (or
// built in code) at start, and those kept in the store, which Replace
// swaps whole while runs read it. Safe for concurrent use; its methods see
// one consistent index each.
type Set struct {
	providers  llm.Kinds               // LoadOptions.Providers
	urlRefused func(url string) string // LoadOptions.URLRefused
	tools      func(name string) bool  // LoadOptions.Tools
	files      []*Definition           // the agents NewSet was given
	mu         sync.Mutex              // serialises Replace
	idx        atomic.Pointer[index]
}

// index is one compiled generation of a set's agents.
type index struct {
	defs   map[string]*Definition
	names  []string
	chains map[string]*chain.Chain
	graphs map[string]*Graph
	// skipped are the stored agents left out because they do not compile
	// beside the others, with why.
	skipped map[string]string
}

// now is the set's current index (an empty one for a nil set).
func (s *Set) now() *index {
	if s == nil {
		return &index{}
	}
	return s.idx.Load()
}

// NewSet checks references between agents and compiles every chain. All
// problems are reported together, each naming the agent (and its file) and
// the rule that refers.
func NewSet(defs []*Definition, opts LoadOptions) (*Set, error) {
	s := &Set{providers: opts.Providers, urlRefused: opts.URLRefused, tools: opts.Tools, files: defs}
	idx, errs := s.build(defs)
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "\n"))
	}
	s.idx.Store(idx)
	return s, nil
}

// build compiles defs into an index, with every problem found.
func (s *Set) build(defs []*Definition) (*index, []string) {
	idx := &index{defs: map[string]*Definition{}, chains: map[string]*chain.Chain{}, graphs: map[string]*Graph{}}
	var errs []string
	for _, d := range defs {
		if prev, dup := idx.defs[d.Name]; dup {
			errs = append(errs, fmt.Sprintf("agent %q is defined twice: in %s and in %s", d.Name, orCode(prev.File), orCode(d.File)))
			continue
		}
		// Built in code, or parsed without the host's providers (Parse).
		if !d.checked || (s.providers != nil && !d.providersChecked) {
			if err := d.check(s.providers); err != nil {
				errs = append(errs, err.Error())
				continue
			}
		}
		idx.defs[d.Name] = d
		idx.names = append(idx.names, d.Name)
	}
	sort.Strings(idx.names)
	for _, name := range idx.names {
		d := idx.defs[name]
		if d.Tool != "" && s.tools != nil && !s.tools(d.Tool) {
			errs = append(errs, fmt.Sprintf("%s: tool %q does not exist on this host", d.where(), d.Tool))
		}
		if s.tools != nil {
			errs = append(errs, d.checkTools(s.tools)...)
		}
		if d.HasChain() {
			c, g, cerrs := idx.compile(d)
			errs = append(errs, cerrs...)
			if len(cerrs) == 0 {
				idx.chains[name], idx.graphs[name] = c, g
			}
		}
	}
	return idx, dedupe(errs)
}

// withStored is the set's file agents with stored ones: a stored agent
// replaces a file agent of its name.
func (s *Set) withStored(stored []*Definition) []*Definition {
	names := make(map[string]bool, len(stored))
	for _, d := range stored {
		names[d.Name] = true
	}
	out := make([]*Definition, 0, len(s.files)+len(stored))
	for _, d := range s.files {
		if !names[d.Name] {
			out = append(out, d)
		}
	}
	return append(out, stored...)
}

// Replace makes stored the set's stored agents, compiled with the file
// agents, for every call from now on. A stored agent that does not compile
// beside the others (it links to an agent since deleted, names a tool the
// host lost) is left out; Skipped says why, and why each of unreadable
// (stored agents whose source does not parse) is missing too.
func (s *Set) Replace(stored []*Definition, unreadable map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx, errs := s.build(s.withStored(stored))
	if len(errs) == 0 {
		idx.skipped = maps.Clone(unreadable)
		s.idx.Store(idx)
		return
	}
	// Add the stored agents one at a time, in name order, keeping those
	// that compile: one broken agent leaves the others running.
	sorted := slices.SortedFunc(slices.Values(stored), func(a, b *Definition) int { return strings.Compare(a.Name, b.Name) })
	var kept []*Definition
	skipped := maps.Clone(unreadable)
	if skipped == nil {
		skipped = map[string]string{}
	}
	for _, d := range sorted {
		if next, errs := s.build(s.withStored(append(kept, d))); len(errs) == 0 {
			kept, idx = append(kept, d), next
		} else {
			skipped[d.Name] = strings.Join(errs, "; ")
		}
	}
	if len(kept) == 0 {
		idx, _ = s.build(s.files)
	}
	idx.skipped = skipped
	s.idx.Store(idx)
}

// Check compiles def beside the set's agents as if it were stored (in
// place of the agent of its name), without changing the set: every problem
// it would have, or nil.
func (s *Set) Check(def *Definition) error {
	cur := s.now()
	var stored []*Definition
	for _, name := range cur.names {
		if d := cur.defs[name]; d.Stored && d.Name != def.Name {
			stored = append(stored, d)
		}
	}
	if _, errs := s.build(s.withStored(append(stored, def))); len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// Skipped are the stored agents Replace left out, with why.
func (s *Set) Skipped() map[string]string {
	return maps.Clone(s.now().skipped)
}

// Stored are the stored agents the set runs, by name.
func (s *Set) Stored() []*Definition {
	cur := s.now()
	var out []*Definition
	for _, name := range cur.names {
		if d := cur.defs[name]; d.Stored {
			out = append(out, d)
		}
	}
	return out
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
	return len(s.now().names)
}

// Names returns the agent names, sorted.
func (s *Set) Names() []string {
	return append([]string(nil), s.now().names...)
}

// Get returns an agent's definition.
func (s *Set) Get(name string) (*Definition, bool) {
	d, ok := s.now().defs[name]
	return d, ok
}

// Graph returns the expanded chain of an agent that declares one.
func (s *Set) Graph(name string) (*Graph, bool) {
	g, ok := s.now().graphs[name]
	return g, ok
}

// Chain returns a copy of the compiled chain of an agent that declares one.
func (s *Set) Chain(name string) (*chain.Chain, bool) {
	c, ok := s.now().chains[name]
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
	idx      *index
	root     *Definition
	maxDepth int
	c        *chain.Chain
	g        *Graph
	errs     []string
	row      int
	overflow bool
}

func (idx *index) compile(root *Definition) (*chain.Chain, *Graph, []string) {
	spec := root.Spec.Chain
	k := &compiler{idx: idx, root: root, maxDepth: spec.MaxDepthOrDefault()}
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
		target, ok := k.idx.defs[r.Agent]
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
			if _, ok := k.idx.defs[pol]; !ok {
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
