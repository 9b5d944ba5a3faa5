package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/chainstudio/studio/engine/llm"
)

// responsesProvider speaks the Responses API. It keeps a Chat Completions
// provider built from the same Config for what the two APIs share: the
// model list and how a failed call is reported.
type responsesProvider struct {
	responses responses.ResponseService
	chat      *provider
}

// NewResponses returns the provider for cfg that speaks OpenAI's Responses
// API: requests go to base + "/responses" (an empty cfg.BaseURL is OpenAI's
// public endpoint), streamed replies come as its typed events. Config is
// held to what New holds it to: an HTTP client is required, nothing is read
// from the environment, the SDK does not retry and the response is capped.
// Every request says store: false, since the studio keeps the conversation
// itself and sends it whole each turn.
func NewResponses(cfg llm.Config) (llm.Provider, error) {
	chat, err := newChat(cfg)
	if err != nil {
		return nil, err
	}
	opts, _, err := options(cfg)
	if err != nil {
		return nil, err
	}
	// A service, not a client: like New, so that OPENAI_* variables are
	// never read.
	return &responsesProvider{responses: responses.NewResponseService(opts...), chat: chat}, nil
}

// Chat sends one turn, streamed when stream is non-nil.
func (p *responsesProvider) Chat(ctx context.Context, req llm.Request, stream *llm.Stream) (*llm.Reply, error) {
	params, err := responsesParams(req)
	if err != nil {
		return nil, fmt.Errorf("%s: model %q: %w", name, req.Model, err)
	}
	var failed failure
	opts := []option.RequestOption{option.WithMiddleware(failed.record)}
	var reply *llm.Reply
	if stream != nil {
		reply, err = readResponseStream(p.responses.NewStreaming(ctx, params, opts...), stream)
	} else {
		var res *responses.Response
		res, err = p.responses.New(ctx, params, opts...)
		if err == nil {
			reply, err = fromResponse(res)
		}
	}
	if err != nil {
		return nil, p.chat.fail(ctx, "model "+quote(req.Model), &failed, err)
	}
	return reply, nil
}

// Models lists the models GET {base}/models names, as New's provider does.
func (p *responsesProvider) Models(ctx context.Context) ([]string, error) {
	return p.chat.Models(ctx)
}

// responsesParams is req as a Responses request.
func responsesParams(req llm.Request) (responses.ResponseNewParams, error) {
	params := responses.ResponseNewParams{
		Model: req.Model,
		Store: sdk.Bool(false),
	}
	if req.System != "" {
		params.Instructions = sdk.String(req.System)
	}
	var items responses.ResponseInputParam
	for i, m := range req.Messages {
		more, err := inputItems(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		items = append(items, more...)
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		tool, err := functionTool(t)
		if err != nil {
			return params, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		params.Tools = append(params.Tools, tool)
	}
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		params.MaxOutputTokens = sdk.Int(int64(req.MaxTokens))
	}
	if len(req.Schema) > 0 {
		schema, err := schemaObject(req.Schema)
		if err != nil {
			return params, fmt.Errorf("the reply schema: %w", err)
		}
		schemaName := req.SchemaName
		if schemaName == "" {
			schemaName = "output"
		}
		params.Text.Format = responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
				Name:   schemaName,
				Schema: schema,
				// Strict mode refuses a schema it cannot enforce (an open
				// object, an optional property): such a schema is sent
				// unenforced and the caller's validation holds the reply
				// to it.
				Strict: sdk.Bool(fitsStrict(req.Schema)),
			},
		}
	}
	return params, nil
}

// inputItems is one message as Responses input items: a turn's text is a
// message, an assistant's calls are function_call items after it, a tool's
// result is a function_call_output.
func inputItems(m llm.Message) ([]responses.ResponseInputItemUnionParam, error) {
	switch m.Role {
	case llm.RoleUser:
		return []responses.ResponseInputItemUnionParam{textMessage(m.Text, responses.EasyInputMessageRoleUser)}, nil
	case llm.RoleAssistant:
		var items []responses.ResponseInputItemUnionParam
		if m.Text != "" || len(m.ToolCalls) == 0 {
			items = append(items, textMessage(m.Text, responses.EasyInputMessageRoleAssistant))
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" {
				return nil, fmt.Errorf("the call to %q has no id", c.Name)
			}
			args := string(c.Arguments)
			if len(bytes.TrimSpace(c.Arguments)) == 0 {
				args = "{}"
			}
			items = append(items, responses.ResponseInputItemParamOfFunctionCall(args, c.ID, c.Name))
		}
		return items, nil
	case llm.RoleTool:
		if m.ToolCallID == "" {
			return nil, errors.New("a tool result names no call")
		}
		text := m.Text
		if m.IsError {
			// function_call_output has no error flag either.
			text = toolErrorPrefix + text
		}
		out := responses.ResponseInputItemParamOfFunctionCallOutput(text)
		out.OfFunctionCallOutput.CallID = sdk.String(m.ToolCallID)
		return []responses.ResponseInputItemUnionParam{out}, nil
	}
	return nil, fmt.Errorf("role %q is not one the API takes", m.Role)
}

