package httpcore

import (
	"context"
	"sync"
)

// A handler that commits a change other doors react to (the MCP server's
// tool list follows the exposed chains) announces it once, after the store
// committed it, through Changes; the doors that care subscribe. The
// handler does not know who listens, and a new listener needs no edit of
// the handlers that change chains.

// ChangeKind says what happened to a chain.
type ChangeKind string

const (
	ChainDeleted   ChangeKind = "deleted"   // soft-deleted: it runs no more
	ChainPublished ChangeKind = "published" // a version became the one runs by name use
	ChainExposure  ChangeKind = "exposure"  // offered as an MCP tool, or no longer
)

// ChainChange is one committed change to a chain.
type ChainChange struct {
	ChainID string
	Kind    ChangeKind
	// MCPExposed: the chain is offered as an MCP tool after the change
	// (false for a deletion, which the store no longer answers for).
	MCPExposed bool
}

// Changes is a small publish/subscribe of committed changes. Subscribers
// run in the publisher's goroutine, in the order they subscribed, before
// Publish returns: what they do (list_changed to MCP sessions) happens
// before the handler answers. A subscriber must not block for long; it
// logs its own failures (the change is committed either way). The zero
// value is ready; a nil *Changes publishes to no one.
type Changes struct {
	mu   sync.RWMutex
	subs []func(context.Context, ChainChange)
}

// Subscribe adds f to those told of every change from now on.
func (n *Changes) Subscribe(f func(context.Context, ChainChange)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.subs = append(n.subs, f)
}

// Publish tells every subscriber of ch.
func (n *Changes) Publish(ctx context.Context, ch ChainChange) {
	if n == nil {
		return
	}
	n.mu.RLock()
	subs := n.subs
	n.mu.RUnlock()
	for _, f := range subs {
		f(ctx, ch)
	}
}
