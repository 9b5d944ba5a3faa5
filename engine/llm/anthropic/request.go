package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/chainstudio/studio/engine/llm"
)

// buildParams maps req onto the Messages API. schemaTool is the name of the
// forced tool that carries a reply schema, "" without one.
//
// Structured output goes through a forced tool, not output_config.format:
// the schema is offered as one more tool's input_schema and tool_choice
// names that tool, so the model must answer by calling it and its answer is
// held to the schema by the tool-use decoder, which every tool-capable model
// has; the call's input is the reply's text.
func buildParams(req llm.Request) (sdk.MessageNewParams, string, error) {
	maxTokens := int64(req.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	params := sdk.MessageNewParams{
		Model:     req.Model,
		MaxTokens: maxTokens,
	}
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return params, "", err
	}
	params.Messages = msgs
	for _, t := range req.Tools {
		tool, err := toolParam(t.Name, t.Description, t.InputSchema)
		if err != nil {
			return params, "", fmt.Errorf("tool %q: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, tool)
	}
	if len(req.Schema) == 0 {
		return params, "", nil
	}
	name := req.SchemaName
	if name == "" {
		name = "output"
	}
	for _, t := range req.Tools {
		if t.Name == name {
			return params, "", fmt.Errorf("the reply schema's tool name %q is also a tool's name", name)
		}
	}
	tool, err := toolParam(name, "Give your answer as this tool's input.", req.Schema)
	if err != nil {
		return params, "", fmt.Errorf("reply schema: %w", err)
	}
	params.Tools = append(params.Tools, tool)
	params.ToolChoice = sdk.ToolChoiceParamOfTool(name)
	return params, name, nil
}

// messages maps the conversation. Tool results go back as tool_result
// blocks in a user turn, and the API wants all results for one assistant
// turn in the one user turn after it, so consecutive user-side messages
// (results, then any text) are merged into one turn.
func messages(in []llm.Message) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	for i, m := range in {
		var blocks []sdk.ContentBlockParamUnion
		switch m.Role {
		case llm.RoleUser:
			if m.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Text))
			}
		case llm.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool result names no call", i)
			}
			if m.Text == "" {
				// The API refuses an empty text block; a result with no
				// content is sent without one.
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &sdk.ToolResultBlockParam{
					ToolUseID: m.ToolCallID, IsError: sdk.Bool(m.IsError)}})
				break
			}
			blocks = append(blocks, sdk.NewToolResultBlock(m.ToolCallID, m.Text, m.IsError))
		case llm.RoleAssistant:
			if m.Text != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, rawOr(c.Arguments), c.Name))
			}
			if len(blocks) > 0 {
				out = append(out, sdk.NewAssistantMessage(blocks...))
			}
			continue
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].OfUser != nil {
			out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
			continue
		}
		out = append(out, sdk.NewUserMessage(blocks...))
	}
	return out, nil
}

// toolParam is a custom tool with schema as its input_schema, sent as given:
// properties and required in their fields, every other keyword alongside.
func toolParam(name, description string, schema json.RawMessage) (sdk.ToolUnionParam, error) {
	var in sdk.ToolInputSchemaParam
	if len(schema) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(schema, &fields); err != nil {
			return sdk.ToolUnionParam{}, fmt.Errorf("input schema: %w", err)
		}
		if t, ok := fields["type"]; ok {
			var typ string
			if json.Unmarshal(t, &typ) != nil || typ != "object" {
				return sdk.ToolUnionParam{}, errors.New("input schema: a tool's input is an object, the schema's type must be \"object\"")
			}
			delete(fields, "type")
		}
		if p, ok := fields["properties"]; ok {
			in.Properties = p
			delete(fields, "properties")
		}
		if r, ok := fields["required"]; ok {
			if err := json.Unmarshal(r, &in.Required); err != nil {
				return sdk.ToolUnionParam{}, fmt.Errorf("input schema: required: %w", err)
			}
			delete(fields, "required")
		}
		if len(fields) > 0 {
			in.ExtraFields = make(map[string]any, len(fields))
			for k, v := range fields {
				in.ExtraFields[k] = v
			}
		}
	}
	if in.Properties == nil {
		// A zero input_schema is left off the wire by the SDK, and the API
		// requires one: no properties is the same schema, spelled out.
		in.Properties = map[string]any{}
	}
	tool := sdk.ToolUnionParamOfTool(in, name)
	if description != "" {
		tool.OfTool.Description = sdk.String(description)
	}
	return tool, nil
}

// replyOf maps a whole message. The schema tool's call, when the model made
// it, is the reply's text and not a tool call.
func replyOf(msg *sdk.Message, schemaTool string) (*llm.Reply, error) {
	reply := &llm.Reply{Model: msg.Model}
	answered := false
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			if schemaTool == "" {
				reply.Text += b.Text
			}
		case "tool_use":
			if schemaTool != "" && b.Name == schemaTool {
				reply.Text = string(rawOr(b.Input))
				answered = true
				continue
			}
			reply.ToolCalls = append(reply.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: rawOr(b.Input)})
		}
	}
	reply.Stop = stopOf(msg.StopReason, answered && len(reply.ToolCalls) == 0)
	if msg.JSON.Usage.Valid() {
		reply.Usage = llm.Usage{InputTokens: msg.Usage.InputTokens, OutputTokens: msg.Usage.OutputTokens, Reported: true}
	}
	return reply, nil
}

// stopOf maps the API's stop_reason. answered is a reply whose only tool
// call was the schema tool's: the model has finished, nothing waits.
func stopOf(r sdk.StopReason, answered bool) llm.StopReason {
	switch r {
	case sdk.StopReasonEndTurn, sdk.StopReasonStopSequence:
		return llm.StopEnd
	case sdk.StopReasonToolUse:
		if answered {
			return llm.StopEnd
		}
		return llm.StopToolCalls
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonRefusal:
		return llm.StopRefused
	}
	return llm.StopOther
}
