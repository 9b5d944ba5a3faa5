// Package mcphost keeps the studio's connections to the MCP servers its store
// registers, in step with the records, and offers their tools to the engine
// as a tool source (mcp:<server>/<tool>). Each server has its own
// engine/mcp Manager, so changing one server never reconnects the others. A
// server's credential is resolved when the studio connects to it; the
// records are read again every Options.Poll so that every process of a
// cluster (servers and workers) follows the same registrations.
package mcphost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/builtin"
	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/mcp"
	"github.com/chainstudio/studio/engine/tool"
	"github.com/chainstudio/studio/store"
)

// DefaultPoll is how often the records are read again.
const DefaultPoll = 10 * time.Second

// StateDisabled is the state of a registered server that is switched off.
const StateDisabled = "disabled"

// Options configure a Host.
type Options struct {
	Store store.MCPServerStore
	// Credentials resolves the credential a server names. Every chain may
	// call a server's tools, so the host resolves as a chain that is not
	// saved would (vault.ForChain("")): only credentials open to every
	// chain can authenticate a server. nil: servers naming one are
	// unavailable.
	Credentials tool.Credentials
	// AllowPrivate lets http and sse servers be at loopback and private
	// addresses (--mcp-allow-private).
	AllowPrivate bool
	// HTTPClient carries http and sse servers' requests; nil: behind the
	// address guard, builtin.MCPHTTPClient(AllowPrivate). Tests give one
	// that cannot connect anywhere else.
	HTTPClient *http.Client
	// AllowCommand lists the programs stdio servers may run (the
	// --allow-mcp-command values: bare names or absolute paths).
	AllowCommand []string
	// RefuseEnv refuses variables a stdio program may not get
	// (builtin.LoaderEnv).
	RefuseEnv func(name string) string
	// Limits are the engine/mcp limits (zero: its defaults).
	Limits mcp.Options
	Poll   time.Duration // default DefaultPoll; negative: never (tests)
	Logger *slog.Logger
}

// Status is one registered server as the admin pages show it.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Enabled   bool   `json:"enabled"`
	// State is disabled, connecting, available or unavailable.
	State       string            `json:"state"`
	Reason      string            `json:"reason,omitempty"`
	Since       time.Time         `json:"since"`
	Tools       int               `json:"tools"`
	Dropped     []mcp.DroppedTool `json:"dropped,omitempty"`
	DroppedMore int               `json:"dropped_more,omitempty"`
	ServerInfo  string            `json:"server_info,omitempty"`
}

// Host is the set of registered servers and their connections.
type Host struct {
	opts  Options
	allow map[string]bool // resolved allow-list

	reload sync.Mutex // one Reload at a time
	mu     sync.Mutex
	byName map[string]*entry
	closed bool

	stop chan struct{}
	done chan struct{}
}

// entry is one registered server and its connection.
type entry struct {
	rec   store.MCPServer
	fp    string       // the configuration connected with, resolved headers included
	mgr   *mcp.Manager // nil when disabled or refused
	err   string       // why this host could not connect to it at all
	since time.Time

	mu     sync.Mutex
	snap   *snapshot
	snapCh <-chan struct{} // closed when snap is stale
}

type snapshot struct {
	status mcp.ServerStatus
	tools  map[string]engine.SourcedTool
	list   []engine.SourcedTool
}

// New reads the registered servers, starts connecting to them (without
// waiting) and re-reads them every Poll until Close.
func New(ctx context.Context, opts Options) (*Host, error) {
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = builtin.MCPHTTPClient(opts.AllowPrivate)
	}
	h := &Host{opts: opts, allow: map[string]bool{}, byName: map[string]*entry{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, name := range opts.AllowCommand {
		p, err := mcp.ResolveCommand(name)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", mcp.AllowCommandFlag, name, err)
		}
		h.allow[p] = true
	}
	if err := h.Reload(ctx); err != nil {
		return nil, err
	}
	go h.poll()
	return h, nil
}

func (h *Host) poll() {
	defer close(h.done)
	if h.opts.Poll < 0 {
		<-h.stop
		return
	}
	t := time.NewTicker(h.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), h.opts.Poll)
			if err := h.Reload(ctx); err != nil {
				h.opts.Logger.Warn("mcp: could not read the registered servers", "err", err)
			}
			cancel()
		}
	}
}

