package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The studio as an MCP server: every chain an admin exposed
// (PUT /v1/chains/{id}/mcp) is a tool of the one mcp.Server behind
// POST/GET/DELETE /v1/mcp (the SDK's streamable HTTP transport), and a call
// is an ordinary run through runs.Service: validated, queued, budgeted,
// recorded with started_by "mcp" and the caller's name, shown on its page.
//
// The tool list is the store's: it is brought up to date before every
// tools/list and tools/call (so a change made by another process is seen
// at the next request) and at once when this process changes an exposure;
// each change makes the SDK send notifications/tools/list_changed to every
// session.
//
// What the server holds is bounded: sessions in all and per caller (their
// owners are kept here, so a session is used only by whoever opened it),
// an idle time, request bodies, exposed chains listed.

// Bounds of the MCP server (Config fields override the first three).
const (
	defaultMCPSessions        = 64
	defaultMCPSessionsPerUser = 8
	defaultMCPSessionIdle     = 10 * time.Minute
	// mcpBodyLimit bounds a request body: a tool call's arguments are a
	// run's input, which a schedule bounds at 64 KiB; 1 MiB leaves room.
	mcpBodyLimit = 1 << 20
	// maxMCPTools bounds the chains offered at once: a client's model
	// reads every tool's description and schema.
	maxMCPTools = 200
	// maxMCPToolName is the tool name's length before a "_2" suffix (the
	// MCP limit is 128).
	maxMCPToolName = 64
	// maxMCPElicitations bounds the pauses one call answers by asking its
	// client; beyond, the call answers with the pause.
	maxMCPElicitations = 16
	// mcpPollEvery is how often a call looks at a run executing in another
	// process (a PostgreSQL worker) between watches.
	mcpPollEvery = 250 * time.Millisecond
)

// mcpHub is the server's MCP server and the sessions it lets in.
type mcpHub struct {
	s       *Server
	srv     *mcp.Server
	handler *mcp.StreamableHTTPHandler
	max     int
	perUser int

	syncMu sync.Mutex // one sync at a time
	synced time.Time  // when the last sync read the store (under syncMu)

	mu       sync.Mutex
	tools    map[string]mcpTool     // tool name → the chain behind it
	sessions map[string]*mcpSession // session id → who opened it
	opening  map[string]int         // caller → sessions being opened now
	stopped  bool
}

// mcpTool is one exposed chain as a tool.
type mcpTool struct {
	chainID string
	key     string // chain id and version: a change re-adds the tool
}

// mcpSession is who opened a session, read again on each request (a role
// changed since is the one that counts), and where its run pages are.
type mcpSession struct {
	id   Identity
	base string // the studio's URL as the client reached it
}

func newMCPHub(s *Server) *mcpHub {
	h := &mcpHub{s: s, max: s.cfg.MCPMaxSessions, perUser: s.cfg.MCPMaxSessionsPerUser,
		tools: map[string]mcpTool{}, sessions: map[string]*mcpSession{}, opening: map[string]int{}}
	if h.max <= 0 {
		h.max = defaultMCPSessions
	}
	if h.perUser <= 0 {
		h.perUser = defaultMCPSessionsPerUser
	}
	idle := s.cfg.MCPSessionIdle
	if idle <= 0 {
		idle = defaultMCPSessionIdle
	}
	h.srv = mcp.NewServer(&mcp.Implementation{Name: "chain-studio", Title: "Chain Studio"}, &mcp.ServerOptions{
		Instructions: "Each tool runs one chain of this Chain Studio and answers with the run's final output, its id and its page.",
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	h.srv.AddReceivingMiddleware(h.syncFirst)
	h.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      idle,
		MaxRequestBodyBytes: mcpBodyLimit,
		// The studio's own Host check (hostPolicy, 421) runs before this
		// handler and knows --public-url; the SDK's would refuse a proxy's
		// public name on a loopback listener.
		DisableLocalhostProtection: true,
		Logger:                     s.log,
	})
	return h
}

