package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine"
	"github.com/chainstudio/studio/engine/chain"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/tool"
)

// The steps a model agent reports as progress events on its node
// (docs/agents.md, "What a run shows").
const (
	StepModelCall  = "model_call"
	StepText       = "text"
	StepToolCall   = "tool_call"
	StepToolResult = "tool_result"
	StepRepair     = "repair"
	// StepWarning ends a run of the agent whose tool calls failed: the
	// model carried on, so the node is done, and this says what went wrong.
	StepWarning = "warning"
	// StepCallsRefused is a turn that asked for more tool calls than
	// max_tool_calls has left: none of them ran, and this one event (not
	// one per call) says so.
	StepCallsRefused = "tool_calls_refused"
)

// Statuses of a tool call.
const (
	CallOK       = "ok"
	CallError    = "error"
	CallRejected = "rejected" // a person rejected it
	CallRefused  = "refused"  // unknown tool, or max_tool_calls used up
)

// loopMarker tells this loop's pause state from any other value a node
// could be resumed with.
const loopMarker = "agent-loop/1"

// loopState is a model agent's conversation so far. It is what the agent
// pauses with at a gated tool call and carries on from when the call is
// answered, so that no model turn is made twice.
type loopState struct {
	Loop     string        `json:"loop"`
	Agent    string        `json:"agent"`
	Messages []llm.Message `json:"messages"`
	// Results are the answered calls of the last turn, by call id, until
	// every call of the turn has one.
	Results map[string]callRecord `json:"results,omitempty"`
	// Waiting is the gated call the pause asks about.
	Waiting string `json:"waiting,omitempty"`
	Turns   int    `json:"turns"`   // model calls made
	Repairs int    `json:"repairs"` // of them, asks for a reply that fits the schema
	Used    int    `json:"used"`    // tool calls counted against max_tool_calls
	// RefusedTurns are the turns refused whole for asking more calls than
	// max_tool_calls had left; RefusedCalls the calls they asked for.
	RefusedTurns int `json:"refused_turns,omitempty"`
	RefusedCalls int `json:"refused_calls,omitempty"`
	// Calls are every finished call, in order, for the node's output.
	Calls []callRecord `json:"calls,omitempty"`
	// Memory is where the conversation is kept, with an agent's memory.
	Memory *memoryState `json:"memory,omitempty"`
}

// callRecord is one tool call: what the model asked, what came back.
type callRecord struct {
	Turn       int    `json:"turn"`
	CallID     string `json:"call_id"`
	Tool       string `json:"tool"`
	Kind       string `json:"kind,omitempty"`
	Input      any    `json:"input,omitempty"`
	Output     any    `json:"output,omitempty"`
	Error      string `json:"error,omitempty"`
	Status     string `json:"status"`
	DurationMS int64  `json:"duration_ms"`
	// Content is what the model is sent as the result.
	Content string `json:"content"`
}

// view is the record as the node's output and events show it.
func (c callRecord) view() map[string]any {
	m := map[string]any{"turn": c.Turn, "call_id": c.CallID, "tool": c.Tool, "status": c.Status, "duration_ms": c.DurationMS}
	if c.Kind != "" {
		m["kind"] = c.Kind
	}
	if c.Input != nil {
		m["input"] = c.Input
	}
	if c.Output != nil {
		m["output"] = c.Output
	}
	if c.Error != "" {
		m["error"] = c.Error
	}
	return m
}

// offered is what the model is offered: the tools with their schemas.
type offered struct {
	tools   []llm.Tool
	schemas map[string]map[string]any // by call name: the schema arguments are checked against
}