// Close ends every connection (stdio programs are killed).
func (h *Host) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	entries := h.byName
	h.byName = map[string]*entry{}
	h.mu.Unlock()
	<-h.done
	for _, e := range entries {
		if e.mgr != nil {
			e.mgr.Close()
		}
	}
}

func (h *Host) mcpOptions() mcp.Options {
	o := h.opts.Limits
	o.HTTPClient = h.opts.HTTPClient
	o.AllowCommand = func(p string) bool { return h.allow[p] }
	o.RefuseEnv = h.opts.RefuseEnv
	o.Logger = h.opts.Logger
	return o
}

// Check reports what stops a server's record from being used by this host:
// its shape (store.CheckMCPServer) and the host's policy (a stdio program
// not on the allow-list). Nothing runs and nothing connects. The web layer
// calls it before a record is stored.
func (h *Host) Check(rec *store.MCPServer) error {
	if err := store.CheckMCPServer(rec); err != nil {
		return err
	}
	cfg := toServer(rec)
	if rec.Credential != "" { // stand-in header: the value is resolved at connect time
		cfg.Headers = map[string]string{"X-Credential-Check": "x"}
	}
	if err := cfg.Check(h.mcpOptions()); err != nil {
		return store.Errorf(store.EINVALID, "%v", err)
	}
	return nil
}

func toServer(rec *store.MCPServer) mcp.Server {
	s := mcp.Server{Name: rec.Name, Transport: rec.Transport, URL: rec.URL, Command: rec.Command, Args: rec.Args, Env: rec.Env}
	if len(rec.Headers) > 0 {
		s.Headers = make(map[string]string, len(rec.Headers))
		for k, v := range rec.Headers {
			s.Headers[k] = v
		}
	}
	return s
}

// URLRefused says why this host will refuse to connect to an http or sse
// server at raw (a loopback or private address without AllowPrivate),
// naming the flag that opens it; "" when it will not, or cannot be told
// without a lookup. The admin pages show it as a URL is typed.
func (h *Host) URLRefused(raw string) string {
	if h.opts.AllowPrivate {
		return ""
	}
	return builtin.MCPURLRefused(raw)
}

