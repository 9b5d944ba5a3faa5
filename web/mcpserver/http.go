package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// The HTTP door: who may use a session, how many are open, and the
// refusals in the JSON-RPC shape MCP clients read.

// Path is the MCP server's one path; package web's error handler answers
// its refusals with ErrorBody.
const Path = "/v1/mcp"

// Endpoint is POST/GET/DELETE /v1/mcp: the SDK's streamable HTTP
// handler behind the studio's sign-in and roles (authorize has let in a
// caller who may start runs). A session is its opener's: another caller
// presenting its id is refused; a new session is refused past the bounds,
// after the caller's oldest idle session is given up for it.
//
// Every refusal is a JSON-RPC error body with the HTTP status: the
// studio's own (web's error handler, with ErrorBody) and the SDK's, which it writes as plain text
// (writer rewrites those).
func (h *Handler) Endpoint(c echo.Context) error {
	id := httpcore.CallerOf(c)
	req := c.Request()
	sid := req.Header.Get("Mcp-Session-Id")
	// Only an initialize request opens a session: any other request but
	// server/discover needs a session's id (400, as the MCP specification
	// says, not a session opened for nothing). The body is read here (bounded as the SDK
	// bounds it) and handed on unchanged.
	opening := false
	if sid == "" {
		if req.Method != http.MethodPost {
			return noSession(req.Method)
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, BodyLimit+1))
		if err != nil {
			return httpcore.Error(httpcore.EBADREQUEST, "bad_body", "could not read the request body: "+err.Error(), nil)
		}
		if len(body) > BodyLimit {
			return tooLarge()
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			return httpcore.Error(httpcore.EBADREQUEST, "parse_error", "the body is not a JSON-RPC message: "+err.Error(), nil)
		}
		switch msg.Method {
		case "initialize":
			opening = true
		case "server/discover":
			// Asked before initialize by clients of newer revisions of
			// the protocol; the SDK answers it without keeping a session.
		default:
			return noSession(req.Method)
		}
	}
	if sid != "" {
		if err := h.checkOwner(sid, id); err != nil {
			return err
		}
		// A GET is the session's stream: while it is open the session is
		// busy (not idle, not given up).
		if h.begin(sid) {
			defer h.end(sid)
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
	w := &writer{ResponseWriter: c.Response().Writer, sid: sid}
	var owned string
	if opening {
		base := h.baseURL(req)
		w.onHeader = func() {
			if nsid := w.Header().Get("Mcp-Session-Id"); nsid != "" {
				h.own(nsid, &session{id: id, base: base, busy: 1})
				owned = nsid
				release.Do(func() { h.admitted(id.Name) })
			}
		}
	}
	h.handler.ServeHTTP(w, req)
	w.finish()
	if owned != "" {
		h.end(owned)
	}
	return nil
}

// noSession refuses a request other than initialize that names no
// session.
func noSession(method string) error {
	return httpcore.Error(httpcore.EBADREQUEST, "session_required",
		fmt.Sprintf("%s /v1/mcp needs the Mcp-Session-Id header: open a session with an initialize request first", method), nil)
}

func tooLarge() *httpcore.APIError {
	return httpcore.Error(httpcore.ETOOLARGE, "too_large", fmt.Sprintf("the request body is over the %d-byte limit of /v1/mcp", BodyLimit),
		map[string]any{"limit": BodyLimit})
}

// baseURL is the studio's address as people reach it: --public-url, else
// the request's own host.
func (h *Handler) baseURL(req *http.Request) string {
	if h.publicURL != "" {
		return strings.TrimRight(h.publicURL, "/")
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + req.Host
}

// checkOwner refuses a request on a session opened by someone else (an
// unknown id is left to the SDK: 404), and notes who is asking now.
func (h *Handler) checkOwner(sid string, id httpcore.Identity) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return nil
	}
	if sess.id.Name != id.Name || !sess.id.Created.Equal(id.Created) {
		return httpcore.Error(httpcore.EFORBIDDEN, "mcp_session_owner", "this MCP session was opened by someone else", nil)
	}
	sess.id = id // the role as it is now
	return nil
}

