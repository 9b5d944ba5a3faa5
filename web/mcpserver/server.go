// Package mcpserver is the studio as an MCP server, the door of /v1/mcp:
// every chain an admin exposed (PUT /v1/chains/{id}/mcp) is a tool of the
// one mcp.Server behind POST/GET/DELETE /v1/mcp (the SDK's streamable HTTP
// transport), and a call is an ordinary run through the run service:
// validated, queued, budgeted, recorded with started_by "mcp" and the
// caller's name, shown on its page.
//
// The tool list is the store's: it is brought up to date before every
// tools/list and tools/call (so a change made by another process is seen
// at the next request) and at once when this process commits a change to
// an exposed chain (httpcore.Changes); each change makes the SDK send
// notifications/tools/list_changed to every session.
//
// What the server holds is bounded: sessions in all and per caller (their
// owners are kept here, so a session is used only by whoever opened it),
// an idle time, request bodies, exposed chains listed.
//
// Package web mounts the handler behind its sign-in and roles; this
// package does not import web.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the MCP server (Config fields override the first three).
const (
	defaultSessions        = 64
	defaultSessionsPerUser = 8
	defaultSessionIdle     = 10 * time.Minute
	// defaultSessionIdleNoStream is the idle time of a session with no
	// request in flight and no stream open: clients that never close
	// their sessions (one-shot CLIs) leave these behind.
	defaultSessionIdleNoStream = time.Minute
	// BodyLimit bounds a request body: a tool call's arguments are a
	// run's input, which a schedule bounds at 64 KiB; 1 MiB leaves room.
	BodyLimit = 1 << 20
	// MaxTools bounds the chains exposed and offered at once: a
	// client's model reads every tool's description and schema. An admin
	// exposing one more is refused (RoomFor).
	MaxTools = 200
	// ToolsPage is how many tools one tools/list answer holds; the
	// rest follow through nextCursor.
	ToolsPage = 100
	// maxToolName is the tool name's length before a "_2" suffix (the
	// MCP limit is 128).
	maxToolName = 64
	// maxElicitations bounds the pauses one call answers by asking its
	// client; beyond, the call answers with the pause.
	maxElicitations = 16
	// pollEvery is how often a call looks at a run executing in another
	// process (a PostgreSQL worker) between watches.
	pollEvery = 250 * time.Millisecond
)

// Config bounds the MCP server; zero values take the defaults.
type Config struct {
	// MaxSessions bounds the open sessions (default 64), MaxSessionsPerUser
	// those one caller opens (default 8), SessionIdle how long one lives
	// with no request (default 10 minutes; a tool call in progress keeps it
	// alive), SessionIdleNoStream how long one lives with no request in
	// flight and no open stream (default 1 minute).
	MaxSessions         int
	MaxSessionsPerUser  int
	SessionIdle         time.Duration
	SessionIdleNoStream time.Duration
	// PublicURL is the studio's address behind a proxy (--public-url): a
	// tool call's answer links the run's page there. Empty: the address
	// the client reached.
	PublicURL string
	// Version is the build's version, the serverInfo.version clients read.
	Version string
	// BodyLimit is the API's request body limit, as the API's error table
	// words a refusal (httpcore.ErrorFor).
	BodyLimit int64
	Logger    *slog.Logger
}

// Store is what the MCP server reads: the exposed chains, a chain's
// published version, a run, its events and its checkpoint log (its pauses).
type Store interface {
	ListMCPChains(ctx context.Context, limit int) ([]store.Chain, bool, error)
	GetPublishedChain(ctx context.Context, id string) (*store.Chain, error)
	GetRun(ctx context.Context, id string) (*store.Run, error)
	GetRunInfo(ctx context.Context, id string) (*store.Run, error)
	httpcore.RunLogs
}

// Runs is the part of the run service (runs.Service) a tool call uses:
// start the chain's run, follow it, answer its pauses, cancel it with the
// call.
type Runs interface {
	StartTriggered(ctx context.Context, ch *store.Chain, input map[string]any, trig runs.Trigger) (string, error)
	Watch(runID string, after int64) (*runs.Watch, error)
	ResumePause(ctx context.Context, runID, pauseID string, value *engine.ResumeValue, modified map[string]any) error
	Cancel(runID string) bool
	// Events reads a run's events after seq after, those still in the
	// event writer's buffer included.
	Events(ctx context.Context, runID string, after int64, limit int, maxBytes int64) ([]engine.Event, error)
}

// Handler is the MCP server of /v1/mcp and the sessions it lets in.
type Handler struct {
	log       *slog.Logger
	db        Store
	runs      Runs
	publicURL string
	bodyLimit int64

	srv     *mcp.Server
	handler *mcp.StreamableHTTPHandler
	max     int
	perUser int
	// quickIdle is how long a session with nothing in flight (no call, no
	// stream) is kept.
	quickIdle time.Duration

	syncMu sync.Mutex // one sync at a time
	synced time.Time  // when the last sync read the store (under syncMu)

	mu       sync.Mutex
	tools    map[string]tool     // tool name → the chain behind it
	sessions map[string]*session // session id → who opened it
	opening  map[string]int      // caller → sessions being opened now
	stopped  bool
}