// syncFirst brings the tool list up to date before a client reads it or
// calls a tool. A store that does not answer leaves the last list.
func (h *mcpHub) syncFirst(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" || method == "tools/call" {
			if err := h.syncWithin(ctx, mcpSyncEvery); err != nil {
				h.s.log.Warn("mcp: reading the exposed chains failed; serving the last tool list", "err", err)
			}
		}
		return next(ctx, method, req)
	}
}

// mcpSyncEvery is how stale the tool list may be when a client lists or
// calls tools: a client calling in a loop reads the store (up to
// maxMCPTools chains with their documents) once a second, not per call.
// Changes made through this process sync at once (exposureChanged); those
// made through another process of a cluster show within this time.
const mcpSyncEvery = time.Second

// syncWithin syncs unless the last sync is younger than age.
func (h *mcpHub) syncWithin(ctx context.Context, age time.Duration) error {
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
func (h *mcpHub) sync(ctx context.Context) error {
	h.syncMu.Lock()
	defer h.syncMu.Unlock()
	started := time.Now()
	chains, more, err := h.s.db.ListMCPChains(ctx, maxMCPTools)
	if err != nil {
		return fmt.Errorf("mcp: list exposed chains: %w", err)
	}
	if more {
		h.s.log.Warn("mcp: more chains are exposed than the server offers", "offered", maxMCPTools)
	}
	names := mcpToolNames(chains)
	want := make(map[string]mcpTool, len(chains))
	h.mu.Lock()
	cur := h.tools
	h.mu.Unlock()
	var add []*mcp.Tool
	for i := range chains {
		ch := &chains[i]
		t := mcpTool{chainID: ch.ID, key: fmt.Sprintf("%s@%d", ch.ID, ch.Version)}
		want[names[i]] = t
		if cur[names[i]] != t {
			add = append(add, mcpToolOf(ch, names[i]))
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
		h.srv.AddTool(t, h.call)
	}
	h.synced = started
	return nil
}

// mcpToolNames names each chain's tool: the chain's name with every run of
// characters MCP does not allow in a tool name (only A-Z a-z 0-9 _ - .) made
// one "_", cut to 64 bytes, "chain" when nothing is left; a name already
// taken (chains are listed by name, then id, so the order is stable) gets
// "_2", "_3", …
func mcpToolNames(chains []store.Chain) []string {
	out := make([]string, len(chains))
	used := make(map[string]bool, len(chains))
	for i := range chains {
		base := mcpToolName(chains[i].Name)
		name := base
		for n := 2; used[name]; n++ {
			name = fmt.Sprintf("%s_%d", base, n)
		}
		used[name] = true
		out[i] = name
	}
	return out
}

func mcpToolName(chain string) string {
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
		if b.Len() >= maxMCPToolName {
			break
		}
	}
	name := strings.TrimRight(b.String(), "_")
	if len(name) > maxMCPToolName {
		name = strings.TrimRight(name[:maxMCPToolName], "_")
	}
	if name == "" {
		return "chain"
	}
	return name
}

// mcpToolOf describes a chain as a tool: its description (else a sentence
// naming it) and an input schema.
func mcpToolOf(ch *store.Chain, name string) *mcp.Tool {
	desc := strings.TrimSpace(ch.Description)
	if desc == "" {
		desc = fmt.Sprintf("Runs the chain %q of Chain Studio.", ch.Name)
	}
	var sample map[string]any
	if ch.Doc != nil {
		sample = ch.Doc.SampleInput
	}
	return &mcp.Tool{Name: name, Title: ch.Name, Description: desc, InputSchema: mcpInputSchema(sample)}
}

// maxSchemaExample bounds the sample input a schema carries as its example.
const maxSchemaExample = 4 << 10

// mcpInputSchema is a tool's input schema. A chain document declares no
// schema of its run input (nodes read it by expression), so it is inferred
// from the chain's sample_input: each key a property of the type its
// sample value has (nested objects too), none required (a sample shows
// one input, it does not say which keys a run needs), the sample as the
// example when small. Without a sample: any object.
func mcpInputSchema(sample map[string]any) map[string]any {
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

// ---- the HTTP door ----------------------------------------------------------

// mcpEndpoint is POST/GET/DELETE /v1/mcp: the SDK's streamable HTTP
// handler behind the studio's sign-in and roles (authorize has let in a
// caller who may start runs). A session is its opener's: another caller
// presenting its id is refused; a new session is refused past the bounds.
func (s *Server) mcpEndpoint(c echo.Context) error {
	h := s.mcp
	id := callerOf(c)
	req := c.Request()
	sid := req.Header.Get("Mcp-Session-Id")
	// Only an initialize request opens a session. Its body is read here
	// (bounded as the SDK bounds it) and handed on unchanged.
	opening := false
	if sid == "" && req.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(req.Body, mcpBodyLimit+1))
		if err != nil {
			return apiError(EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		opening = json.Unmarshal(body, &msg) == nil && msg.Method == "initialize"
	}
	if sid != "" {
		if err := h.checkOwner(sid, id); err != nil {
			return err
		}
	}
	// The room reserved for an opening session is given back once: when
	// the session is owned (it then counts as a session; the answer may go
	// on streaming after the client has its id, and counting it twice
	// refused the caller's next session), or when the request ends.
	var release sync.Once
	if opening {
		if err := h.admit(id.Name); err != nil {
			return err
		}
		defer release.Do(func() { h.admitted(id.Name) })
	}
	w := &mcpWriter{ResponseWriter: c.Response().Writer}
	if opening {
		base := s.baseURL(req)
		w.onHeader = func() {
			if nsid := w.Header().Get("Mcp-Session-Id"); nsid != "" {
				h.own(nsid, &mcpSession{id: id, base: base})
				release.Do(func() { h.admitted(id.Name) })
			}
		}
	}
	h.handler.ServeHTTP(w, req)
	return nil
}

// baseURL is the studio's address as people reach it: --public-url, else
// the request's own host.
func (s *Server) baseURL(req *http.Request) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + req.Host
}

// checkOwner refuses a request on a session opened by someone else (an
// unknown id is left to the SDK: 404), and notes who is asking now.
func (h *mcpHub) checkOwner(sid string, id Identity) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return nil
	}
	if sess.id.Name != id.Name || !sess.id.created.Equal(id.created) {
		return apiError(EFORBIDDEN, "mcp_session_owner", "this MCP session was opened by someone else", nil)
	}
	sess.id = id // the role as it is now
	return nil
}

