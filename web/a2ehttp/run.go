package a2ehttp

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/labstack/echo/v4"
)

// wireQueue buffers one A2E run's messages between the engine (which must
// not block on a slow client) and the handler that writes them.
type wireQueue struct {
	mu     sync.Mutex
	msgs   []a2e.EventMessage
	signal chan struct{}
	reqID  string
}

func newWireQueue(reqID string) *wireQueue {
	return &wireQueue{reqID: reqID, signal: make(chan struct{}, 1)}
}

// Emit implements engine.EventSink.
func (q *wireQueue) Emit(ev engine.Event) {
	m := a2e.NewEventMessage(q.reqID, ev)
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *wireQueue) take() []a2e.EventMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// writer frames messages as SSE or NDJSON, through a StreamWriter (its
// write deadline and byte budget).
type writer struct {
	c       echo.Context
	out     StreamWriter
	ndjson  bool
	started bool
}

// newWriter opens a streaming answer of a kind (StreamRun,
// StreamSession); close it when the handler ends.
func (s *Handler) newWriter(c echo.Context, kind string, ndjson bool) *writer {
	return &writer{c: c, out: s.openStream(c, kind), ndjson: ndjson}
}

// close gives back what the stream holds.
func (w *writer) close() { w.out.Close() }

// start sends the status line and headers once.
func (w *writer) start() error {
	if w.started {
		return w.out.Err()
	}
	w.started = true
	h := w.c.Response().Header()
	if w.ndjson {
		h.Set(echo.HeaderContentType, MIMENDJSON)
	} else {
		h.Set(echo.HeaderContentType, "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("X-Accel-Buffering", "no")
	}
	return w.out.Start(http.StatusOK)
}

func (w *writer) write(typ string, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return w.writeRaw(typ, b)
}

// writeRaw frames one encoded message; flush sends it.
func (w *writer) writeRaw(typ string, b []byte) error {
	if err := w.start(); err != nil {
		return err
	}
	var frame []byte
	if w.ndjson {
		frame = make([]byte, 0, len(b)+1)
		frame = append(append(frame, b...), '\n')
	} else {
		frame = make([]byte, 0, len(b)+32)
		frame = append(frame, "event: "...)
		frame = append(frame, typ...)
		frame = append(frame, "\ndata: "...)
		frame = append(frame, b...)
		frame = append(frame, "\n\n"...)
	}
	return w.out.Append(w.c.Request().Context(), frame)
}

// comment writes an SSE comment line (a heartbeat) and flushes it.
func (w *writer) comment(text string) error {
	if err := w.start(); err != nil {
		return err
	}
	if err := w.out.Append(w.c.Request().Context(), []byte(": "+text+"\n\n")); err != nil {
		return err
	}
	return w.flush()
}

// flush writes what is buffered and flushes the connection, within the
// write deadline.
func (w *writer) flush() error {
	if !w.started {
		return nil
	}
	return w.out.Flush()
}

// acceptsNDJSON reports whether the client asked for NDJSON rather than SSE.
func acceptsNDJSON(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(mt), MIMENDJSON) {
			return true
		}
	}
	return false
}