// runModel runs a model agent: model turns, the tool calls they ask for,
// and asks again for a reply that fails the output schema (repair).
func (rt *Runtime) runModel(ctx context.Context, def *Definition, input map[string]any, emit tool.Emitter) (map[string]any, error) {
	em := newStepEmitter(def.Name, emit)
	defer em.close()
	k, _ := rt.model().Providers.Get(def.Model.ProviderOrDefault()) // an unknown one fails at the call
	native := def.Schema() != nil && len(def.Tools) == 0 && def.Model.NativeSchema(k)
	st, ans, err := rt.startLoop(ctx, def, input, native, em)
	if err != nil {
		return nil, err
	}
	tools, err := rt.offer(ctx, def)
	if err != nil {
		return nil, err
	}
	maxSteps := def.MaxStepsOrDefault()
	for {
		if calls := st.pendingCalls(); len(calls) > 0 {
			refused, err := st.refuseOverLimit(def, calls, em)
			if err != nil {
				return nil, err
			}
			if !refused {
				if err := rt.runCalls(ctx, def, st, calls, tools, ans, em); err != nil {
					return nil, err
				}
				st.answerCalls(calls)
			}
			ans = nil
			if st.Turns-st.Repairs >= maxSteps {
				return nil, fmt.Errorf("agent %q: the model still calls tools after max_steps (%d) turns; raise max_steps or check what its tools answer", def.Name, maxSteps)
			}
		}
		reply, err := rt.turn(ctx, def, st, tools, native, em)
		if err != nil {
			return nil, err
		}
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleAssistant, Text: reply.Text, ToolCalls: reply.ToolCalls})
		if len(reply.ToolCalls) > 0 {
			continue
		}
		if reply.Stop == llm.StopRefused && reply.Text == "" {
			return nil, fmt.Errorf("agent %q: model %s: the provider refused to answer", def.Name, def.Model.Name)
		}
		out := textResult(def, reply.Text)
		if reply.Stop == llm.StopRefused {
			// The model declined: its words are the answer, and asking
			// again for data would only be refused again.
			out["refused"] = true
			if def.Schema() != nil {
				out["data"], out["data_error"] = nil, "the model refused to answer: "+clip.String(reply.Text, 500)
			}
			rt.remember(ctx, def, st, out, em)
			return finish(out, st, em), nil
		}
		if msg, failed := out["data_error"].(string); failed && st.Repairs < def.RepairOrDefault() {
			st.Repairs++
			em.step(StepRepair, map[string]any{"attempt": st.Repairs, "of": def.RepairOrDefault(), "error": msg})
			st.Messages = append(st.Messages, llm.Message{Role: llm.RoleUser, Text: repairPrompt(def, msg, native)})
			continue
		}
		rt.remember(ctx, def, st, out, em)
		return finish(out, st, em), nil
	}
}

// finish adds the calls made, when there were any, to the result. Calls
// that failed (an error, or refused) are counted in tool_calls_failed and
// said in a warning, the node's last event: the model read the errors and
// answered, so the node is done, but a person looking at the run must see
// that its tools did not all work.
func finish(out map[string]any, st *loopState, em *stepEmitter) map[string]any {
	failed := 0
	if len(st.Calls) > 0 {
		views := make([]any, len(st.Calls))
		for i, c := range st.Calls {
			views[i] = c.view()
			if c.Status == CallError || c.Status == CallRefused {
				failed++
			}
		}
		out["tool_calls"] = views
	}
	var said []string
	warning := map[string]any{}
	if failed > 0 {
		out["tool_calls_failed"] = failed
		warning["failed"], warning["calls"] = failed, len(st.Calls)
		said = append(said, fmt.Sprintf("%d of %d tool calls failed", failed, len(st.Calls)))
	}
	if st.RefusedCalls > 0 {
		out["tool_calls_refused"] = st.RefusedCalls
		warning["refused"] = st.RefusedCalls
		said = append(said, fmt.Sprintf("%d tool calls refused over max_tool_calls", st.RefusedCalls))
	}
	if len(said) > 0 {
		warning["text"] = strings.Join(said, "; ")
		em.step(StepWarning, warning)
	}
	return out
}