// admit reserves room for a session the caller is opening, or refuses
// (429 too_many_sessions, as A2E sessions) when the server or the caller has as many as
// allowed. Sessions the SDK closed (idle, deleted) are forgotten first.
func (h *mcpHub) admit(user string) error {
	live := map[string]bool{}
	for ss := range h.srv.Sessions() {
		live[ss.ID()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return runs.ErrShutdown
	}
	total, mine := 0, h.opening[user]
	for sid, sess := range h.sessions {
		if !live[sid] {
			delete(h.sessions, sid)
			continue
		}
		total++
		if sess.id.Name == user {
			mine++
		}
	}
	for _, n := range h.opening {
		total += n
	}
	if total >= h.max {
		return apiError(ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%d MCP sessions are open, the limit; close one (DELETE /v1/mcp) or wait for an idle one to expire", h.max),
			map[string]any{"limit": h.max, "per": "server"})
	}
	if mine >= h.perUser {
		return apiError(ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%s has %d MCP sessions open, the limit per caller; close one (DELETE /v1/mcp) or wait for an idle one to expire", user, h.perUser),
			map[string]any{"limit": h.perUser, "per": "user"})
	}
	h.opening[user]++
	return nil
}

func (h *mcpHub) admitted(user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opening[user]--; h.opening[user] <= 0 {
		delete(h.opening, user)
	}
}

func (h *mcpHub) own(sid string, sess *mcpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[sid] = sess
}

// session is who opened a session, as of its last request.
func (h *mcpHub) session(sid string) (mcpSession, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return mcpSession{}, false
	}
	return *sess, true
}

