// Package llm is what an agent needs from a model provider: one chat turn,
// with tools the model may call, a reply streamed as it is written, output
// held to a JSON Schema, and the tokens it cost. Each provider lives in its
// own package beside this one (llm/openai, llm/anthropic, llm/gemini), built
// on that provider's official SDK; this package holds the types they share
// and imports none of them.
//
// A provider never holds a key in clear longer than a call: the caller
// resolves the credential and passes the key in Config for that call.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Role is who said a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	// RoleTool is a tool's result, answering one of the assistant's
	// ToolCalls by its ID.
	RoleTool Role = "tool"
)

// Message is one turn of the conversation sent to the model. The system
// prompt is not a message: it is Request.System (providers place it where
// their API wants it).
type Message struct {
	Role Role
	// Text is the message's text (a tool result's content for RoleTool).
	Text string
	// ToolCalls are the calls an assistant turn made (RoleAssistant).
	ToolCalls []ToolCall
	// ToolCallID and ToolName name the call a RoleTool message answers.
	ToolCallID string
	ToolName   string
	// IsError marks a RoleTool result that is the tool's failure (or a
	// person's rejection): the model is told the call did not succeed.
	IsError bool
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema (an object schema) of the tool's
	// arguments.
	InputSchema json.RawMessage
}

// ToolCall is the model asking for one tool to run.
type ToolCall struct {
	// ID is the provider's id for the call; the result answers it. A
	// provider that gives none gets one made up, unique in the reply.
	ID   string
	Name string
	// Arguments is the JSON object the model wrote for the tool's input.
	// It is what the model sent, not checked against the tool's schema.
	Arguments json.RawMessage
	// Signature is opaque data the provider attached to the call and wants
	// back when the turn is sent again (Gemini's thought signature). The
	// caller keeps it with the call and never reads it.
	Signature []byte
}

// Request is one chat turn.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// Schema, when set, is the JSON Schema the reply's text must match
	// (structured output). Providers that enforce a schema natively are
	// asked to; the caller validates the reply either way.
	Schema     json.RawMessage
	SchemaName string // a name for the schema where the API wants one ("output" when empty)
	// Temperature and MaxTokens are left to the provider's defaults when
	// nil or 0.
	Temperature *float64
	MaxTokens   int
}

// StopReason is why the model stopped writing.
type StopReason string

const (
	StopEnd       StopReason = "end"        // it finished its answer
	StopToolCalls StopReason = "tool_calls" // it waits for the results of its ToolCalls
	StopMaxTokens StopReason = "max_tokens" // it was cut at the token limit
	StopRefused   StopReason = "refused"    // the provider's safety system stopped it
	StopOther     StopReason = "other"
)

// Usage is what one call consumed, as the provider reported it.
type Usage struct {
	InputTokens, OutputTokens int64
	// Reported is false when the provider said nothing about usage (some
	// OpenAI-compatible servers): the counts are then 0, not measured.
	Reported bool
}

// Reply is the model's answer to one Request.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	Stop      StopReason
	// Model is the model that answered, as the provider names it ("" when
	// it does not say).
	Model string
	Usage Usage
}

// Stream receives a reply as it is written. Text is called with each piece
// of text in order (concatenated they are Reply.Text); it must not block
// for long, the call's reading waits for it.
type Stream struct {
	Text func(delta string)
}

// Provider is one model API.
type Provider interface {
	// Chat sends one turn and returns the whole reply. With a non-nil
	// stream the reply is streamed from the provider and handed to the
	// stream as it arrives, tool calls included (their arguments are
	// assembled before Chat returns). ctx bounds the call; cancelling it
	// stops the request.
	Chat(ctx context.Context, req Request, stream *Stream) (*Reply, error)
	// Models lists the models the server offers. A server that cannot list
	// them answers an error that wraps ErrNoModelList.
	Models(ctx context.Context) ([]string, error)
}

// ErrIncomplete is a streamed reply that ended before the model finished it
// (the connection was cut).
var ErrIncomplete = errors.New("the stream ended before the reply was finished")

// ErrNoModelList is a server that does not list its models.
var ErrNoModelList = errors.New("the server does not list its models")

// Config is what a provider is built from.
type Config struct {
	// BaseURL is the API's base URL; empty is the provider's public
	// endpoint. An OpenAI-compatible server (Ollama, vLLM, LM Studio,
	// OpenRouter) is the openai provider with its base URL.
	BaseURL string
	// APIKey is the key for this call (resolved from a credential by the
	// caller). Empty sends none: local servers need none.
	APIKey string
	// HTTPClient makes the requests. The caller gives one behind the http
	// tool's address guard; nil is refused, so that no provider reaches the
	// network unguarded by accident.
	HTTPClient *http.Client
	// MaxResponseBytes caps what one call reads from the server (a body,
	// or a whole stream); 0 is DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// DefaultMaxResponseBytes caps one call's response when Config sets none.
const DefaultMaxResponseBytes = 16 << 20

// ResponseLimit is the cap Config asks for.
func (c Config) ResponseLimit() int64 {
	if c.MaxResponseBytes > 0 {
		return c.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// Check refuses a Config that no provider may use.
func (c Config) Check() error {
	if c.HTTPClient == nil {
		return errors.New("llm: no HTTP client given (the caller passes one behind the address guard)")
	}
	return nil
}

// Scrub replaces key in s with "[key]": a server may echo the key it was
// sent in its error message, and a provider's error reaches events, logs
// and traces. A key under 4 bytes is left: replacing it would blank
// ordinary text, and no real key is that short.
func Scrub(s, key string) string {
	if len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[key]")
}

// TooLargeError is a response over Config's cap.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the model's response is over %d bytes", e.Limit)
}
