// Package doccache keeps decoded chain documents for the store backends.
package doccache

import (
	"container/list"
	"sync"

	"github.com/chainstudio/studio/engine/chain"
)

// Cache keeps decoded chain documents by (chain id, version). Versions are
// immutable, so an entry never goes stale; decoding a large document with
// encoding/json costs far more than copying it. Callers always get a deep
// copy they may modify.
type Cache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List // front = most recently used
	items map[docKey]*list.Element
}

type docKey struct {
	id string
	v  int
}

type docEntry struct {
	key docKey
	doc *chain.Chain
}

// New returns a cache of at most max documents; max ≤ 0 caches nothing.
func New(max int) *Cache {
	return &Cache{max: max, ll: list.New(), items: map[docKey]*list.Element{}}
}

// Get returns a copy of the cached document, or nil.
func (c *Cache) Get(id string, v int) *chain.Chain {
	if c == nil || c.max <= 0 {
		return nil
	}
	c.mu.Lock()
	el, ok := c.items[docKey{id, v}]
	if ok {
		c.ll.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return nil
	}
	return Clone(el.Value.(*docEntry).doc)
}

// Put stores a copy of doc.
func (c *Cache) Put(id string, v int, doc *chain.Chain) {
	if c == nil || c.max <= 0 || doc == nil {
		return
	}
	cp := Clone(doc)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := docKey{id, v}
	if el, ok := c.items[k]; ok {
		c.ll.MoveToFront(el)
		return
	}
	c.items[k] = c.ll.PushFront(&docEntry{key: k, doc: cp})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*docEntry).key)
	}
}

// Clone deep-copies a chain document. Values inside maps and slices are
// JSON values (what decoding produces), copied recursively.
func Clone(c *chain.Chain) *chain.Chain {
	out := *c
	if c.Nodes != nil {
		out.Nodes = make([]chain.Node, len(c.Nodes))
		for i := range c.Nodes {
			out.Nodes[i] = cloneNode(&c.Nodes[i])
		}
	}
	if c.Edges != nil {
		out.Edges = append([]chain.Edge(nil), c.Edges...)
	}
	return &out
}

func cloneNode(n *chain.Node) chain.Node {
	out := *n
	out.Input = cloneMap(n.Input)
	out.Config = cloneMap(n.Config)
	out.InputMap = cloneStrMap(n.InputMap)
	out.SetState = cloneStrMap(n.SetState)
	if n.Retry != nil {
		r := *n.Retry
		out.Retry = &r
	}
	if n.Reachable != nil {
		b := *n.Reachable
		out.Reachable = &b
	}
	if n.Position != nil {
		p := *n.Position
		out.Position = &p
	}
	if n.Cases != nil {
		out.Cases = append([]chain.Case(nil), n.Cases...)
	}
	if n.Branches != nil {
		out.Branches = append([]string(nil), n.Branches...)
	}
	return out
}

func cloneStrMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}