// sessionCount is the number of sessions open (tests, metrics).
func (h *mcpHub) sessionCount() int {
	n := 0
	for range h.srv.Sessions() {
		n++
	}
	return n
}

// stop closes every session (server shutdown): their calls' contexts end,
// which cancels their runs; new sessions are refused.
func (h *mcpHub) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	for ss := range h.srv.Sessions() {
		_ = ss.Close()
	}
}

// exposureChanged brings the tools up to date after this process changed
// an exposure, so sessions hear list_changed at once.
func (h *mcpHub) exposureChanged(ctx context.Context) {
	if err := h.sync(ctx); err != nil {
		h.s.log.Warn("mcp: updating the tool list failed; the next tools/list will", "err", err)
	}
}

// mcpWriter notes the response's headers as they are sent (the new
// session's id) and keeps the SDK's flushes working through echo.
type mcpWriter struct {
	http.ResponseWriter
	onHeader func()
	wrote    bool
}

func (w *mcpWriter) header() {
	if !w.wrote {
		w.wrote = true
		if w.onHeader != nil {
			w.onHeader()
		}
	}
}

func (w *mcpWriter) WriteHeader(code int) {
	w.header()
	w.ResponseWriter.WriteHeader(code)
}

func (w *mcpWriter) Write(b []byte) (int, error) {
	w.header()
	return w.ResponseWriter.Write(b)
}

func (w *mcpWriter) Flush() {
	w.header()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *mcpWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mcpErrorBody is an error of /v1/mcp as a JSON-RPC error response, which
// MCP clients read (the SDK's own refusals are the same shape): the API
// error's code and details are in data.
func mcpErrorBody(ae *APIError) map[string]any {
	code := -32603 // internal error
	switch ae.Status() {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		code = -32600 // invalid request
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusMisdirectedRequest:
		code = -32000 // server error: refused
	}
	return map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": ae.Message, "data": map[string]any{"code": ae.Code, "details": ae.Details}}}
}

// ---- a tool call is a run ---------------------------------------------------

// call runs the tool's chain with the arguments as input and answers with
// the run's outcome; see mcpResult.
func (h *mcpHub) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	t, ok := h.tools[req.Params.Name]
	h.mu.Unlock()
	if !ok {
		return toolError(fmt.Sprintf("no chain is exposed as the tool %q any more; list the tools again", req.Params.Name)), nil
	}
	sess, ok := h.session(req.Session.ID())
	if !ok {
		return nil, errors.New("this MCP session has no caller: open a new one")
	}
	var input map[string]any
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &input); err != nil {
			return toolError("the arguments must be a JSON object: they are the run's input"), nil
		}
	}
	// The published version, as every run by name: an edit in progress
	// never runs from a client.
	ch, err := h.s.db.GetPublishedChain(ctx, t.chainID)
	if err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			return toolError(fmt.Sprintf("the chain behind the tool %q was deleted", req.Params.Name)), nil
		}
		return nil, fmt.Errorf("read chain %s: %w", t.chainID, err)
	}
	if !ch.MCPExposed {
		return toolError(fmt.Sprintf("the chain %q is no longer exposed as a tool", ch.Name)), nil
	}
	runID, err := h.s.runs.StartTriggered(ctx, ch, input, runs.Trigger{Kind: store.TriggerMCP, ID: sess.id.Name})
	if err != nil {
		// Refusals a client can act on (an invalid chain, a full queue,
		// shutdown) are the tool's error; the API's table words them.
		return toolError(fmt.Sprintf("the run did not start: %s", h.s.errorFor(err).Message)), nil
	}
	h.s.log.Info("mcp: tool call started a run", "tool", req.Params.Name, "chain_id", ch.ID, "run_id", runID, "user", sess.id.Name)
	c := &mcpCall{h: h, req: req, runID: runID, base: sess.base, token: req.Params.GetProgressToken()}
	return c.follow(ctx)
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// mcpCall follows one call's run to its end, a pause it cannot answer, or
// the client's cancellation.
type mcpCall struct {
	h     *mcpHub
	req   *mcp.CallToolRequest
	runID string
	base  string
	token any // the client's progress token; nil: no progress wanted
	done  int // nodes finished, the progress count
	last  int64
}