// Reload reads the records and makes the connections match them: a new or
// changed server (its credential's values included) is connected afresh, a
// removed one is closed, the others are left alone.
func (h *Host) Reload(ctx context.Context) error {
	h.reload.Lock()
	defer h.reload.Unlock()
	recs, err := h.opts.Store.ListMCPServers(ctx)
	if err != nil {
		return fmt.Errorf("mcp: read the registered servers: %w", err)
	}
	next := map[string]*entry{}
	var closeOld []*mcp.Manager
	h.mu.Lock()
	old := h.byName
	h.mu.Unlock()
	for _, rec := range recs {
		e := h.prepare(ctx, rec)
		if prev := old[rec.Name]; prev != nil && prev.fp == e.fp && prev.err == "" && e.err == "" && prev.rec.Enabled == e.rec.Enabled {
			prev.rec = rec // who and when may have changed
			next[rec.Name] = prev
			continue
		}
		if prev := old[rec.Name]; prev != nil && prev.mgr != nil {
			closeOld = append(closeOld, prev.mgr)
		}
		if e.err == "" && rec.Enabled {
			cfg := e.cfg
			mgr, err := mcp.NewManager([]mcp.Server{cfg}, h.mcpOptions())
			if err != nil {
				e.err = err.Error()
			} else {
				e.mgr = mgr
				h.opts.Logger.Info("mcp: connecting", "server", rec.Name, "transport", rec.Transport)
			}
		}
		next[rec.Name] = e.entry
	}
	for name, prev := range old {
		if next[name] == nil && prev.mgr != nil {
			closeOld = append(closeOld, prev.mgr)
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		for _, e := range next {
			if e.mgr != nil && old[e.rec.Name] != e {
				e.mgr.Close()
			}
		}
		return nil
	}
	h.byName = next
	h.mu.Unlock()
	for _, m := range closeOld {
		m.Close()
	}
	return nil
}

type prepared struct {
	*entry
	cfg mcp.Server
}

// prepare builds a server's configuration with its credential resolved,
// and the fingerprint that tells whether it changed.
func (h *Host) prepare(ctx context.Context, rec store.MCPServer) prepared {
	e := &entry{rec: rec, since: time.Now()}
	cfg := toServer(&rec)
	if rec.Enabled && rec.Credential != "" {
		if err := h.applyCredential(ctx, &cfg, rec.Credential); err != nil {
			e.err = err.Error()
		}
	}
	b, _ := json.Marshal(struct {
		C mcp.Server
		E bool
	}{cfg, rec.Enabled})
	sum := sha256.Sum256(b) // the fingerprint holds no secret in clear
	e.fp = hex.EncodeToString(sum[:])
	return prepared{entry: e, cfg: cfg}
}

// applyCredential adds what the credential sends to cfg: a header, or for
// an API key in a query parameter, the URL's query.
func (h *Host) applyCredential(ctx context.Context, cfg *mcp.Server, name string) error {
	if h.opts.Credentials == nil {
		return fmt.Errorf("credential %q: %w", name, tool.ErrNoCredentials)
	}
	sec, err := h.opts.Credentials.Credential(ctx, name)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if typ, ok := credential.Lookup(sec.Type); ok && typ.Use == credential.UseHTTP {
		if err := sec.Allows(u); err != nil { // refused before connecting
			return err
		}
	}
	cfg.Allow = sec.Allows
	v := credential.Values(sec.Values)
	if cfg.Headers == nil {
		cfg.Headers = map[string]string{}
	}
	switch sec.Type {
	case credential.Bearer:
		cfg.Headers["Authorization"] = "Bearer " + v.String("token")
	case credential.Basic:
		req := &http.Request{Header: http.Header{}}
		req.SetBasicAuth(v.String("username"), v.String("password"))
		cfg.Headers["Authorization"] = req.Header.Get("Authorization")
	case credential.APIKey:
		if v.String("in") == "query" {
			u, err := url.Parse(cfg.URL)
			if err != nil {
				return fmt.Errorf("url: %w", err)
			}
			q := u.Query()
			q.Set(v.String("name"), v.String("value"))
			u.RawQuery = q.Encode()
			cfg.URL = u.String()
			return nil
		}
		cfg.Headers[v.String("name")] = v.String("value")
	case credential.Headers:
		for k, hv := range v.Map("headers") {
			cfg.Headers[k] = hv
		}
	default:
		return fmt.Errorf("credential %q is of type %s, which an MCP server's requests cannot carry (use %s)", name, sec.Type, strings.Join(credential.TypesFor(credential.UseHTTP), ", "))
	}
	return nil
}

// snapshot returns the server's catalog as last known, converted once per
// change of the manager's catalog.
func (e *entry) snapshotOf() *snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.snap != nil {
		select {
		case <-e.snapCh:
		default:
			return e.snap
		}
	}
	ch := e.mgr.Changed() // taken before reading: a change after it is seen next time
	cat := e.mgr.Tools()
	s := &snapshot{tools: map[string]engine.SourcedTool{}}
	if len(cat.Servers) > 0 {
		s.status = cat.Servers[0]
	}
	for _, t := range cat.Tools {
		st := engine.SourcedTool{Name: t.ID, Description: t.Description}
		if st.Description == "" {
			st.Description = t.Title
		}
		st.InputSchema = decodeSchema(t.InputSchema)
		st.OutputSchema = decodeSchema(t.OutputSchema)
		s.tools[t.ID] = st
		s.list = append(s.list, st)
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].Name < s.list[j].Name })
	e.snap, e.snapCh = s, ch
	return s
}

