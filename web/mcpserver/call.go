package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/runs"
	"github.com/chainstudio/studio/store"
	"github.com/chainstudio/studio/web/httpcore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call is a run: started as the run service starts every run,
// followed to its end with progress notes, its pauses asked of the client
// when it can answer them.

// callTool runs the tool's chain with the arguments as input and answers with
// the run's outcome; see result.
func (h *Handler) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	t, ok := h.tools[req.Params.Name]
	h.mu.Unlock()
	if !ok {
		return toolError(fmt.Sprintf("no chain is exposed as the tool %q any more; list the tools again", req.Params.Name)), nil
	}
	sess, ok := h.sessionOf(req.Session.ID())
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
	ch, err := h.db.GetPublishedChain(ctx, t.chainID)
	if err != nil {
		if store.ErrorCode(err) == store.ENOTFOUND {
			return toolError(fmt.Sprintf("the chain behind the tool %q was deleted", req.Params.Name)), nil
		}
		return nil, fmt.Errorf("read chain %s: %w", t.chainID, err)
	}
	if !ch.MCPExposed {
		return toolError(fmt.Sprintf("the chain %q is no longer exposed as a tool", ch.Name)), nil
	}
	// The arguments must fit the input schema the tool advertises (the
	// SDK checks only tools it types itself): a client's model reads the
	// tool error and can call again with the field put right.
	var sample map[string]any
	if ch.Doc != nil {
		sample = ch.Doc.SampleInput
	}
	if probs := chain.CheckSchema(inputSchema(sample), argsValue(input), "arguments", maxArgProblems); len(probs) > 0 {
		msgs := make([]string, len(probs))
		for i, p := range probs {
			msgs[i] = p.String()
		}
		return toolError(fmt.Sprintf("the arguments do not fit the input schema of the tool %q: %s", req.Params.Name, strings.Join(msgs, "; "))), nil
	}
	runID, err := h.runs.StartTriggered(ctx, ch, input, runs.Trigger{Kind: store.TriggerMCP, ID: sess.id.Name})
	if err != nil {
		// Refusals a client can act on (an invalid chain, a full queue,
		// shutdown) are the tool's error; the API's table words them.
		return toolError(fmt.Sprintf("the run did not start: %s", h.errorFor(err).Message)), nil
	}
	h.log.Info("mcp: tool call started a run", "tool", req.Params.Name, "chain_id", ch.ID, "run_id", runID, "user", sess.id.Name)
	c := &toolCall{h: h, req: req, runID: runID, base: sess.base, token: req.Params.GetProgressToken()}
	return c.follow(ctx)
}

// maxArgProblems bounds the argument problems one tool error names.
const maxArgProblems = 10

// argsValue is the arguments as the schema sees them: none is an empty object.
func argsValue(input map[string]any) any {
	if input == nil {
		return map[string]any{}
	}
	return input
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// toolCall follows one call's run to its end, a pause it cannot answer, or
// the client's cancellation.
type toolCall struct {
	h     *Handler
	req   *mcp.CallToolRequest
	runID string
	base  string
	token any // the client's progress token; nil: no progress wanted
	done  int // nodes finished, the progress count
	last  int64
}

func (c *toolCall) follow(ctx context.Context) (*mcp.CallToolResult, error) {
	for asked := 0; ; {
		if err := c.wait(ctx); err != nil {
			if ctx.Err() != nil {
				// notifications/cancelled, or the client went away: the
				// run stops with the call.
				c.h.runs.Cancel(c.runID)
				c.h.log.Info("mcp: tool call cancelled by its client; run cancelled", "run_id", c.runID)
				return nil, ctx.Err()
			}
			return nil, err
		}
		r, err := c.h.db.GetRun(ctx, c.runID)
		if err != nil {
			return nil, fmt.Errorf("read run %s: %w", c.runID, err)
		}
		if r.Status != chain.StatusPaused {
			return c.result(r, nil), nil
		}
		pending, err := httpcore.PendingPauses(ctx, c.h.db, r)
		if err != nil {
			return nil, err
		}
		if asked >= maxElicitations || len(pending) == 0 {
			return c.result(r, pending), nil
		}
		answered, err := c.ask(ctx, pending[0])
		if err != nil || !answered {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the paused run stays paused: the person may answer on its page
			}
			res := c.result(r, pending)
			if err != nil {
				res.Content = append(res.Content, &mcp.TextContent{Text: "The answer was not taken: " + c.h.errorFor(err).Message})
			}
			return res, nil
		}
		asked++
	}
}

// wait returns once the run is neither queued nor running, sending a
// progress notification for each node that finishes (runs.Watch: the live
// events, else what the store holds).
func (c *toolCall) wait(ctx context.Context) error {
	for {
		if err := c.watchOnce(ctx); err != nil {
			return err
		}
		info, err := c.h.db.GetRunInfo(ctx, c.runID)
		if err != nil {
			return fmt.Errorf("read run %s: %w", c.runID, err)
		}
		if info.Status != chain.StatusQueued && info.Status != chain.StatusRunning {
			return nil
		}
		// Executing in another process, or its watch was dropped: look
		// again shortly.
		t := time.NewTimer(pollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (c *toolCall) watchOnce(ctx context.Context) error {
	w, err := c.h.runs.Watch(c.runID, c.last)
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

// replay reads the events after seq after, a page at a time.
func (c *toolCall) replay(ctx context.Context, after int64) (int64, error) {
	for {
		evs, err := c.h.runs.Events(ctx, c.runID, after, 256, 0)
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
func (c *toolCall) event(ctx context.Context, ev *engine.Event) {
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
func (c *toolCall) ask(ctx context.Context, p engine.Pending) (answered bool, err error) {
	ss := c.req.Session
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false, nil
	}
	sess, ok := c.h.sessionOf(ss.ID())
	if !ok || !httpcore.RoleAllows(sess.id.Role, httpcore.ActAnswer) {
		return false, nil // an editor does not answer the pauses of the runs it starts
	}
	if err := httpcore.RequireApprover(ctx, c.h.db, sess.id, c.runID, p.PauseID); err != nil {
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
	if err := c.h.runs.ResumePause(ctx, c.runID, p.PauseID, value, nil); err != nil {
		return false, err
	}
	c.h.log.Info("mcp: pause answered through the client", "run_id", c.runID, "pause_id", p.PauseID, "user", sess.id.Name, "action", ar.Action)
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
func (c *toolCall) result(r *store.Run, pending []engine.Pending) *mcp.CallToolResult {
	url := c.base + "/runs/" + r.ID
	sc := map[string]any{"run_id": r.ID, "run_url": url, "status": string(r.Status)}
	var text strings.Builder
	res := &mcp.CallToolResult{}
	switch r.Status {
	case chain.StatusCompleted, chain.StatusPartial:
		sc["output"] = r.FinalOutput
		b, err := json.MarshalIndent(r.FinalOutput, "", "  ")
		if err != nil {
			b = []byte(fmt.Sprint(r.FinalOutput))
		}
		text.Write(b)
		fmt.Fprintf(&text, "\n\nRun %s %s: %s", r.ID, r.Status, url)
	case chain.StatusPaused:
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