// startLoop is the conversation to go on with: the state the agent paused
// with, when the node was resumed at one of its gated calls, else the
// earlier turns its memory keeps and the user message.
func (rt *Runtime) startLoop(ctx context.Context, def *Definition, input map[string]any, native bool, em *stepEmitter) (*loopState, *tool.Answer, error) {
	if a, ok := tool.AnswerFrom(ctx); ok {
		if st, ok := decodeState(a.State, def.Name); ok {
			return st, &a, nil
		}
	}
	user, err := renderPrompt(def, input)
	if err != nil {
		return nil, nil, err
	}
	ms, earlier, err := rt.recall(ctx, def, input, em)
	if err != nil {
		return nil, nil, err
	}
	if ms != nil {
		ms.User = user // kept without the schema instruction: every turn adds its own
	}
	if s := def.Schema(); s != nil && !native {
		b, _ := json.Marshal(s.Normalized())
		user += SchemaInstruction + string(b)
	}
	msgs := append(earlier, llm.Message{Role: llm.RoleUser, Text: user})
	return &loopState{Loop: loopMarker, Agent: def.Name, Messages: msgs, Memory: ms}, nil, nil
}

func decodeState(v any, agent string) (*loopState, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var st loopState
	if json.Unmarshal(b, &st) != nil || st.Loop != loopMarker || st.Agent != agent {
		return nil, false
	}
	return &st, true
}

// pendingCalls are the calls of the last turn when it asked for tools and
// they have not all been answered.
func (st *loopState) pendingCalls() []llm.ToolCall {
	if len(st.Messages) == 0 {
		return nil
	}
	last := st.Messages[len(st.Messages)-1]
	if last.Role != llm.RoleAssistant {
		return nil
	}
	return last.ToolCalls
}

// refuseOverLimit refuses the last turn whole when it asks for more calls
// than max_tool_calls has left: none runs, the run gets one event and the
// model one message (not a result per call, so a model asking for
// thousands of calls costs neither thousands of events nor a conversation
// thousands of messages long), and the turn's calls are dropped from the
// conversation. A model that asks for too many again, after being told,
// stops the loop. Calls of the turn answered already (a resumed gated
// call) were counted when the turn was first let through.
func (st *loopState) refuseOverLimit(def *Definition, calls []llm.ToolCall, em *stepEmitter) (bool, error) {
	asked := 0
	names := map[string]bool{}
	for _, c := range calls {
		if _, done := st.Results[c.ID]; !done {
			asked++
			names[c.Name] = true
		}
	}
	limit := def.MaxToolCallsOrDefault()
	left := max(limit-st.Used, 0)
	if asked <= left {
		return false, nil
	}
	if st.RefusedTurns > 0 {
		return false, fmt.Errorf("agent %q: turn %d asks for %d tool calls with %d of max_tool_calls (%d) left, after an earlier turn over the limit was refused; raise max_tool_calls or tell the model to make fewer calls",
			def.Name, st.Turns, asked, left, limit)
	}
	var msg string
	if left == 0 {
		msg = fmt.Sprintf("You asked for %d tool calls, but the agent's max_tool_calls (%d) is used up, so none of them ran. Answer with what you have, without calling tools.", asked, limit)
	} else {
		msg = fmt.Sprintf("You asked for %d tool calls in one turn, but the agent's max_tool_calls (%d) leaves %d, so none of them ran. Ask for at most %d calls, or answer with what you have.", asked, limit, left, left)
	}
	st.RefusedTurns++
	st.RefusedCalls += asked
	em.step(StepCallsRefused, map[string]any{"turn": st.Turns, "calls": asked, "tools": sortedNames(names, 20),
		"left": left, "max_tool_calls": limit, "error": msg})
	last := &st.Messages[len(st.Messages)-1]
	last.ToolCalls = nil
	if last.Text == "" {
		st.Messages = st.Messages[:len(st.Messages)-1]
	}
	st.Messages = append(st.Messages, llm.Message{Role: llm.RoleUser, Text: msg})
	st.Results, st.Waiting = nil, ""
	return true, nil
}

// sortedNames are the set's names in order, at most n of them.
func sortedNames(set map[string]bool, n int) []string {
	names := slices.Sorted(maps.Keys(set))
	return names[:min(len(names), n)]
}

