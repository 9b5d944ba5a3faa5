// Package ops is what the studio's doors share: the dependencies every
// handler runs on (Env) and the operations the JSON API and the pages both
// perform — each record change, check and shared read written once, so a
// page and an API call that do the same thing do it through the same
// function. It knows HTTP only through httpcore's error table and echo's
// request context; routes, rendering and encoding are the doors'.
package ops

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/agent"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/internal/mcphost"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/store/vault"
	"github.com/chainstudio/studio/web/httpcore"
)

// Store is the part of a storage backend (store.Backend) the doors read
// and write: chains and their versions, runs and their events, checkpoint
// logs (a run's chain, its node results), the interrupts inbox, triggers,
// users and sessions, agents' conversations, model Usage, and the
// readiness ping. Leases,
// housekeeping and the sealed credentials are the run service's, the
// host's and the vault's.
type Store interface {
	store.ChainStore
	store.RunStore
	store.EventStore
	store.CheckpointStore
	store.InterruptStore
	store.TriggerStore
	store.UserStore
	store.MCPServerStore
	store.AgentStore
	store.ConversationStore
	RunUsage(ctx context.Context, runID string) ([]store.ModelCall, error)
	Usage(ctx context.Context, f store.UsageFilter) ([]store.UsageRow, error)
	Ping(ctx context.Context) error
}

// ChainTemplate is a chain to start from, decoded once at start.
type ChainTemplate struct {
	ID  string
	Doc *chain.Chain
}

// Env is what every door's handlers run on, built once by web.New.
type Env struct {
	DB       Store
	Registry *engine.Registry // the tools chains are validated against
	Runs     *runs.Service    // every run starts, steers and is watched through it
	Log      *slog.Logger
	Limits   chain.Limits
	// BodyLimit is the request body limit in bytes.
	BodyLimit int64
	// Templates are the chains "New chain…" and /v1/templates offer.
	Templates []ChainTemplate
	Agents    *agent.Set      // loaded agents; nil when the host loaded none
	Prices    *pricing.Prices // nil: no price table
	Vault     *vault.Vault    // nil: no credentials
	MCP       *mcphost.Host   // the MCP servers the studio connects to; nil: none
	// ModelHTTP lists agents' models, each list within ModelListWait.
	ModelHTTP     *http.Client
	ModelListWait time.Duration
	Providers     llm.Kinds // the model provider kinds the host offers
	// Changes carries committed chain changes to the doors that list
	// chains (the MCP server's tools/list_changed).
	Changes *httpcore.Changes
	// Scheduler hears that a schedule was saved; nil: none.
	Scheduler interface{ Wake() }
	// UsersChanged is called after a user is added, removed or changes
	// role, so that whether the studio is open is asked again.
	UsersChanged func()
	// ModelAllowPrivate: model calls may reach private addresses, so the
	// credentials page does not warn of them.
	ModelAllowPrivate bool
	// ViewersSeeCredentialed: viewers and approvers see credentialed
	// calls' outputs.
	ViewersSeeCredentialed bool
}