// POST /v1/a2e: run an A2E chain/req and answer with chain/event messages and
// the closing chain/resp (SSE by default, NDJSON by Accept), or one chain/resp
// JSON when the request says streaming: false.
func (s *Handler) Run(c echo.Context) error {
	body, err := httpcore.ReadBody(c)
	if err != nil {
		return err
	}
	noteEnvelope(c, body)
	doc, req, err := httpcore.DecodeDocument(body, s.cfg.Limits)
	if err != nil {
		return err
	}
	if req == nil {
		return httpcore.Error(httpcore.EBADREQUEST, chain.CodeDecode,
			`the body is a studio chain document, not an A2E message: send {"type": "chain/req", ...} (or run a saved chain with POST /v1/chains/{id}/runs)`, map[string]any{"path": "type"})
	}
	input := req.InitialInput
	if input == nil {
		input = map[string]any{}
	}
	ctx := c.Request().Context()
	// The run service validates the chain as a saved chain is before its
	// run (the host's tools, schemas, sub-chains): a chain with errors is
	// answered chain_invalid, nothing run.
	var invalid *runs.InvalidChainError
	if !req.IsStreaming() {
		res, err := s.runs.RunAdHoc(ctx, doc, input, store.KindA2E, nil)
		if errors.As(err, &invalid) {
			return c.JSON(http.StatusOK, a2e.NewInvalidResponse(req, invalid.Issues))
		}
		if res == nil {
			return err
		}
		return c.JSON(http.StatusOK, a2e.NewResponseMessage(req, res))
	}

	q := newWireQueue(req.ID)
	type outcome struct {
		res *engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.runs.RunAdHoc(ctx, doc, input, store.KindA2E, q)
		done <- outcome{res, err}
	}()
	w := s.newWriter(c, StreamRun, acceptsNDJSON(c.Request().Header.Get(echo.HeaderAccept)))
	defer w.close()
	send := func() error {
		for _, m := range q.take() {
			if err := w.write(a2e.TypeEvent, m); err != nil {
				return err
			}
		}
		return w.flush()
	}
	for {
		select {
		case <-q.signal:
			if err := send(); err != nil {
				return nil // the client left; returning cancels ctx, which stops the run
			}
		case out := <-done:
			if err := send(); err != nil {
				return nil
			}
			if out.res == nil {
				if errors.As(out.err, &invalid) {
					if w.write(a2e.TypeResponse, a2e.NewInvalidResponse(req, invalid.Issues)) == nil {
						_ = w.flush()
					}
					return nil
				}
				if !w.started {
					return out.err
				}
				resp := a2e.NewResponseMessage(req, nil)
				resp.Error = &a2e.WireError{Code: "host_error", Message: out.err.Error()}
				if w.write(a2e.TypeResponse, resp) == nil {
					_ = w.flush()
				}
				return nil
			}
			if err := w.write(a2e.TypeResponse, a2e.NewResponseMessage(req, out.res)); err != nil {
				return nil
			}
			_ = w.flush()
			return nil
		}
	}
}

// envelopeKey holds, for the error handler, the id and chain_id of the
// A2E message a request carried, so a refusal answers it by req_id.
const envelopeKey = "a2e.envelope"

// noteEnvelope reads what it can of a message's envelope.
func noteEnvelope(c echo.Context, body []byte) {
	var env struct {
		ID      any `json:"id"`
		ChainID any `json:"chain_id"`
	}
	_ = json.Unmarshal(body, &env)
	id, _ := env.ID.(string)
	chainID, _ := env.ChainID.(string)
	c.Set(envelopeKey, &chain.Request{ID: id, ChainID: chainID})
}

// IsPath reports whether a request is for the A2E door, whose every
// answer, an error too, is an A2E message.
func IsPath(p string) bool {
	return p == "/v1/a2e" || strings.HasPrefix(p, "/v1/a2e/")
}

// ErrorResponse is an API error as A2E's answer: a chain/resp with
// success false and the error's code, message and details (the HTTP status
// stays the error's). The SDK's client rejects a message without a type.
func ErrorResponse(c echo.Context, ae *httpcore.APIError) a2e.ResponseMessage {
	req, _ := c.Get(envelopeKey).(*chain.Request)
	resp := a2e.NewResponseMessage(req, nil)
	resp.Error = &a2e.WireError{Code: ae.Code, Message: ae.Message, Details: detailsMap(ae.Details)}
	return resp
}

// detailsMap is an API error's details as a chain/resp error's.
func detailsMap(d any) map[string]any {
	switch v := d.(type) {
	case nil:
		return nil
	case map[string]any:
		return v
	}
	return map[string]any{"details": d}
}