// tool is one exposed chain as a tool.
type tool struct {
	chainID string
	key     string // chain id and version: a change re-adds the tool
}

// session is who opened a session, read again on each request (a role
// changed since is the one that counts), and where its run pages are; and
// how busy it is, so an idle one can be closed early or given up to its
// caller's next session.
type session struct {
	id   httpcore.Identity
	base string // the studio's URL as the client reached it

	busy  int         // requests in flight, GET streams included
	used  time.Time   // when the last request ended
	timer *time.Timer // closes the session once idle for quickIdle
	gen   int         // counts ends, so a stale timer does nothing
}

// New builds the MCP server over its store and run service. Changes, when
// set, tells it of the chains this process changes, so the tool list
// follows at once.
func New(cfg Config, db Store, rs Runs, changes *httpcore.Changes) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{log: cfg.Logger, db: db, runs: rs, publicURL: cfg.PublicURL, bodyLimit: cfg.BodyLimit,
		max: cfg.MaxSessions, perUser: cfg.MaxSessionsPerUser,
		tools: map[string]tool{}, sessions: map[string]*session{}, opening: map[string]int{}}
	if h.max <= 0 {
		h.max = defaultSessions
	}
	if h.perUser <= 0 {
		h.perUser = defaultSessionsPerUser
	}
	idle := cfg.SessionIdle
	if idle <= 0 {
		idle = defaultSessionIdle
	}
	h.quickIdle = cfg.SessionIdleNoStream
	if h.quickIdle <= 0 {
		h.quickIdle = defaultSessionIdleNoStream
	}
	h.quickIdle = min(h.quickIdle, idle)
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "chain-studio", Title: "Chain Studio", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: "Each tool runs one chain of this Chain Studio and answers with the run's final output, its id and its page.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		PageSize:     ToolsPage,
	})
	h.srv.AddReceivingMiddleware(h.syncFirst)
	h.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      idle,
		MaxRequestBodyBytes: BodyLimit,
		// The studio's own Host check (hostPolicy, 421) runs before this
		// handler and knows --public-url; the SDK's would refuse a proxy's
		// public name on a loopback listener.
		DisableLocalhostProtection: true,
		Logger:                     cfg.Logger,
	})
	if changes != nil {
		changes.Subscribe(h.chainChanged)
	}
	return h
}

// errorFor words an error as the API's table does.
func (h *Handler) errorFor(err error) *httpcore.APIError { return httpcore.ErrorFor(err, h.bodyLimit) }

// calls a tool. A store that does not answer leaves the last list.
func (h *Handler) syncFirst(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" || method == "tools/call" {
			if err := h.syncWithin(ctx, SyncEvery); err != nil {
				h.log.Warn("mcp: reading the exposed chains failed; serving the last tool list", "err", err)
			}
		}
		return next(ctx, method, req)
	}
}

// SyncEvery is how stale the tool list may be when a client lists or
// calls tools: a client calling in a loop reads the store (up to
// MaxTools chains with their documents) once a second, not per call.
// Changes made through this process sync at once (chainChanged); those
// made through another process of a cluster show within this time.
const SyncEvery = time.Second

// syncWithin syncs unless the last sync is younger than age.
func (h *Handler) syncWithin(ctx context.Context, age time.Duration) error {
	h.syncMu.Lock()
	fresh := !h.synced.IsZero() && time.Since(h.synced) < age
	h.syncMu.Unlock()
	if fresh {
		return nil
	}
	return h.sync(ctx)
}

