// Package anthropic is the llm.Provider for Anthropic's Messages API, built
// on the official Go SDK.
//
// The SDK speaks API version 2026-10-21, which refuses temperature (and
// top_p, top_k) with a 400 even at its default value, and the SDK has no
// field for it: Request.Temperature is not sent, and the model samples at
// its default.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/chainstudio/studio/engine/llm"
)

// defaultMaxTokens is sent when Request.MaxTokens is 0: the Messages API
// requires max_tokens on every request and has no default of its own.
const defaultMaxTokens = 4096

// noTimeout stands in for "no per-request timeout". The SDK gives each
// non-streamed call a default timeout (10 minutes) unless one is set, and
// takes 0 as unset; a deadline this far out never fires, so ctx alone bounds
// the call. (A ctx deadline nearer than it keeps the SDK from adding any.)
const noTimeout = time.Duration(math.MaxInt64)

type provider struct {
	client sdk.Client
	key    string // only to scrub it from a server's error message
}

// New returns the provider for cfg. Its requests go through cfg.HTTPClient,
// capped at cfg.ResponseLimit() bytes a response.
func New(cfg llm.Config) (llm.Provider, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	opts := []option.RequestOption{
		// The SDK would otherwise read a key, a base URL and headers from
		// the environment and profiles on disk; the caller gives all of it.
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(llm.LimitedClient(cfg.HTTPClient, cfg.ResponseLimit())),
		// The engine retries a failed node itself; SDK retries would
		// multiply its attempts and hide the failure behind backoff.
		option.WithMaxRetries(0),
		option.WithRequestTimeout(noTimeout),
		// The header would announce noTimeout's seconds to the server.
		option.WithHeaderDel("X-Stainless-Timeout"),
		// The engine records its own spans; the SDK's would send trace
		// headers along and could carry prompts where its environment asks.
		option.WithoutOpenTelemetry(),
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		// x-api-key is the header the API documents for keys; the SDK's
		// WithAPIKey would send the key as a bearer token instead.
		opts = append(opts, option.WithHeader("X-Api-Key", cfg.APIKey))
	}
	return &provider{client: sdk.NewClient(opts...), key: cfg.APIKey}, nil
}

// Chat sends one turn to POST /v1/messages, streamed when stream is non-nil.
func (p *provider) Chat(ctx context.Context, req llm.Request, stream *llm.Stream) (*llm.Reply, error) {
	params, schemaTool, err := buildParams(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: model %q: %w", req.Model, err)
	}
	if stream != nil {
		reply, err := p.chatStream(ctx, params, schemaTool, stream)
		if err != nil {
			return nil, p.callError(req.Model, err)
		}
		return reply, nil
	}
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		return nil, p.callError(req.Model, err)
	}
	return replyOf(msg, schemaTool)
}

// Models lists GET /v1/models, following its pages.
func (p *provider) Models(ctx context.Context) ([]string, error) {
	pager := p.client.Models.ListAutoPaging(ctx, sdk.ModelListParams{})
	var ids []string
	for pager.Next() {
		ids = append(ids, pager.Current().ID)
	}
	if err := pager.Err(); err != nil {
		var ae *sdk.Error
		if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%w: %w", p.serverError("", ae), llm.ErrNoModelList)
		}
		return nil, p.callError("", err)
	}
	return ids, nil
}

// APIError is an error status the API answered, in the provider's words.
// It keeps the status, the API's error type and message, and drops the
// SDK's error, which holds the request and so its x-api-key header.
type APIError struct {
	Model   string // "" for a call that names none (the model list)
	Status  int    // the HTTP status; 200 for an error event mid-stream
	Type    string // the API's error type ("rate_limit_error"), "" when it sent none
	Message string // the API's message, or the status text when it sent none
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("anthropic: ")
	if e.Model != "" {
		fmt.Fprintf(&b, "model %q: ", e.Model)
	}
	if e.Status >= 400 {
		fmt.Fprintf(&b, "HTTP %d", e.Status)
	} else {
		// An error event in a stream that had begun with 200 OK.
		b.WriteString("stream error")
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// callError names the provider, the model and what went wrong; an error
// status becomes an *APIError.
func (p *provider) callError(model string, err error) error {
	var ae *sdk.Error
	if errors.As(err, &ae) {
		return p.serverError(model, ae)
	}
	if model == "" {
		return fmt.Errorf("anthropic: %w", err)
	}
	return fmt.Errorf("anthropic: model %q: %w", model, err)
}

func (p *provider) serverError(model string, ae *sdk.Error) *APIError {
	e := &APIError{Model: model, Status: ae.StatusCode, Type: string(ae.Type()), Message: llm.Scrub(ae.Message, p.key)}
	if e.Message == "" {
		e.Message = http.StatusText(ae.StatusCode)
	}
	return e
}

var _ llm.Provider = (*provider)(nil)

// rawOr returns raw, or "{}" when the model sent no input at all.
func rawOr(raw json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}