// begin notes a request on a session it knows (false: not one of its
// sessions, nothing to end); its idle timer stops.
func (h *Handler) begin(sid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return false
	}
	sess.busy++
	if sess.timer != nil {
		sess.timer.Stop()
		sess.timer = nil
	}
	return true
}

// end notes the end of a request; a session left with nothing in flight
// (no call, no stream) is closed after quickIdle unless used again.
func (h *Handler) end(sid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return
	}
	sess.busy--
	sess.used = time.Now()
	sess.gen++
	if sess.busy > 0 {
		return
	}
	gen := sess.gen
	sess.timer = time.AfterFunc(h.quickIdle, func() {
		h.mu.Lock()
		cur, ok := h.sessions[sid]
		idle := ok && cur.busy == 0 && cur.gen == gen
		user := ""
		if ok {
			user = cur.id.Name
		}
		h.mu.Unlock()
		if idle {
			h.log.Info("mcp: closing a session idle without a stream", "session", sid, "user", user, "idle", h.quickIdle)
			h.closeSession(sid)
		}
	})
}

// closeSession closes the SDK's session of that id (its onClose forgets it
// there; it is forgotten here too).
func (h *Handler) closeSession(sid string) {
	for ss := range h.srv.Sessions() {
		if ss.ID() == sid {
			_ = ss.Close()
		}
	}
	h.mu.Lock()
	if sess, ok := h.sessions[sid]; ok {
		if sess.timer != nil {
			sess.timer.Stop()
		}
		delete(h.sessions, sid)
	}
	h.mu.Unlock()
}

// admit reserves room for a session the caller is opening, or refuses
// (429 too_many_sessions, as A2E sessions) when the server or the caller has as many as
// allowed. Sessions the SDK closed (idle, deleted) are forgotten first; a
// caller at its bound gives up its session idle the longest (nothing in
// flight, no stream): clients that never close their sessions would
// otherwise lock their caller out for the idle time.
func (h *Handler) admit(user string) error {
	live := map[string]bool{}
	for ss := range h.srv.Sessions() {
		live[ss.ID()] = true
	}
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return runs.ErrShutdown
	}
	total, mine := 0, h.opening[user]
	oldest := ""
	var oldestUsed time.Time
	for sid, sess := range h.sessions {
		if !live[sid] {
			if sess.timer != nil {
				sess.timer.Stop()
			}
			delete(h.sessions, sid)
			continue
		}
		total++
		if sess.id.Name == user {
			mine++
			if sess.busy == 0 && (oldest == "" || sess.used.Before(oldestUsed)) {
				oldest, oldestUsed = sid, sess.used
			}
		}
	}
	for _, n := range h.opening {
		total += n
	}
	if (total >= h.max || mine >= h.perUser) && oldest != "" && mine >= h.perUser {
		// Given up for the new one: the room is the caller's own.
		if sess := h.sessions[oldest]; sess.timer != nil {
			sess.timer.Stop()
		}
		delete(h.sessions, oldest)
		total--
		mine--
		h.opening[user]++
		h.mu.Unlock()
		h.log.Info("mcp: a caller at its session bound gave up its oldest idle session", "user", user, "session", oldest, "idle_since", oldestUsed)
		h.closeSession(oldest)
		return nil
	}
	defer h.mu.Unlock()
	if total >= h.max {
		return httpcore.Error(httpcore.ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%d MCP sessions are open, the limit; close one (DELETE /v1/mcp) or wait for an idle one to expire", h.max),
			map[string]any{"limit": h.max, "per": "server"})
	}
	if mine >= h.perUser {
		return httpcore.Error(httpcore.ETOOMANY, "too_many_sessions",
			fmt.Sprintf("%s has %d MCP sessions open, the limit per caller, each with a call or a stream in progress; close one (DELETE /v1/mcp) or wait for one to end", user, h.perUser),
			map[string]any{"limit": h.perUser, "per": "user"})
	}
	h.opening[user]++
	return nil
}

func (h *Handler) admitted(user string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opening[user]--; h.opening[user] <= 0 {
		delete(h.opening, user)
	}
}

func (h *Handler) own(sid string, sess *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[sid] = sess
}

