package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/a2e"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// MIMENDJSON is newline-delimited JSON, one A2E message per line.
const MIMENDJSON = "application/x-ndjson"

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

// a2eWriter frames messages as SSE or NDJSON, through a streamWriter (its
// write deadline and byte budget).
type a2eWriter struct {
	c       echo.Context
	out     *streamWriter
	ndjson  bool
	started bool
}

// newA2EWriter opens a streaming answer of a kind (streamA2ERun,
// streamA2E); close it when the handler ends.
func (s *Server) newA2EWriter(c echo.Context, kind string, ndjson bool) *a2eWriter {
	return &a2eWriter{c: c, out: s.openStream(c, kind), ndjson: ndjson}
}

// close gives back what the stream holds.
func (w *a2eWriter) close() { w.out.close() }

// start sends the status line and headers once.
func (w *a2eWriter) start() error {
	if w.started {
		return w.out.err
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

func (w *a2eWriter) write(typ string, msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return w.writeRaw(typ, b)
}

// writeRaw frames one encoded message; flush sends it.
func (w *a2eWriter) writeRaw(typ string, b []byte) error {
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
func (w *a2eWriter) comment(text string) error {
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
func (w *a2eWriter) flush() error {
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
func (s *Server) a2eRun(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	a2eNoteEnvelope(c, body)
	doc, req, err := s.decodeDocumentBytes(body)
	if err != nil {
		return err
	}
	if req == nil {
		return apiError(EBADREQUEST, engine.CodeDecode,
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
	w := s.newA2EWriter(c, streamA2ERun, acceptsNDJSON(c.Request().Header.Get(echo.HeaderAccept)))
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

// a2eEnvelopeKey holds, for the error handler, the id and chain_id of the
// A2E message a request carried, so a refusal answers it by req_id.
const a2eEnvelopeKey = "a2e.envelope"

// a2eNoteEnvelope reads what it can of a message's envelope.
func a2eNoteEnvelope(c echo.Context, body []byte) {
	var env struct {
		ID      any `json:"id"`
		ChainID any `json:"chain_id"`
	}
	_ = json.Unmarshal(body, &env)
	id, _ := env.ID.(string)
	chainID, _ := env.ChainID.(string)
	c.Set(a2eEnvelopeKey, &engine.Request{ID: id, ChainID: chainID})
}

// isA2EPath reports whether a request is for the A2E door, whose every
// answer, an error too, is an A2E message.
func isA2EPath(p string) bool {
	return p == "/v1/a2e" || strings.HasPrefix(p, "/v1/a2e/")
}

// a2eErrorResponse is an API error as A2E's answer: a chain/resp with
// success false and the error's code, message and details (the HTTP status
// stays the error's). The SDK's client rejects a message without a type.
func a2eErrorResponse(c echo.Context, ae *APIError) a2e.ResponseMessage {
	req, _ := c.Get(a2eEnvelopeKey).(*engine.Request)
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