func textMessage(text string, role responses.EasyInputMessageRole) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
		Content: responses.EasyInputMessageContentUnionParam{OfString: sdk.String(text)},
		Role:    role,
		Type:    responses.EasyInputMessageTypeMessage,
	}}
}

func functionTool(t llm.Tool) (responses.ToolUnionParam, error) {
	fn := responses.FunctionToolParam{Name: t.Name}
	if t.Description != "" {
		fn.Description = sdk.String(t.Description)
	}
	if len(bytes.TrimSpace(t.InputSchema)) > 0 {
		schema, err := schemaObject(t.InputSchema)
		if err != nil {
			return responses.ToolUnionParam{}, fmt.Errorf("the input schema: %w", err)
		}
		fn.Parameters = schema
	} else {
		// The API requires parameters; a tool that takes none says so.
		fn.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	// The API defaults strict to true, which refuses most tools' schemas
	// (every property required, no others allowed): strict only where the
	// schema already says that.
	fn.Strict = sdk.Bool(fitsStrict(t.InputSchema))
	return responses.ToolUnionParam{OfFunction: &fn}, nil
}

// schemaObject is a JSON Schema object as the SDK's map, each member kept
// as the JSON it was (numbers as written).
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return nil, errors.New("it is not a JSON object")
	}
	schema := make(map[string]any, len(members))
	for k, v := range members {
		schema[k] = v
	}
	return schema, nil
}

// fitsStrict reports whether OpenAI's strict mode can take schema as it
// is: an object schema whose every object lists all its properties as
// required and allows no others, with none of the keywords strict mode
// refuses.
func fitsStrict(schema json.RawMessage) bool {
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil || root == nil || root["type"] != "object" {
		return false
	}
	return strictNode(root)
}

// strictRefuses are the keywords strict mode does not take.
var strictRefuses = []string{"allOf", "oneOf", "not", "if", "then", "else", "patternProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties"}

func strictNode(v any) bool {
	switch n := v.(type) {
	case []any:
		for _, e := range n {
			if !strictNode(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, k := range strictRefuses {
			if _, ok := n[k]; ok {
				return false
			}
		}
		if props, ok := n["properties"].(map[string]any); ok || isObjectType(n["type"]) {
			if n["additionalProperties"] != false {
				return false
			}
			required := map[string]bool{}
			list, _ := n["required"].([]any)
			for _, r := range list {
				if s, ok := r.(string); ok {
					required[s] = true
				}
			}
			for k, p := range props {
				if !required[k] || !strictNode(p) {
					return false
				}
			}
		}
		for _, k := range []string{"items", "anyOf", "prefixItems"} {
			if sub, ok := n[k]; ok && !strictNode(sub) {
				return false
			}
		}
		for _, k := range []string{"$defs", "definitions"} {
			if defs, ok := n[k].(map[string]any); ok {
				for _, d := range defs {
					if !strictNode(d) {
						return false
					}
				}
			}
		}
		return true
	}
	return true
}

// isObjectType is a schema's type that is, or may be, "object".
func isObjectType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		for _, e := range t {
			if e == "object" {
				return true
			}
		}
	}
	return false
}

// fromResponse is a non-streamed reply.
func fromResponse(res *responses.Response) (*llm.Reply, error) {
	if err := failedResponse(res); err != nil {
		return nil, err
	}
	reply := &llm.Reply{Model: res.Model}
	var text, refusal strings.Builder
	for _, item := range res.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			reply.ToolCalls = append(reply.ToolCalls, llm.ToolCall{
				ID:        item.CallID,
				Name:      item.Name,
				Arguments: arguments(item.Arguments.OfString),
			})
		}
		// Reasoning items and built-in tools' calls are not the reply: only
		// function tools are offered.
	}
	reply.Text = text.String()
	finish(reply, finishReason(res), refusal.String())
	if res.JSON.Usage.Valid() {
		reply.Usage = usage(res.Usage)
	}
	return reply, nil
}

// failedResponse is the error a response with status failed carries.
func failedResponse(res *responses.Response) error {
	if res.Status != responses.ResponseStatusFailed && res.Error.Message == "" {
		return nil
	}
	return serverError("the response failed", string(res.Error.Code), res.Error.Message)
}

// serverError is what the server said of a failure that came in a 200
// (the response's error, a stream's error event).
func serverError(what, code, message string) error {
	text := what
	if message != "" {
		text += ": " + message
	}
	if code != "" {
		text += " (" + code + ")"
	}
	return errors.New(text)
}

// finishReason is the response's status said as Chat Completions'
// finish_reason, so that finish decides the stop the same way for both.
func finishReason(res *responses.Response) string {
	switch res.Status {
	case responses.ResponseStatusCompleted:
		return "stop"
	case responses.ResponseStatusIncomplete:
		switch res.IncompleteDetails.Reason {
		case "max_output_tokens":
			return "length"
		case "content_filter":
			return "content_filter"
		}
	}
	return ""
}

func usage(u responses.ResponseUsage) llm.Usage {
	return llm.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Reported: true}
}