func (c *mcpCall) follow(ctx context.Context) (*mcp.CallToolResult, error) {
	for asked := 0; ; {
		if err := c.wait(ctx); err != nil {
			if ctx.Err() != nil {
				// notifications/cancelled, or the client went away: the
				// run stops with the call.
				c.h.s.runs.Cancel(c.runID)
				c.h.s.log.Info("mcp: tool call cancelled by its client; run cancelled", "run_id", c.runID)
				return nil, ctx.Err()
			}
			return nil, err
		}
		r, err := c.h.s.db.GetRun(ctx, c.runID)
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", c.runID, err)
		}
		if r.Status != engine.StatusPaused {
			return c.result(r, nil), nil
		}
		pending, err := c.h.s.pendingPauses(ctx, r)
		if err != nil {
			return nil, err
		}
		if asked >= maxMCPElicitations || len(pending) == 0 {
			return c.result(r, pending), nil
		}
		answered, err := c.ask(ctx, pending[0])
		if err != nil || !answered {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the paused run stays paused: the person may answer on its page
			}
			res := c.result(r, pending)
			if err != nil {
				res.Content = append(res.Content, &mcp.TextContent{Text: "The answer was not taken: " + c.h.s.errorFor(err).Message})
			}
			return res, nil
		}
		asked++
	}
}

// wait returns once the run is neither queued nor running, sending a
// progress notification for each node that finishes (runs.Watch: the live
// events, else what the store holds).
func (c *mcpCall) wait(ctx context.Context) error {
	for {
		if err := c.watchOnce(ctx); err != nil {
			return err
		}
		info, err := c.h.s.db.GetRunInfo(ctx, c.runID)
		if err != nil {
			return fmt.Errorf("read run %s: %w", c.runID, err)
		}
		if info.Status != engine.StatusQueued && info.Status != engine.StatusRunning {
			return nil
		}
		// Executing in another process, or its watch was dropped: look
		// again shortly.
		t := time.NewTimer(mcpPollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (c *mcpCall) watchOnce(ctx context.Context) error {
	w, err := c.h.s.runs.Watch(c.runID, c.last)
	if err != nil {
		var busy *runs.BusyError
		if errors.As(err, &busy) {
			return nil // no watcher free: poll the row instead
		}
		return err
	}
	defer w.Close()
	if err := w.CatchUp(ctx, c.replay); err != nil {
		return err
	}
	if !w.Live() {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-w.C():
			state, err := w.Next(ctx, ok, c.replay, func(ev *runs.LiveEvent) error {
				c.event(ctx, &ev.Event)
				return nil
			})
			if err != nil {
				return err
			}
			if state != runs.WatchOpen {
				if state == runs.WatchEnded {
					return w.CatchUp(ctx, c.replay)
				}
				return nil
			}
		}
	}
}

// replay reads the stored events after seq after, a page at a time.
func (c *mcpCall) replay(ctx context.Context, after int64) (int64, error) {
	for {
		evs, err := c.h.s.db.EventsAfter(ctx, c.runID, after, 256)
		if err != nil {
			return after, err
		}
		for i := range evs {
			c.event(ctx, &evs[i])
			after = evs[i].Seq
		}
		if len(evs) < 256 {
			c.last = max(c.last, after)
			return after, nil
		}
	}
}

// event sends a progress notification when a node of the run finishes (a
// sub-chain's own events are its run's, not counted here).
func (c *mcpCall) event(ctx context.Context, ev *engine.Event) {
	c.last = max(c.last, ev.Seq)
	if c.token == nil || (ev.Phase != engine.PhaseDone && ev.Phase != engine.PhaseError && ev.Phase != engine.PhasePaused) {
		return
	}
	msg := fmt.Sprintf("node %s: %s", ev.NodeID, ev.Phase)
	if ev.Phase != engine.PhasePaused {
		c.done++
	}
	// A client that cannot take it loses a progress note, not the call.
	_ = c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: c.token, Progress: float64(c.done), Message: msg})
}