func decodeSchema(raw json.RawMessage) map[string]any {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// status is the entry's Status now.
func (e *entry) status() Status {
	st := Status{Name: e.rec.Name, Transport: e.rec.Transport, Enabled: e.rec.Enabled, Since: e.since}
	switch {
	case !e.rec.Enabled:
		st.State = StateDisabled
	case e.err != "":
		st.State, st.Reason = mcp.StateUnavailable, e.err
	default:
		s := e.snapshotOf().status
		st.Transport, st.State, st.Reason, st.Since = s.Transport, s.State, s.Reason, s.Since
		st.Tools, st.Dropped, st.DroppedMore, st.ServerInfo = s.Tools, s.Dropped, s.DroppedMore, s.ServerInfo
	}
	return st
}

// unavailable says why the entry's tools cannot be called now ("" when
// they can).
func (e *entry) unavailable(st Status) string {
	switch st.State {
	case mcp.StateAvailable:
		return ""
	case StateDisabled:
		return fmt.Sprintf("MCP server %q is disabled", e.rec.Name)
	case mcp.StateConnecting:
		return fmt.Sprintf("MCP server %q is still connecting", e.rec.Name)
	}
	return fmt.Sprintf("MCP server %q is unavailable: %s", e.rec.Name, st.Reason)
}

func (h *Host) entry(name string) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byName[name]
}

func (h *Host) entries() []*entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*entry, 0, len(h.byName))
	for _, e := range h.byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.Name < out[j].rec.Name })
	return out
}

// Statuses lists every registered server's status, by name.
func (h *Host) Statuses() []Status {
	es := h.entries()
	out := make([]Status, len(es))
	for i, e := range es {
		out[i] = e.status()
	}
	return out
}

// StatusOf is one server's status (ok false: not registered, or not read
// yet by this process).
func (h *Host) StatusOf(name string) (Status, bool) {
	e := h.entry(name)
	if e == nil {
		return Status{}, false
	}
	return e.status(), true
}

// Tool implements engine.ToolSource: a tool of a registered server that
// cannot be reached now is known, with the reason.
func (h *Host) Tool(name string) (engine.SourcedTool, bool) {
	server, _, ok := mcp.ParseToolID(name)
	if !ok {
		return engine.SourcedTool{}, false
	}
	e := h.entry(server)
	if e == nil {
		return engine.SourcedTool{}, false
	}
	st := e.status()
	why := e.unavailable(st)
	var t engine.SourcedTool
	var listed bool
	if e.mgr != nil {
		t, listed = e.snapshotOf().tools[name]
	}
	if why == "" && !listed {
		return engine.SourcedTool{}, false // the server is up and lists no such tool
	}
	t.Name, t.Unavailable = name, why
	return t, true
}

// Tools implements engine.ToolSource: the tools last listed by every
// enabled server, those of a server that is down marked with the reason.
func (h *Host) Tools() []engine.SourcedTool {
	var out []engine.SourcedTool
	for _, e := range h.entries() {
		if e.mgr == nil {
			continue
		}
		why := e.unavailable(e.status())
		for _, t := range e.snapshotOf().list {
			t.Unavailable = why
			out = append(out, t)
		}
	}
	return out
}

// Call implements engine.ToolSource: the node's input is the tool's
// arguments, its output the mcp.Result's Value; the server's progress
// notifications become the node's progress events.
func (h *Host) Call(ctx context.Context, name string, input map[string]any, emit tool.Emitter) (any, error) {
	t, ok := h.Tool(name)
	if !ok {
		return nil, fmt.Errorf("%s: no registered MCP server lists this tool", name)
	}
	if t.Unavailable != "" {
		return nil, fmt.Errorf("%s: %s", name, t.Unavailable)
	}
	server, _, _ := mcp.ParseToolID(name)
	e := h.entry(server)
	if e == nil || e.mgr == nil {
		return nil, fmt.Errorf("%s: MCP server %q was removed", name, server)
	}
	if emit != nil {
		ctx = mcp.WithProgress(ctx, func(p mcp.Progress) {
			ev := map[string]any{"progress": p.Progress}
			if p.Total > 0 {
				ev["total"] = p.Total
			}
			if p.Message != "" {
				ev["message"] = p.Message
			}
			emit(ev)
		})
	}
	res, err := e.mgr.Call(ctx, name, input)
	if err != nil {
		return nil, err // a ToolError carries the server's message; ctx's end is wrapped as is
	}
	return res.Value(), nil
}

// Refresh makes a server list its tools again now (or retry at once).
func (h *Host) Refresh(name string) {
	if e := h.entry(name); e != nil && e.mgr != nil {
		e.mgr.Refresh(name)
	}
}

// Allowed lists the programs stdio servers may run here, as resolved.
func (h *Host) Allowed() []string {
	out := make([]string, 0, len(h.allow))
	for p := range h.allow {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