// answerCalls appends the results of the last turn's calls, in the order
// the model made them.
func (st *loopState) answerCalls(calls []llm.ToolCall) {
	for _, c := range calls {
		r := st.Results[c.ID]
		st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, ToolName: c.Name,
			Text: r.Content, IsError: r.Status != CallOK})
		st.Calls = append(st.Calls, r)
	}
	st.Results, st.Waiting = nil, ""
}

// repairPrompt asks the model for a reply that fits the schema.
func repairPrompt(def *Definition, problem string, native bool) string {
	msg := "Your reply does not fit the required JSON Schema: " + problem + ". Reply again, fixing this."
	if !native {
		b, _ := json.Marshal(def.Schema().Normalized())
		msg += SchemaInstruction + string(b)
	}
	return msg
}

// offer builds the tools offered to the model, with their schemas.
func (rt *Runtime) offer(ctx context.Context, def *Definition) (*offered, error) {
	o := &offered{schemas: map[string]map[string]any{}}
	for i := range def.Tools {
		t := &def.Tools[i]
		declared, desc := map[string]any{"type": "object"}, ""
		switch t.Kind() {
		case "tool":
			if rt.Registry == nil || !rt.Registry.Has(t.Tool) {
				return nil, fmt.Errorf("agent %q: tools: tool %q does not exist on this host", def.Name, t.Tool)
			}
			if s, ok := rt.Registry.InputSchema(t.Tool); ok {
				declared = s
			}
			desc = rt.Registry.Description(t.Tool)
		case "chain":
			if rt.ChainTool == nil {
				return nil, fmt.Errorf("agent %q: tools: this host cannot run saved chains (chain %q)", def.Name, t.Chain)
			}
			c, err := rt.ChainTool(ctx, t.Chain)
			if err != nil {
				return nil, fmt.Errorf("agent %q: tools: chain %q: %w", def.Name, t.Chain, err)
			}
			declared, desc = c.ArgumentSchema(), c.Description
		}
		if m, ok := t.InputSchema.(map[string]any); ok {
			declared = m
		}
		o.schemas[t.CallName()] = declared
		o.tools = append(o.tools, llm.Tool{Name: t.CallName(), Description: describeTool(t, desc), InputSchema: offeredSchema(t, declared)})
	}
	return o, nil
}

// turn makes one model call: the conversation so far, the tools, the
// schema where the provider enforces it, the reply streamed to the run.
func (rt *Runtime) turn(ctx context.Context, def *Definition, st *loopState, tools *offered, native bool, em *stepEmitter) (*llm.Reply, error) {
	st.Turns++
	n := st.Turns
	req := llm.Request{System: def.SystemPrompt, Messages: st.Messages, Tools: tools.tools}
	if native {
		req.Schema, _ = json.Marshal(def.Schema().Normalized())
	}
	em.step(StepModelCall, map[string]any{"model": def.Model.Name, "provider": def.Model.ProviderOrDefault(), "turn": n})
	var stream *llm.Stream
	if def.Model.Streams() {
		stream = &llm.Stream{Text: func(d string) { em.text(n, d) }}
	}
	reply, err := rt.model().Turn(ctx, def.Name, def.Model, req, stream)
	em.flush()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, cause
		}
		return nil, err
	}
	// The run's record of what the call consumed (cost, the run page).
	u := engine.ModelUsage{Agent: def.Name, Model: def.Model.Name, InputTokens: reply.Usage.InputTokens,
		OutputTokens: reply.Usage.OutputTokens, Reported: reply.Usage.Reported}.Progress()
	u["turn"] = n
	em.emit(u)
	return reply, nil
}