// sync makes the server's tools the exposed chains: a tool per chain, added
// again when its chain changed (name, description, sample), removed when
// the chain is no longer exposed or deleted.
func (h *Handler) sync(ctx context.Context) error {
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	started := time.Now()
	chains, more, err := h.db.ListMCPChains(ctx, MaxTools)
	if err != nil {
		return fmt.Errorf("mcp: list exposed chains: %w", err)
	}
	if more {
		// Only exposures made at once through several processes get here
		// (RoomFor refuses one past the bound).
		h.log.Warn("mcp: more chains are exposed than the server offers; stop exposing some", "offered", MaxTools)
	}
	names := toolNames(chains)
	want := make(map[string]tool, len(chains))
	h.mu.Lock()
	cur := h.tools
	h.mu.Unlock()
	var add []*mcp.Tool
	for i := range chains {
		ch := &chains[i]
		t := tool{chainID: ch.ID, key: fmt.Sprintf("%s@%d", ch.ID, ch.Version)}
		want[names[i]] = t
		if cur[names[i]] != t {
			add = append(add, toolOf(ch, names[i]))
		}
	}
	var gone []string
	for name := range cur {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	h.mu.Lock()
	h.tools = want
	h.mu.Unlock()
	if len(gone) > 0 {
		h.srv.RemoveTools(gone...)
	}
	for _, t := range add {
		h.srv.AddTool(t, h.callTool)
	}
	h.synced = started
	return nil
}

// toolNames names each chain's tool: the chain's name with every run of
// characters MCP does not allow in a tool name (only A-Z a-z 0-9 _ - .) made
// one "_", cut to 64 bytes, "chain" when nothing is left; a name already
// taken (chains are listed by name, then id, so the order is stable) gets
// "_2", "_3", …
func toolNames(chains []store.Chain) []string {
	out := make([]string, len(chains))
	used := make(map[string]bool, len(chains))
	for i := range chains {
		base := toolName(chains[i].Name)
		name := base
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s_%d", base, n)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

func toolName(chain string) string {
	var b strings.Builder
	under := false
	for _, r := range chain {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		switch {
		case ok:
			b.WriteRune(r)
			under = false
		case !under && b.Len() > 0:
			b.WriteByte('_')
			under = true
		}
		if b.Len() >= maxToolName {
			break
		}
	}
	name := strings.TrimRight(b.String(), "_")
	if len(name) > maxToolName {
		name = strings.TrimRight(name[:maxToolName], "_")
	}
	if name == "" {
		return "chain"
	}
	return name
}

// toolOf describes a chain as a tool: its description (else a sentence
// naming it) and an input schema.
func toolOf(ch *store.Chain, name string) *mcp.Tool {
	desc := strings.TrimSpace(ch.Description)
	if desc == "" {
		desc = fmt.Sprintf("Runs the chain %q of Chain Studio.", ch.Name)
	}
	var sample map[string]any
	if ch.Doc != nil {
		sample = ch.Doc.SampleInput
	}
	return &mcp.Tool{Name: name, Title: ch.Name, Description: desc, InputSchema: inputSchema(sample)}
}

// maxSchemaExample bounds the sample input a schema carries as its example.
const maxSchemaExample = 4 << 10

// inputSchema is a tool's input schema. A chain document declares no
// schema of its run input (nodes read it by expression), so it is inferred
// from the chain's sample_input: each key a property of the type its
// sample value has (nested objects too), none required (a sample shows
// one input, it does not say which keys a run needs), the sample as the
// example when small. Without a sample: any object.
func inputSchema(sample map[string]any) map[string]any {
	if len(sample) == 0 {
		return map[string]any{"type": "object"}
	}
	s := schemaOfValue(sample, 0)
	if b, err := json.Marshal(sample); err == nil && len(b) <= maxSchemaExample {
		s["examples"] = []any{sample}
	}
	return s
}

// schemaOfValue is the JSON Schema type of a sample value, nested at most
// 8 deep (below, any value).
func schemaOfValue(v any, depth int) map[string]any {
	if depth > 8 {
		return map[string]any{}
	}
	switch x := v.(type) {
	case map[string]any:
		props := make(map[string]any, len(x))
		for k, e := range x {
			props[k] = schemaOfValue(e, depth+1)
		}
		return map[string]any{"type": "object", "properties": props}
	case []any:
		s := map[string]any{"type": "array"}
		if len(x) > 0 {
			s["items"] = schemaOfValue(x[0], depth+1)
		}
		return s
	case string:
		return map[string]any{"type": "string"}
	case bool:
		return map[string]any{"type": "boolean"}
	case float64:
		if x == float64(int64(x)) {
			return map[string]any{"type": "integer"}
		}
		return map[string]any{"type": "number"}
	case int, int64, json.Number:
		return map[string]any{"type": "number"}
	}
	return map[string]any{} // null: any value
}

// chainChanged brings the tools up to date after this process committed a
// change to a chain that has or had a tool, so sessions hear list_changed
// at once: a deletion (its tool, if it had one, goes), a new exposure
// setting, a publish of an exposed chain (its tool now runs and describes
// that version).
func (h *Handler) chainChanged(ctx context.Context, ch httpcore.ChainChange) {
	if ch.Kind == httpcore.ChainPublished && !ch.MCPExposed {
		return
	}
	if err := h.sync(ctx); err != nil {
		h.log.Warn("mcp: updating the tool list failed; the next tools/list will", "err", err)
	}
}

// RoomFor refuses to expose one more chain when MaxTools are exposed
// already (409 too_many_mcp_tools): clients would not be offered it. A
// chain exposed already may be exposed again.
func (h *Handler) RoomFor(ctx context.Context, id string) error {
	chains, more, err := h.db.ListMCPChains(ctx, MaxTools)
	if err != nil {
		return fmt.Errorf("count the exposed chains: %w", err)
	}
	if len(chains) < MaxTools && !more {
		return nil
	}
	for i := range chains {
		if chains[i].ID == id {
			return nil
		}
	}
	return httpcore.Error(httpcore.ECONFLICT, "too_many_mcp_tools",
		fmt.Sprintf("%d chains are exposed as MCP tools, the limit (a client's model reads every tool); stop exposing one first", MaxTools),
		map[string]any{"limit": MaxTools})
}
