package api

import (
	"fmt"
	"net/http"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// jsonOpts write the bytes encoding/json writes.
var jsonOpts = jsonv1.DefaultOptionsV1()

// writeJSON writes v as the answer, streamed: the encoder hands the response
// what it has encoded as it goes, so an answer is never held whole in one
// buffer (encoding/json's Encoder, and so echo's c.JSON, encodes the whole
// value before writing a byte). Only one large string is held at once.
func writeJSON(c echo.Context, status int, v any) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	if err := jsonv2.MarshalWrite(c.Response(), v, jsonOpts); err != nil {
		// The status line is gone: the client sees a cut answer.
		return fmt.Errorf("writing the answer: %w", err)
	}
	return nil
}

// GET /v1/runs/{id}/nodes/{node}/output and …/input: one node's recorded
// output or input, streamed (the href of an elided value).
func (s *Runs) RunNodeValue(part string) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		id, node := c.Param("id"), c.Param("node")
		if _, err := s.DB.GetRunInfo(ctx, id); err != nil {
			return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
		}
		nr, err := s.DB.GetRunNode(ctx, id, node)
		if err != nil {
			return err
		}
		var v any
		if nr != nil {
			v = nr.Output
			if part == "input" {
				v = nr.Input
			} else if v != nil && nr.Credentialed && !s.SeesCredentialed(c) {
				v = ops.WithheldValue
			}
		}
		if v == nil {
			return httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("run %q has no recorded %s of node %q (the node has not finished, is not in the run, or has none)", id, part, node),
				map[string]any{"node_id": node})
		}
		return writeJSON(c, http.StatusOK, v)
	}
}

// GET /v1/runs/{id}/final-output: a run's final output, streamed.
func (s *Runs) RunFinalOutput(c echo.Context) error {
	id := c.Param("id")
	r, err := s.DB.GetRunInfo(c.Request().Context(), id)
	if err != nil {
		return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
	}
	if r.FinalOutput == nil {
		return httpcore.Error(httpcore.ENOTFOUND, "not_found", fmt.Sprintf("run %q has no final output (status %s)", id, r.Status), map[string]any{"status": r.Status})
	}
	if !s.SeesCredentialed(c) {
		// Which node produced it is in the node results, which the run's
		// info does not carry.
		full, err := s.DB.GetRun(c.Request().Context(), id)
		if err != nil {
			return httpcore.StoreErr(err, fmt.Sprintf("run %q", id))
		}
		r = ops.WithheldRun(full)
	}
	return writeJSON(c, http.StatusOK, r.FinalOutput)
}