// runCalls answers the last turn's calls: ungated ones run (several at
// once), a gated one runs once a person approved it. The first gated call
// without an answer pauses the node with the conversation as its state.
func (rt *Runtime) runCalls(ctx context.Context, def *Definition, st *loopState, calls []llm.ToolCall, tools *offered, ans *tool.Answer, em *stepEmitter) error {
	if st.Results == nil {
		st.Results = map[string]callRecord{}
	}
	turn := st.Turns
	type job struct {
		call llm.ToolCall
		spec *ToolSpec
		args map[string]any
	}
	var ready []job
	var gated []job
	for _, c := range calls {
		if _, done := st.Results[c.ID]; done {
			continue
		}
		spec, ok := def.ToolByName(c.Name)
		if !ok {
			st.Results[c.ID] = refused(turn, c, fmt.Sprintf("there is no tool %q; the tools are %s", c.Name, toolNames(def)))
			em.result(st.Results[c.ID])
			continue
		}
		args, err := arguments(c.Arguments, tools.schemas[c.Name], spec.Input)
		if err != nil {
			r := callRecord{Turn: turn, CallID: c.ID, Tool: c.Name, Kind: spec.Kind(), Status: CallError, Error: err.Error(), Content: "error: " + err.Error()}
			st.Results[c.ID] = r
			em.result(r)
			continue
		}
		st.Used++
		if spec.Gated() {
			gated = append(gated, job{c, spec, args})
		} else {
			ready = append(ready, job{c, spec, args})
		}
	}
	// Ungated calls run at once, a few at a time.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fatal error
	sem := make(chan struct{}, maxParallelToolCalls)
	for _, j := range ready {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := rt.execCall(ctx, def, j.spec, j.call, j.args, turn, em)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fatal = err
				return
			}
			st.Results[j.call.ID] = r
		}()
	}
	wg.Wait()
	if fatal != nil {
		return fatal
	}
	for k, j := range gated {
		if ans == nil || st.Waiting != j.call.ID {
			// Uncount the calls that wait: they count again when they run.
			st.Used -= len(gated) - k
			st.Waiting = j.call.ID
			return tool.ApprovalInterrupt(approvalPrompt(def, j.call.Name, j.args), j.args, st)
		}
		a := ans
		ans = nil
		if a.Action == engine.ActionReject {
			msg := "a person rejected this call"
			if a.By != "" {
				msg = a.By + " rejected this call"
			}
			if a.Comment != "" {
				msg += ": " + a.Comment
			}
			r := callRecord{Turn: turn, CallID: j.call.ID, Tool: j.call.Name, Kind: j.spec.Kind(), Input: j.args, Status: CallRejected, Error: msg, Content: msg}
			st.Results[j.call.ID] = r
			em.result(r)
			continue
		}
		args := j.args
		if edited, ok := a.Value.(map[string]any); ok {
			// Approved as a person edited it: held to the same schema.
			checked, err := arguments(json.RawMessage(compactJSON(edited)), tools.schemas[j.call.Name], j.spec.Input)
			if err != nil {
				msg := "the arguments a person approved do not fit: " + err.Error()
				r := callRecord{Turn: turn, CallID: j.call.ID, Tool: j.call.Name, Kind: j.spec.Kind(), Input: edited, Status: CallError, Error: msg, Content: "error: " + msg}
				st.Results[j.call.ID] = r
				em.result(r)
				continue
			}
			args = checked
		}
		r, err := rt.execCall(ctx, def, j.spec, j.call, args, turn, em)
		if err != nil {
			return err
		}
		st.Results[j.call.ID] = r
	}
	return nil
}

// approvalPrompt is what the inbox shows for a gated call.
func approvalPrompt(def *Definition, name string, args map[string]any) map[string]any {
	return map[string]any{
		"question":  fmt.Sprintf("The agent %s wants to call %s. Approve to run it with these arguments (or edit them first); reject to tell the model no.", def.Name, name),
		"agent":     def.Name,
		"tool":      name,
		"arguments": args,
	}
}

func refused(turn int, c llm.ToolCall, msg string) callRecord {
	return callRecord{Turn: turn, CallID: c.ID, Tool: c.Name, Status: CallRefused, Error: msg, Content: "error: " + msg}
}