// ask asks the client to answer a pause (elicitation), when the client can
// be asked and its caller may answer, and resumes the run with the answer.
// answered is false when the pause is left to a person (no elicitation,
// a role that may not answer, the client declined).
func (c *mcpCall) ask(ctx context.Context, p engine.Pending) (answered bool, err error) {
	ss := c.req.Session
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false, nil
	}
	sess, ok := c.h.session(ss.ID())
	if !ok || !roleAllows(sess.id.Role, actAnswer) {
		return false, nil // an editor does not answer the pauses of the runs it starts
	}
	if err := c.h.s.requireApprover(ctx, sess.id, c.runID, p.PauseID); err != nil {
		return false, nil
	}
	form, valueKeys := elicitForm(p)
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: pauseMessage(p), RequestedSchema: form})
	if err != nil {
		return false, fmt.Errorf("ask the client: %w", err)
	}
	if res.Action != "accept" {
		return false, nil
	}
	ar := engine.AnswerRequest{Action: engine.ActionApprove}
	if d, _ := res.Content["decision"].(string); d == engine.ActionReject {
		ar.Action = engine.ActionReject
	}
	ar.Comment, _ = res.Content["comment"].(string)
	if len(valueKeys) > 0 {
		v := map[string]any{}
		for _, k := range valueKeys {
			if x, ok := res.Content[k]; ok {
				v[k] = x
			}
		}
		ar.Value, ar.HasValue = v, true
	} else if p.Approval() == nil {
		// A tool's pause (or a sub-chain's) is answered with a value.
		ar.Action, ar.Value, ar.HasValue = engine.ActionRespond, res.Content["answer"], true
	}
	value, _, err := engine.ReadAnswer(ar)
	if err != nil {
		return false, err
	}
	if err := c.h.s.runs.ResumePause(ctx, c.runID, p.PauseID, value, nil); err != nil {
		return false, err
	}
	c.h.s.log.Info("mcp: pause answered through the client", "run_id", c.runID, "pause_id", p.PauseID, "user", sess.id.Name, "action", ar.Action)
	return true, nil
}

