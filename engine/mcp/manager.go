package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// protocolVersion is the revision the client asks for. It is the last one
// with the initialize handshake, which servers in the wild speak; the SDK's
// newer stateless revision is not asked for until servers have it.
const protocolVersion = "2025-11-25"

// IDPrefix starts every MCP tool's id: mcp:<server>/<tool>.
const IDPrefix = "mcp:"

// ToolID is the id of a server's tool.
func ToolID(server, tool string) string { return IDPrefix + server + "/" + tool }

// ParseToolID splits an id made by ToolID; ok is false for any other string.
func ParseToolID(id string) (server, tool string, ok bool) {
	rest, found := strings.CutPrefix(id, IDPrefix)
	if !found {
		return "", "", false
	}
	server, tool, found = strings.Cut(rest, "/")
	if !found || ValidName(server) != "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}

// States of a server.
const (
	StateConnecting  = "connecting"  // the first connection is being made
	StateAvailable   = "available"   // connected, tools listed
	StateUnavailable = "unavailable" // the last attempt failed (Reason says why); it is retried
)

// Tool is one tool of a server, as listed.
type Tool struct {
	ID           string          `json:"id"` // mcp:<server>/<tool>
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// ReadOnly is the server's readOnlyHint: a claim, not a guarantee.
	ReadOnly bool `json:"read_only,omitempty"`
}

// DroppedTool is a listed tool left out of the catalog, and why.
type DroppedTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// maxDropped bounds the dropped tools a status keeps (DroppedMore counts the
// rest), so a hostile list cannot grow it without end.
const maxDropped = 64

// ServerStatus is what is known of one server.
type ServerStatus struct {
	Name        string        `json:"name"`
	Transport   string        `json:"transport"` // the one in use: "sse" after a fallback from "http"
	State       string        `json:"state"`
	Reason      string        `json:"reason,omitempty"` // why it is unavailable
	Since       time.Time     `json:"since"`            // when State last changed
	Tools       int           `json:"tools"`
	Dropped     []DroppedTool `json:"dropped,omitempty"`
	DroppedMore int           `json:"dropped_more,omitempty"`
	ServerInfo  string        `json:"server_info,omitempty"` // name and version the server gave
}

// Catalog is a snapshot: every server's status and the tools last listed,
// including those of a server that has become unavailable since (its status
// says so, and Call refuses its tools until it is back).
type Catalog struct {
	Servers []ServerStatus `json:"servers"`
	Tools   []Tool         `json:"tools"`
}

// Manager keeps the connections to several servers and their catalog.
// Connecting and listing happen in the background; Tools never waits on them.
type Manager struct {
	opts    Options
	servers []*server
	byName  map[string]*server
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	changeMu sync.Mutex
	change   chan struct{} // closed at the next change of the catalog
}

type server struct {
	cfg     Server
	prog    string
	env     []string
	opts    *Options
	notify  func() // tells the Manager's watchers the catalog changed
	stderr  *tailBuffer
	changed chan struct{} // tools/list_changed arrived
	refresh chan struct{} // Refresh was called

	progress progressTable

	mu      sync.Mutex
	status  ServerStatus
	tools   []Tool
	byName  map[string]Tool
	dropped map[string]string
	session *sdk.ClientSession
}

// NewManager checks every server's configuration against the options (a
// stdio program not on the allow-list is refused here, before anything runs)
// and starts connecting to them in the background.
func NewManager(servers []Server, opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	m := &Manager{opts: opts, byName: map[string]*server{}, change: make(chan struct{})}
	for _, cfg := range servers {
		prog, env, err := cfg.check(opts)
		if err != nil {
			return nil, err
		}
		if m.byName[cfg.Name] != nil {
			return nil, fmt.Errorf("mcp server %q is configured twice", cfg.Name)
		}
		s := &server{
			cfg: cfg, prog: prog, env: env, opts: &m.opts, notify: m.changed,
			stderr:  &tailBuffer{max: maxStderr},
			changed: make(chan struct{}, 1),
			refresh: make(chan struct{}, 1),
			status:  ServerStatus{Name: cfg.Name, Transport: cfg.Transport, State: StateConnecting, Since: time.Now()},
		}
		m.servers = append(m.servers, s)
		m.byName[cfg.Name] = s
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	for _, s := range m.servers {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(ctx)
		}()
	}
	return m, nil
}

// Close ends every session (stdio programs are killed) and waits for the
// background work to stop.
func (m *Manager) Close() error {
	m.cancel()
	m.wg.Wait()
	return nil
}

// Changed returns a channel that is closed at the catalog's next change (a
// server's state, or its tools), for callers that show the catalog live.
func (m *Manager) Changed() <-chan struct{} {
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	return m.change
}

func (m *Manager) changed() {
	m.changeMu.Lock()
	close(m.change)
	m.change = make(chan struct{})
	m.changeMu.Unlock()
}

// Tools returns the catalog as last known, at once.
func (m *Manager) Tools() Catalog {
	c := Catalog{Servers: make([]ServerStatus, 0, len(m.servers)), Tools: []Tool{}}
	for _, s := range m.servers {
		s.mu.Lock()
		st := s.status
		st.Dropped = append([]DroppedTool(nil), st.Dropped...)
		c.Servers = append(c.Servers, st)
		c.Tools = append(c.Tools, s.tools...)
		s.mu.Unlock()
	}
	return c
}

// Refresh makes a server re-list its tools now, or retry at once if it is
// unavailable. It does not wait.
func (m *Manager) Refresh(name string) {
	if s := m.byName[name]; s != nil {
		poke(s.refresh)
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *server) set(f func(st *ServerStatus)) {
	s.mu.Lock()
	prev := s.status
	f(&s.status)
	if s.status.State != prev.State {
		s.status.Since = time.Now()
	}
	same := s.status.State == prev.State && s.status.Reason == prev.Reason && s.status.Transport == prev.Transport && s.status.ServerInfo == prev.ServerInfo
	s.mu.Unlock()
	if !same {
		s.notify()
	}
}

func (s *server) unavailable(reason string) {
	s.set(func(st *ServerStatus) { st.State, st.Reason = StateUnavailable, reason })
}

// run connects, lists and re-lists until ctx ends, retrying a failed server
// with a growing delay.
func (s *server) run(ctx context.Context) {
	delay := s.opts.RetryDelay
	for {
		cs, transport, stop, err := s.connect(ctx)
		if ctx.Err() != nil {
			if cs != nil {
				cs.Close()
			}
			stop()
			return
		}
		if err != nil {
			s.unavailable(s.reason(err))
		} else {
			s.set(func(st *ServerStatus) { st.Transport = transport })
			if s.serve(ctx, cs) {
				delay = s.opts.RetryDelay
			}
			stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		case <-s.refresh:
		}
		delay = min(delay*2, maxRetryDelay)
	}
}

// reason words a connection failure for the status.
func (s *server) reason(err error) string {
	var why string
	var werr *jsonrpc.Error
	var lerr *LimitError
	var nerr *net.OpError
	var uerr *url.Error
	var xerr *exec.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		why = "timeout: " + err.Error()
	case errors.As(err, &nerr), errors.As(err, &uerr), errors.As(err, &xerr):
		why = "connect error: " + err.Error()
	case errors.As(err, &werr), errors.As(err, &lerr), isProtocolError(err):
		why = "protocol error: " + err.Error()
	default:
		why = "connect error: " + err.Error()
	}
	if s.cfg.Transport == TransportStdio {
		if tail := s.stderr.String(); tail != "" {
			why += "; the program's stderr ends: " + tail
		}
	}
	return why
}

// isProtocolError tells a server that answered nonsense from one that could
// not be reached. The SDK's errors carry no types for this, so it reads them.
func isProtocolError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"decode", "unmarshal", "invalid", "unsupported", "unexpected", "malformed", "missing endpoint", "first event"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// maxFrame bounds any one message from the server.
func (o *Options) maxFrame() int { return max(o.MaxListBytes, o.MaxResultBytes+resultSlack) }

// resultSlack is room for a result's envelope beyond MaxResultBytes, so that
// the transport's bound trips only on results that are over it anyway.
const resultSlack = 64 << 10

// connect makes one connection, within ConnectTimeout. stop releases what the
// connection holds once the session is over.
func (s *server) connect(ctx context.Context) (cs *sdk.ClientSession, transport string, stop func(), err error) {
	deadline := time.Now().Add(s.opts.ConnectTimeout)
	attempt := func(t sdk.Transport) (*sdk.ClientSession, func(), error) {
		// The session outlives Connect (an SSE stream is a request made with
		// Connect's context), so the timeout is a timer, not a context deadline.
		actx, cancel := context.WithCancel(ctx)
		client := sdk.NewClient(&sdk.Implementation{Name: "chain-studio", Version: "1"}, &sdk.ClientOptions{
			Logger:                 s.opts.Logger,
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { poke(s.changed) },
			ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				s.progress.report(req.Params)
			},
		})
		type res struct {
			cs  *sdk.ClientSession
			err error
		}
		done := make(chan res, 1)
		go func() {
			cs, err := client.Connect(actx, t, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
			done <- res{cs, err}
		}()
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		select {
		case r := <-done:
			if r.err != nil {
				cancel()
				return nil, func() {}, r.err
			}
			return r.cs, cancel, nil
		case <-timer.C:
			cancel()
			go func() { // a late success must not leak its session
				if r := <-done; r.cs != nil {
					r.cs.Close()
				}
			}()
			return nil, func() {}, fmt.Errorf("no answer to the handshake within %s: %w", s.opts.ConnectTimeout, context.DeadlineExceeded)
		}
	}
	switch s.cfg.Transport {
	case TransportStdio:
		s.stderr.Reset()
		cs, stop, err := attempt(&stdioTransport{prog: s.prog, args: s.cfg.Args, env: s.env, maxFrame: s.opts.maxFrame(), stderr: s.stderr, progress: &s.progress})
		return cs, TransportStdio, stop, err
	case TransportSSE:
		cs, stop, err := attempt(s.sseTransport())
		return cs, TransportSSE, stop, err
	default:
		hc := httpClient(s.opts.HTTPClient, s.cfg.Headers, s.cfg.Allow, s.opts.maxFrame(), &s.progress)
		cs, stop, err := attempt(&sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: s.opts.maxFrame()})
		if err == nil || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return cs, TransportHTTP, stop, err
		}
		// A server of the 2024-11-05 revision has only the SSE transport; the
		// spec's way to tell is that the streamable POST fails.
		cs2, stop2, err2 := attempt(s.sseTransport())
		if err2 != nil {
			return nil, TransportHTTP, func() {}, fmt.Errorf("%w (and as an SSE server: %v)", err, err2)
		}
		return cs2, TransportSSE, stop2, nil
	}
}