// sessionOf is who opened a session, as of its last request.
func (h *Handler) sessionOf(sid string) (session, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess, ok := h.sessions[sid]
	if !ok {
		return session{}, false
	}
	return *sess, true
}

// Stats is a look at the sessions (tests, diagnosis).
type Stats struct {
	Open    int // sessions the SDK holds
	Opening int // sessions admitted and not yet owned
	// InFlight is, per session whose caller is known, its requests in
	// flight, GET streams included (0: idle, liable to be closed early).
	InFlight map[string]int
}

// Stats reads the sessions as they are now.
func (h *Handler) Stats() Stats {
	st := Stats{InFlight: map[string]int{}}
	for range h.srv.Sessions() {
		st.Open++
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.opening {
		st.Opening += n
	}
	for sid, sess := range h.sessions {
		st.InFlight[sid] = sess.busy
	}
	return st
}

// Stop closes every session (server shutdown): their calls' contexts end,
// which cancels their runs; new sessions are refused.
func (h *Handler) Stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	for ss := range h.srv.Sessions() {
		_ = ss.Close()
	}
}

// writer notes the response's headers as they are sent (the new
// session's id), keeps the SDK's flushes working through echo, and turns
// the SDK's plain-text refusals (an unknown session, a body over the
// bound, bad headers) into the JSON-RPC error bodies MCP clients read,
// with the same status.
type writer struct {
	http.ResponseWriter
	onHeader func()
	wrote    bool
	sid      string // the session the request named

	refused int          // the SDK's error status, held until finish
	text    bytes.Buffer // the SDK's message
}

func (w *writer) header() {
	if !w.wrote {
		w.wrote = true
		if w.onHeader != nil {
			w.onHeader()
		}
	}
}

func (w *writer) WriteHeader(code int) {
	if !w.wrote && code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.wrote = true
		w.refused = code
		return
	}
	w.header()
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	if w.refused != 0 {
		if room := 4<<10 - w.text.Len(); room > 0 {
			w.text.Write(b[:min(len(b), room)])
		}
		return len(b), nil
	}
	w.header()
	return w.ResponseWriter.Write(b)
}

func (w *writer) Flush() {
	if w.refused != 0 {
		return
	}
	w.header()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a held refusal as a JSON-RPC error.
func (w *writer) finish() {
	if w.refused == 0 {
		return
	}
	ae := sdkRefusal(w.refused, strings.TrimSpace(w.text.String()), w.sid)
	hd := w.Header()
	hd.Del("X-Content-Type-Options")
	hd.Del("Content-Length")
	hd.Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(w.refused)
	b, _ := json.Marshal(ErrorBody(ae))
	_, _ = w.ResponseWriter.Write(append(b, '\n'))
}

// sdkRefusal words one of the SDK's refusals as an API error: the
// status it chose, a code and a message that says what to do.
func sdkRefusal(status int, text, sid string) *httpcore.APIError {
	switch status {
	case http.StatusNotFound:
		return &httpcore.APIError{Kind: httpcore.ENOTFOUND, Code: "session_not_found",
			Message: fmt.Sprintf("no MCP session %q is open (it was closed, or idle too long): open a new one with an initialize request", sid)}
	case http.StatusRequestEntityTooLarge:
		return tooLarge()
	}
	code := strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	if code == "" {
		code = "refused"
	}
	if text == "" {
		text = http.StatusText(status)
	}
	return &httpcore.APIError{Kind: httpcore.CodeForStatus(status), Code: code, Message: text}
}

// ErrorBody is an error of /v1/mcp as a JSON-RPC error response, which
// MCP clients read (the SDK's own refusals are the same shape): the API
// error's code and details are in data.
func ErrorBody(ae *httpcore.APIError) map[string]any {
	code := -32603 // internal error
	switch ae.Status() {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge,
		http.StatusUnsupportedMediaType, http.StatusMethodNotAllowed:
		code = -32600 // invalid request
		if ae.Code == "parse_error" {
			code = -32700
		}
	case http.StatusNotFound:
		code = -32001 // session not found, as the SDKs' clients read it
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusMisdirectedRequest:
		code = -32000 // server error: refused
	}
	return map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": ae.Message, "data": map[string]any{"code": ae.Code, "details": ae.Details}}}
}