func toolNames(def *Definition) string {
	names := make([]string, len(def.Tools))
	for i := range def.Tools {
		names[i] = def.Tools[i].CallName()
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// arguments reads the model's arguments as a JSON object and checks them,
// with the entry's static input merged over them as the call will run, against
// the tool's schema: the static keys are not offered to the model, so its
// arguments alone may lack a required one. The error is sent back to the
// model, which can correct itself. The arguments are returned as the model
// wrote them (the static input is merged again when the call runs).
func arguments(raw json.RawMessage, schema map[string]any, static map[string]any) (map[string]any, error) {
	var args map[string]any
	text := strings.TrimSpace(string(raw))
	if text == "" {
		text = "{}"
	}
	if err := json.Unmarshal([]byte(text), &args); err != nil || args == nil {
		return nil, fmt.Errorf("the arguments are not a JSON object (%s): %s", clip.String(text, 200), jsonProblem(err))
	}
	merged := args
	if len(static) > 0 {
		merged = maps.Clone(args)
		maps.Copy(merged, static)
	}
	if probs := chain.CheckSchema(schema, merged, "", 5); len(probs) > 0 {
		parts := make([]string, len(probs))
		for i, p := range probs {
			parts[i] = strings.TrimPrefix(p.String(), ": ")
		}
		return nil, fmt.Errorf("the arguments do not fit the tool's input schema: %s", strings.Join(parts, "; "))
	}
	return args, nil
}

func jsonProblem(err error) string {
	if err == nil {
		return "null is not an object"
	}
	return err.Error()
}

// execCall runs one call through its tool or chain, with the entry's
// timeout and retries. A cancelled node stops the loop (the error is
// returned); any other failure is the call's result.
func (rt *Runtime) execCall(ctx context.Context, def *Definition, spec *ToolSpec, c llm.ToolCall, args map[string]any, turn int, em *stepEmitter) (callRecord, error) {
	em.step(StepToolCall, map[string]any{"turn": turn, "call_id": c.ID, "tool": c.Name, "kind": spec.Kind(), "input": args})
	in := maps.Clone(args)
	maps.Copy(in, spec.Input) // the static input wins
	start := time.Now()
	end := func(error) {}
	if tr := tool.TracerFrom(ctx); tr != nil {
		ctx, end = tr.ToolCall(ctx, tool.ToolCall{Agent: def.Name, Tool: c.Name, CallID: c.ID, Kind: spec.Kind()})
	}
	out, err := rt.invokeTool(ctx, def, spec, in)
	end(err)
	r := callRecord{Turn: turn, CallID: c.ID, Tool: c.Name, Kind: spec.Kind(), Input: args, DurationMS: time.Since(start).Milliseconds()}
	if ctx.Err() != nil {
		return r, context.Cause(ctx)
	}
	if err != nil {
		r.Status, r.Error, r.Content = CallError, clip.String(err.Error(), 2000), "error: "+clip.String(err.Error(), 2000)
	} else {
		r.Status = CallOK
		r.Output, r.Content = resultContent(out)
	}
	em.result(r)
	return r, nil
}

// resultContent is a tool's output as the model reads it (text as it is,
// anything else as JSON), cut at MaxToolResultBytes, and as the record
// keeps it (the value, or the cut text when it is too large).
func resultContent(out any) (any, string) {
	v, err := jsonValue(out)
	if err != nil {
		s := fmt.Sprintf("%v", out)
		return clip.String(s, MaxToolResultBytes), clip.String(s, MaxToolResultBytes)
	}
	text, ok := v.(string)
	if !ok {
		text = compactJSON(v)
	}
	if len(text) <= MaxToolResultBytes {
		return v, text
	}
	cut := clip.String(text, MaxToolResultBytes) + fmt.Sprintf("\n[the result is %d bytes; it was cut at %d]", len(text), MaxToolResultBytes)
	return cut, cut
}

// invokeTool runs the entry's tool or chain with its timeout and retries.
func (rt *Runtime) invokeTool(ctx context.Context, def *Definition, spec *ToolSpec, in map[string]any) (any, error) {
	attempts := 1
	if spec.Retry != nil {
		attempts = int(spec.Retry.MaxAttempts)
	}
	delay := time.Second
	if spec.Retry != nil && spec.Retry.InitialDelaySeconds > 0 {
		delay = time.Duration(spec.Retry.InitialDelaySeconds * float64(time.Second))
	}
	for a := 1; ; a++ {
		out, err := rt.invokeOnce(ctx, def, spec, in)
		if err == nil || a >= attempts || ctx.Err() != nil {
			return out, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		if spec.Retry.Backoff == "exponential" {
			delay *= 2
		}
	}
}

func (rt *Runtime) invokeOnce(ctx context.Context, def *Definition, spec *ToolSpec, in map[string]any) (any, error) {
	if spec.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(spec.TimeoutSeconds*float64(time.Second)),
			fmt.Errorf("%s timed out after %gs (its timeout_seconds)", spec.CallName(), spec.TimeoutSeconds))
		defer cancel()
	}
	var out any
	var err error
	switch spec.Kind() {
	case "chain":
		if rt.RunChain == nil {
			return nil, fmt.Errorf("this host cannot run saved chains")
		}
		out, err = rt.runChainNested(ctx, spec.Chain, in)
	default:
		fn, ok := rt.Registry.Get(spec.Tool)
		if !ok {
			return nil, fmt.Errorf("tool %q does not exist on this host", spec.Tool)
		}
		out, err = fn(ctx, in, func(any) {})
	}
	if err != nil {
		if _, pause := tool.IsInterrupt(err); pause {
			return nil, fmt.Errorf("%s asked for a person, which a tool called by an agent cannot do; mark it approval: required instead", spec.CallName())
		}
		if ctx.Err() != nil {
			if cause := context.Cause(ctx); cause != nil {
				return nil, cause
			}
		}
		return nil, err
	}
	return out, nil
}

// Streamed text is reported in pieces of at most textChunk bytes, at most
// once per textEvery: a stream of tokens is a few events, not one a token.
const (
	textChunk = 4 << 10
	textEvery = 250 * time.Millisecond
)

// stepEmitter reports an agent's steps on its node. Calls of one turn run
// on several goroutines, and streamed text is flushed by a timer, so every
// report goes through one lock.
type stepEmitter struct {
	mu     sync.Mutex
	emit   tool.Emitter
	agent  string
	buf    strings.Builder
	turn   int
	timer  *time.Timer
	closed bool
}

func newStepEmitter(agent string, emit tool.Emitter) *stepEmitter {
	if emit == nil {
		emit = func(any) {}
	}
	return &stepEmitter{emit: emit, agent: agent}
}

func (e *stepEmitter) step(step string, fields map[string]any) {
	fields["step"], fields["agent"] = step, e.agent
	e.emitMap(fields)
}

func (e *stepEmitter) emit1(p map[string]any) {
	if !e.closed {
		e.emit(p)
	}
}

func (e *stepEmitter) emitMap(p map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushLocked()
	e.emit1(p)
}

// result reports a finished call (its output cut shorter than the
// model's copy: the event is for people reading the run).
func (e *stepEmitter) result(r callRecord) {
	m := r.view()
	delete(m, "input")
	if out, ok := m["output"]; ok {
		if s := compactJSON(out); len(s) > 8<<10 {
			m["output"] = clip.String(s, 8<<10) + " …"
		}
	}
	e.step(StepToolResult, m)
}

// text adds streamed text of turn n.
func (e *stepEmitter) text(n int, delta string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	if e.turn != n {
		e.flushLocked()
		e.turn = n
	}
	e.buf.WriteString(delta)
	if e.buf.Len() >= textChunk {
		e.flushLocked()
		return
	}
	if e.timer == nil {
		e.timer = time.AfterFunc(textEvery, e.flush)
	}
}

func (e *stepEmitter) flush() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushLocked()
}

func (e *stepEmitter) flushLocked() {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	for e.buf.Len() > 0 {
		s := e.buf.String()
		piece := clip.Prefix(s, textChunk)
		e.buf.Reset()
		e.buf.WriteString(s[len(piece):])
		e.emit1(map[string]any{"step": StepText, "agent": e.agent, "turn": e.turn, "text": piece})
	}
}

// close flushes what is left; nothing is reported after it (a timer that
// fires late finds it closed).
func (e *stepEmitter) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushLocked()
	e.closed = true
}