func (s *server) sseTransport() sdk.Transport {
	return &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: httpClient(s.opts.HTTPClient, s.cfg.Headers, s.cfg.Allow, s.opts.maxFrame(), &s.progress), MaxEventSize: s.opts.maxFrame()}
}

// serve lists the session's tools, re-lists them on list_changed or Refresh,
// and returns when the session or ctx ends; ok reports that the tools were
// listed at least once.
func (s *server) serve(ctx context.Context, cs *sdk.ClientSession) (ok bool) {
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	defer func() {
		s.mu.Lock()
		s.session = nil
		s.mu.Unlock()
		cs.Close()
	}()
	info := ""
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		info = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	select { // the first list covers a change announced during the handshake
	case <-s.changed:
	default:
	}
	closed := func(err error) {
		why := "the server closed the connection"
		if err != nil {
			why += ": " + err.Error()
		}
		s.unavailable(s.reason(errors.New(why)))
	}
	for {
		listed := time.Now()
		if err := s.list(ctx, cs); err != nil {
			if ctx.Err() == nil {
				s.unavailable(s.reason(fmt.Errorf("listing tools: %w", err)))
			}
			return ok
		}
		ok = true
		s.mu.Lock()
		s.session = cs
		s.mu.Unlock()
		s.set(func(st *ServerStatus) { st.State, st.Reason, st.ServerInfo = StateAvailable, "", info })
		select {
		case <-ctx.Done():
			return ok
		case err := <-ended:
			closed(err)
			return ok
		case <-s.changed:
		case <-s.refresh:
		}
		// A server announcing changes without pause is listed at most once
		// per minRelist; the changes in between are covered by the next list.
		if wait := minRelist - time.Since(listed); wait > 0 {
			select {
			case <-ctx.Done():
				return ok
			case err := <-ended:
				closed(err)
				return ok
			case <-time.After(wait):
			}
		}
	}
}

