package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/labstack/echo/v4"
)

// MIMENDJSON is newline-delimited JSON, one A2E message per line.
const MIMENDJSON = "application/x-ndjson"

// wireQueue buffers one A2E run's messages between the engine (which must
// not block on a slow client) and the handler that writes them.
type wireQueue struct {
	mu     sync.Mutex
	msgs   []engine.EventMessage
	signal chan struct{}
	reqID  string
}

func newWireQueue(reqID string) *wireQueue {
	return &wireQueue{reqID: reqID, signal: make(chan struct{}, 1)}
}

// Emit implements engine.EventSink.
func (q *wireQueue) Emit(ev engine.Event) {
	m := engine.NewEventMessage(q.reqID, ev)
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *wireQueue) take() []engine.EventMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// a2eWriter frames messages as SSE or NDJSON.
type a2eWriter struct {
	c       echo.Context
	ndjson  bool
	started bool
}

func (w *a2eWriter) start() {
	if w.started {
		return
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
	w.c.Response().WriteHeader(http.StatusOK)
}

func (w *a2eWriter) write(typ string, msg any) error {
	w.start()
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	var frame []byte
	if w.ndjson {
		frame = append(b, '\n')
	} else {
		frame = make([]byte, 0, len(b)+32)
		frame = append(frame, "event: "...)
		frame = append(frame, typ...)
		frame = append(frame, "\ndata: "...)
		frame = append(frame, b...)
		frame = append(frame, "\n\n"...)
	}
	_, err = w.c.Response().Write(frame)
	return err
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

	if !req.IsStreaming() {
		res, err := s.runs.RunAdHoc(ctx, doc, input, store.KindA2E, nil)
		if res == nil {
			return err
		}
		return c.JSON(http.StatusOK, engine.NewResponseMessage(req, res))
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
	w := &a2eWriter{c: c, ndjson: acceptsNDJSON(c.Request().Header.Get(echo.HeaderAccept))}
	send := func() error {
		for _, m := range q.take() {
			if err := w.write(engine.TypeEvent, m); err != nil {
				return err
			}
		}
		if w.started {
			c.Response().Flush()
		}
		return nil
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
				if !w.started {
					return out.err
				}
				resp := engine.NewResponseMessage(req, nil)
				resp.Error = &engine.WireError{Code: "host_error", Message: out.err.Error()}
				_ = w.write(engine.TypeResponse, resp)
				c.Response().Flush()
				return nil
			}
			if err := w.write(engine.TypeResponse, engine.NewResponseMessage(req, out.res)); err != nil {
				return nil
			}
			c.Response().Flush()
			return nil
		}
	}
}