// elicitForm is what the client is asked: approve or reject, a comment, and
// the answer schema's fields when they are flat (elicitation takes only
// primitive fields); a tool's pause asks for one answer.
func elicitForm(p engine.Pending) (map[string]any, []string) {
	props := map[string]any{
		"comment": map[string]any{"type": "string", "title": "Comment", "maxLength": engine.MaxAnswerComment},
	}
	required := []string{}
	var keys []string
	if a := p.Approval(); a != nil {
		props["decision"] = map[string]any{"type": "string", "title": "Decision", "enum": []string{engine.ActionApprove, engine.ActionReject}}
		required = append(required, "decision")
		if sp, _ := a.Schema["properties"].(map[string]any); len(sp) > 0 && flatSchema(sp) {
			for k, v := range sp {
				if _, taken := props[k]; !taken {
					props[k] = v
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			if req, ok := a.Schema["required"].([]any); ok {
				for _, r := range req {
					if s, ok := r.(string); ok && slices.Contains(keys, s) {
						required = append(required, s)
					}
				}
			}
		}
	} else {
		props["answer"] = map[string]any{"type": "string", "title": "Answer"}
		required = append(required, "answer")
	}
	return map[string]any{"type": "object", "properties": props, "required": required}, keys
}

// flatSchema: every property is a string, number, integer or boolean.
func flatSchema(props map[string]any) bool {
	for _, v := range props {
		m, _ := v.(map[string]any)
		switch m["type"] {
		case "string", "number", "integer", "boolean":
		default:
			return false
		}
	}
	return true
}

// pauseMessage is what a pause asks, in words.
func pauseMessage(p engine.Pending) string {
	prompt := ""
	switch x := p.Prompt.(type) {
	case string:
		prompt = x
	case nil:
	default:
		b, _ := json.Marshal(x)
		prompt = string(b)
	}
	if prompt == "" {
		prompt = "The run waits for an answer."
	}
	return fmt.Sprintf("%s (node %s, pause %s)", prompt, p.NodeID, p.PauseID)
}

// result is the call's answer: the run's final output as structured content
// (output, with the run's id, status and page) and a text rendering; a run
// that failed, was cancelled or timed out is an error with its message; a
// paused one says what it waits for and where to answer.
func (c *mcpCall) result(r *store.Run, pending []engine.Pending) *mcp.CallToolResult {
	url := c.base + "/runs/" + r.ID
	sc := map[string]any{"run_id": r.ID, "run_url": url, "status": string(r.Status)}
	var text strings.Builder
	res := &mcp.CallToolResult{}
	switch r.Status {
	case engine.StatusCompleted, engine.StatusPartial:
		sc["output"] = r.FinalOutput
		b, err := json.MarshalIndent(r.FinalOutput, "", "  ")
		if err != nil {
			b = []byte(fmt.Sprint(r.FinalOutput))
		}
		text.Write(b)
		fmt.Fprintf(&text, "\n\nRun %s %s: %s", r.ID, r.Status, url)
	case engine.StatusPaused:
		ps := make([]map[string]any, 0, len(pending))
		for _, p := range pending {
			ps = append(ps, map[string]any{"pause_id": p.PauseID, "node_id": p.NodeID, "prompt": p.Prompt})
			fmt.Fprintf(&text, "Paused: %s\n", pauseMessage(p))
		}
		sc["pauses"] = ps
		fmt.Fprintf(&text, "Run %s waits for an answer; answer it on its page: %s", r.ID, url)
	default:
		res.IsError = true
		msg := string(r.Status)
		if r.Error != nil {
			msg = r.Error.Message
			sc["error"] = map[string]any{"code": r.Error.Code, "message": r.Error.Message}
		}
		fmt.Fprintf(&text, "Run %s %s: %s\n%s", r.ID, r.Status, msg, url)
	}
	res.StructuredContent = sc
	res.Content = []mcp.Content{&mcp.TextContent{Text: text.String()}}
	return res
}

// ---- the setting ------------------------------------------------------------

// setChainMCP is PUT /v1/chains/{id}/mcp {"exposed": bool} (admins): offer
// the chain as a tool of the studio's MCP server, or stop. It answers the
// chain; sessions hear notifications/tools/list_changed.
func (s *Server) setChainMCP(c echo.Context) error {
	var body struct {
		Exposed *bool `json:"exposed"`
	}
	if err := bindJSON(c, &body); err != nil {
		return err
	}
	if body.Exposed == nil {
		return apiError(EBADREQUEST, "bad_request", `the body must be {"exposed": true} or {"exposed": false}`, map[string]any{"field": "exposed"})
	}
	ctx := c.Request().Context()
	id := c.Param("id")
	if err := s.db.SetChainMCP(ctx, id, *body.Exposed); err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	s.log.Info("chain exposure as an MCP tool changed", "chain_id", id, "exposed", *body.Exposed, "user", callerOf(c).Name)
	s.mcp.exposureChanged(ctx)
	ch, err := s.db.GetChain(ctx, id)
	if err != nil {
		return storeErr(err, fmt.Sprintf("chain %q", id))
	}
	return c.JSON(http.StatusOK, s.chainAnswer(c, ch))
}