// minRelist is the least time between two listings of one session.
const minRelist = 500 * time.Millisecond

// maxPages bounds the pages of one listing, against a server that hands out
// cursors without end.
const maxPages = 100

// list fetches every page of tools within ListTimeout and replaces the
// server's part of the catalog.
func (s *server) list(ctx context.Context, cs *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, s.opts.ListTimeout)
	defer cancel()
	var (
		tools       []Tool
		byName      = map[string]Tool{}
		dropped     []DroppedTool
		droppedAll  = map[string]string{}
		droppedMore int
		cursor      string
	)
	drop := func(name, why string) {
		if _, seen := droppedAll[name]; !seen && len(droppedAll) < s.opts.MaxTools*4 {
			droppedAll[name] = why
		}
		if len(dropped) < maxDropped {
			dropped = append(dropped, DroppedTool{Name: clip.String(name, maxToolName), Reason: why})
		} else {
			droppedMore++
		}
	}
	full := false
	for page := 0; ; page++ {
		if page == maxPages {
			drop("", fmt.Sprintf("the server has more than %d pages of tools; the rest are left out", maxPages))
			break
		}
		pctx, lim := withBodyLimit(lctx, s.opts.MaxListBytes)
		res, err := cs.ListTools(pctx, &sdk.ListToolsParams{Cursor: cursor})
		if err != nil {
			if lim.tripped.Load() {
				return &LimitError{What: "tools/list page", Limit: "MaxListBytes", Max: s.opts.MaxListBytes}
			}
			return err
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if full {
				droppedMore++
				continue
			}
			if why := toolNameProblem(t.Name); why != "" {
				drop(t.Name, why)
				continue
			}
			if _, dup := byName[t.Name]; dup {
				drop(t.Name, "another tool of this server has the same name; the first one listed is kept")
				continue
			}
			in, err := schemaJSON(t.InputSchema, s.opts.MaxSchemaBytes)
			if err != nil {
				drop(t.Name, "input schema: "+err.Error())
				continue
			}
			out, err := schemaJSON(t.OutputSchema, s.opts.MaxSchemaBytes)
			if err != nil {
				drop(t.Name, "output schema: "+err.Error())
				continue
			}
			tool := Tool{
				ID: ToolID(s.cfg.Name, t.Name), Server: s.cfg.Name, Name: t.Name,
				Title: t.Title, Description: t.Description, InputSchema: in, OutputSchema: out,
				ReadOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint,
			}
			tools = append(tools, tool)
			byName[t.Name] = tool
			if len(tools) == s.opts.MaxTools {
				full = true
			}
		}
		if full {
			if res.NextCursor != "" {
				droppedMore++ // at least one more page
			}
			if droppedMore > 0 {
				dropped = append(dropped, DroppedTool{Reason: fmt.Sprintf("the server lists more than %d tools (MaxTools); the rest are left out", s.opts.MaxTools)})
			}
			break
		}
		if res.NextCursor == "" || res.NextCursor == cursor {
			break
		}
		cursor = res.NextCursor
	}
	s.mu.Lock()
	s.tools, s.byName, s.dropped = tools, byName, droppedAll
	s.status.Tools, s.status.Dropped, s.status.DroppedMore = len(tools), dropped, droppedMore
	s.mu.Unlock()
	s.notify()
	return nil
}

// maxToolName bounds a tool's name, as the SDK's servers do.
const maxToolName = 128

// toolNameProblem reports why a listed name cannot be a tool's ("" when it
// can). Names are kept as the server gave them or dropped, never rewritten,
// so an id always names what the server calls.
func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case len(name) > maxToolName:
		return fmt.Sprintf("the name is longer than %d bytes", maxToolName)
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	case strings.HasPrefix(strings.ToLower(name), IDPrefix), strings.HasPrefix(name, "__chain__"):
		return "the name looks like the id of another tool"
	case strings.ContainsRune(name, '/'):
		return "the name has a '/', which would make its id ambiguous"
	}
	for _, r := range name {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("the name has the control or format character %U", r)
		}
	}
	return ""
}

func schemaJSON(v any, limit int) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%d bytes, over the limit of %d (MaxSchemaBytes)", len(b), limit)
	}
	return b, nil
}
