package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/chainstudio/studio/engine/llm"
)

// toolErrorPrefix starts a failed tool's result: Chat Completions has no
// error flag on a tool message, so the model is told in the content.
const toolErrorPrefix = "The tool call failed: "

// params is req as a Chat Completions request.
func (p *provider) params(req llm.Request) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	if req.System != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		msg, err := message(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, tool)
	}
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		// OpenAI's reasoning models refuse max_tokens; the compatible
		// servers (Ollama among them) read only max_tokens.
		if p.completionTokens {
			params.MaxCompletionTokens = sdk.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = sdk.Int(int64(req.MaxTokens))
		}
	}
	if len(req.Schema) > 0 {
		// Structured output natively: response_format json_schema, strict
		// when the schema fits strict mode (OpenAI then constrains the
		// reply to it, and refuses a strict schema that does not fit); the
		// caller validates the reply either way.
		schemaName := req.SchemaName
		if schemaName == "" {
			schemaName = "output"
		}
		if !json.Valid(req.Schema) {
			return params, errors.New("the reply schema is not JSON")
		}
		params.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   schemaName,
					Schema: req.Schema,
					Strict: sdk.Bool(fitsStrict(req.Schema)),
				},
			},
		}
	}
	return params, nil
}

func message(m llm.Message) (sdk.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case llm.RoleUser:
		return sdk.UserMessage(m.Text), nil
	case llm.RoleAssistant:
		var a sdk.ChatCompletionAssistantMessageParam
		if m.Text != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = sdk.String(m.Text)
		}
		for _, c := range m.ToolCalls {
			args := string(c.Arguments)
			if len(bytes.TrimSpace(c.Arguments)) == 0 {
				args = "{}"
			}
			a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID: c.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      c.Name,
						Arguments: args,
					},
				},
			})
		}
		return sdk.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return sdk.ChatCompletionMessageParamUnion{}, errors.New("a tool result names no call")
		}
		text := m.Text
		if m.IsError {
			text = toolErrorPrefix + text
		}
		return sdk.ToolMessage(text, m.ToolCallID), nil
	}
	return sdk.ChatCompletionMessageParamUnion{}, fmt.Errorf("role %q is not one the API takes", m.Role)
}

func toolParam(t llm.Tool) (sdk.ChatCompletionToolUnionParam, error) {
	fn := shared.FunctionDefinitionParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = sdk.String(t.Description)
	}
	if len(bytes.TrimSpace(t.InputSchema)) > 0 {
		// Each member stays the JSON it was (numbers as written: the SDK
		// would write a json.Number as a string).
		var members map[string]json.RawMessage
		if err := json.Unmarshal(t.InputSchema, &members); err != nil || members == nil {
			return sdk.ChatCompletionToolUnionParam{}, errors.New("the input schema is not a JSON object")
		}
		schema := make(shared.FunctionParameters, len(members))
		for k, v := range members {
			schema[k] = v
		}
		fn.Parameters = schema
	}
	// Not strict: strict function calling requires every property to be
	// required and no additional ones, which tools' schemas need not say.
	return sdk.ChatCompletionFunctionTool(fn), nil
}

// fromCompletion is a non-streamed reply.
func fromCompletion(res *sdk.ChatCompletion) (*llm.Reply, error) {
	if len(res.Choices) == 0 {
		return nil, errors.New("the reply has no choices")
	}
	c := res.Choices[0]
	reply := &llm.Reply{Text: c.Message.Content, Model: res.Model}
	for _, tc := range c.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered
		}
		reply.ToolCalls = append(reply.ToolCalls, llm.ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: arguments(tc.Function.Arguments),
		})
	}
	finish(reply, c.FinishReason, c.Message.Refusal)
	if res.JSON.Usage.Valid() {
		reply.Usage = llm.Usage{
			InputTokens:  res.Usage.PromptTokens,
			OutputTokens: res.Usage.CompletionTokens,
			Reported:     true,
		}
	}
	return reply, nil
}

// finish sets the reply's stop reason and fills in what a server left out.
func finish(reply *llm.Reply, reason, refusal string) {
	switch reason {
	case "stop":
		reply.Stop = llm.StopEnd
	case "tool_calls", "function_call":
		reply.Stop = llm.StopToolCalls
	case "length":
		reply.Stop = llm.StopMaxTokens
	case "content_filter":
		reply.Stop = llm.StopRefused
	default:
		reply.Stop = llm.StopOther
	}
	if refusal != "" {
		// The model declined (under structured output it says so in
		// refusal, not content): the reply carries why.
		reply.Stop = llm.StopRefused
		if reply.Text == "" {
			reply.Text = refusal
		}
	}
	if len(reply.ToolCalls) > 0 && (reply.Stop == llm.StopEnd || reply.Stop == llm.StopOther) {
		// Some compatible servers finish a turn that calls tools with
		// "stop" (or nothing); the calls still wait for their results.
		reply.Stop = llm.StopToolCalls
	}
	seen := map[string]bool{}
	for i := range reply.ToolCalls {
		c := &reply.ToolCalls[i]
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("call_%d", i)
			for n := 0; seen[c.ID]; n++ {
				c.ID = fmt.Sprintf("call_%d_%d", i, n)
			}
		}
		seen[c.ID] = true
	}
}

// arguments is a call's arguments string as JSON: "" (no arguments) is {},
// and text that is not JSON (a call cut at the token limit) is kept as a
// JSON string, so that the reply stays JSON and the tool's input check
// reports it.
func arguments(s string) json.RawMessage {
	t := bytes.TrimSpace([]byte(s))
	if len(t) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(t) {
		return json.RawMessage(t)
	}
	q, _ := json.Marshal(s)
	return q
}
