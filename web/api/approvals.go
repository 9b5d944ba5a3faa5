package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/chainstudio/studio/web/ops"
	"github.com/labstack/echo/v4"
)

// readAnswer reads a resume request's body: the value (resume_value, or
// value), action, comment, modified_state and pause_id. What they mean, and
// the rules an answer keeps, are the engine's (engine.ReadAnswer).
func readAnswer(c echo.Context) (*engine.ResumeValue, map[string]any, string, error) {
	var raw map[string]json.RawMessage
	if err := httpcore.BindJSON(c, &raw); err != nil {
		return nil, nil, "", err
	}
	var (
		req     engine.AnswerRequest
		pauseID string
	)
	fields := "resume_value, value, action, comment, modified_state, pause_id"
	for k, v := range raw {
		switch k {
		case "resume_value", "value": // present, even as null, is a value
			if _, both := raw["resume_value"]; both && k == "value" {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", "send the value as resume_value or value, not both", map[string]any{"path": k})
			}
			if err := json.Unmarshal(v, &req.Value); err != nil {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", k+": "+err.Error(), map[string]any{"path": k})
			}
			req.HasValue = true
		case "action":
			if err := json.Unmarshal(v, &req.Action); err != nil {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", "action must be a string: approve, reject or respond", map[string]any{"path": k})
			}
			if req.Action == "" { // sent, it must name one
				return nil, nil, "", httpcore.Error(httpcore.EINVALID, engine.CodeInvalidAnswer, `action must be approve, reject or respond, got ""`, map[string]any{"field": "action"})
			}
		case "comment":
			if err := json.Unmarshal(v, &req.Comment); err != nil {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", "comment must be a string", map[string]any{"path": k})
			}
		case "pause_id": // which pause, when several wait (map items, branches, sub-chains)
			if err := json.Unmarshal(v, &pauseID); err != nil || pauseID == "" || len(pauseID) > engine.MaxPauseID {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", fmt.Sprintf("pause_id must be a non-empty string of at most %d bytes", engine.MaxPauseID), map[string]any{"path": k})
			}
		case "modified_state":
			if err := json.Unmarshal(v, &req.Modified); err != nil {
				return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", "modified_state must be a JSON object", map[string]any{"path": k})
			}
		default:
			return nil, nil, "", httpcore.Error(httpcore.EBADREQUEST, "bad_json", fmt.Sprintf("unknown field %q (%s)", k, fields), map[string]any{"path": k})
		}
	}
	value, modified, err := engine.ReadAnswer(req)
	if err != nil {
		return nil, nil, "", err
	}
	if value != nil {
		ops.AuditAnswer(c, value)
	}
	return value, modified, pauseID, nil
}

// interruptJSON is one entry of the inbox.
type interruptJSON struct {
	RunID        string         `json:"run_id"`
	NodeID       string         `json:"node_id"`
	ChainID      string         `json:"chain_id,omitempty"`
	ChainName    string         `json:"chain_name"`
	Prompt       any            `json:"prompt,omitempty"`
	WaitingSince time.Time      `json:"waiting_since"`
	Deadline     *time.Time     `json:"deadline,omitempty"`
	OnTimeout    string         `json:"on_timeout,omitempty"`
	Approvers    []string       `json:"approvers"`
	Schema       map[string]any `json:"schema,omitempty"`
	Proposed     any            `json:"proposed,omitempty"`
	// Fields: what the node's config.fields names, as it paused.
	Fields    []engine.ApprovalField `json:"fields,omitempty"`
	Actions   []string               `json:"actions"`
	AnswerURL string                 `json:"answer_url"`
}

func toInterruptJSON(it store.Interrupt) interruptJSON {
	out := interruptJSON{RunID: it.RunID, NodeID: it.NodeID, ChainID: it.ChainID, ChainName: it.ChainName, Prompt: it.Prompt,
		WaitingSince: it.Since, Approvers: []string{}, Actions: []string{engine.ActionRespond},
		AnswerURL: "/v1/runs/" + it.RunID + "/resume"}
	if !it.Deadline.IsZero() {
		d := it.Deadline
		out.Deadline = &d
	}
	if a := it.Approval; a != nil { // an interrupt node (a tool's pause takes a value only)
		out.OnTimeout, out.Schema, out.Proposed, out.Fields = a.OnTimeout, a.Schema, a.Proposed, a.Fields
		if a.Approvers != nil {
			out.Approvers = a.Approvers
		}
		out.Actions = []string{engine.ActionApprove, engine.ActionReject, engine.ActionRespond}
	}
	return out
}

// GET /v1/interrupts?chain=&run=&q=&sort=&limit=
func (s *Runs) ListInterrupts(c echo.Context) error {
	f, err := ops.InterruptsQuery(c)
	if err != nil {
		return err
	}
	list, err := s.DB.ListInterrupts(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := make([]interruptJSON, 0, len(list))
	for _, it := range list {
		out = append(out, toInterruptJSON(it))
	}
	return c.JSON(http.StatusOK, map[string]any{"interrupts": out, "limit": f.Limit})
}

// runAnswers returns the audit of a run's answers.
func (s *Runs) runAnswers(ctx context.Context, runID string) ([]ops.AnswerJSON, error) {
	recs, err := s.DB.Answers(ctx, runID)
	if err != nil {
		return nil, err
	}
	out := make([]ops.AnswerJSON, 0, len(recs))
	for _, r := range recs {
		a := ops.AnswerJSON{NodeID: r.NodeID, Action: r.Action, Value: r.Value, Comment: r.Comment, By: r.By, Address: r.Address, At: r.At}
		if a.Action == "" {
			a.Action = engine.ActionRespond
		}
		if a.By == "" {
			a.By = "unknown" // answered before answers were audited
		}
		out = append(out, a)
	}
	return out, nil
}
