// Package openai is the llm.Provider for OpenAI and every server that speaks
// its Chat Completions API (Ollama, vLLM, LM Studio, OpenRouter), built on
// the official SDK (github.com/openai/openai-go). New speaks Chat
// Completions, the API the compatible servers implement; NewResponses speaks
// OpenAI's Responses API (POST /responses, streamed as typed events) with
// the same tools, schema, usage, limits and errors, for the models and
// servers that offer it. Both list models from the same GET /models.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/chainstudio/studio/engine/llm"
)

// name is how errors name this provider.
const name = "openai"

// publicHost is OpenAI's own API, which alone gets max_completion_tokens
// (see request.go).
const publicHost = "api.openai.com"

type provider struct {
	chat   sdk.ChatCompletionService
	models sdk.ModelService
	key    string // only to scrub it from a server's error message
	// completionTokens sends MaxTokens as max_completion_tokens (OpenAI's
	// current field) rather than max_tokens (what compatible servers read).
	completionTokens bool
}

// New returns the provider for cfg. An empty cfg.BaseURL is OpenAI's public
// endpoint; a compatible server's base URL usually ends in /v1
// ("http://127.0.0.1:11434/v1") and requests go to base + "/chat/completions".
func New(cfg llm.Config) (llm.Provider, error) {
	p, err := newChat(cfg)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// newChat is New's provider, which NewResponses also keeps for the model
// list.
func newChat(cfg llm.Config) (*provider, error) {
	opts, completionTokens, err := options(cfg)
	if err != nil {
		return nil, err
	}
	// The services are built directly, not through sdk.NewClient: the client
	// reads OPENAI_API_KEY, OPENAI_BASE_URL and friends from the environment,
	// and a studio's calls must go where Config says with the key it gives.
	// No request timeout is set either: ctx bounds each call.
	return &provider{
		chat:             sdk.NewChatCompletionService(opts...),
		models:           sdk.NewModelService(opts...),
		key:              cfg.APIKey,
		completionTokens: completionTokens,
	}, nil
}

// options are the SDK's request options for cfg, and whether the server is
// OpenAI's own (which alone gets max_completion_tokens).
func options(cfg llm.Config) ([]option.RequestOption, bool, error) {
	if err := cfg.Check(); err != nil {
		return nil, false, err
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(llm.LimitedClient(cfg.HTTPClient, cfg.ResponseLimit())),
		// The engine retries a failed node itself; SDK retries would
		// multiply its attempts and hide how long a call took.
		option.WithMaxRetries(0),
	}
	completionTokens := true
	if cfg.BaseURL == "" {
		opts = append(opts, option.WithEnvironmentProduction())
	} else {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, false, fmt.Errorf("%s: base URL %q is not an absolute URL", name, cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
		completionTokens = u.Hostname() == publicHost
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return opts, completionTokens, nil
}

// Chat sends one turn, streamed when stream is non-nil.
func (p *provider) Chat(ctx context.Context, req llm.Request, stream *llm.Stream) (*llm.Reply, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, fmt.Errorf("%s: model %q: %w", name, req.Model, err)
	}
	var failed failure
	opts := []option.RequestOption{option.WithMiddleware(failed.record)}
	var reply *llm.Reply
	if stream != nil {
		params.StreamOptions.IncludeUsage = sdk.Bool(true)
		reply, err = readStream(p.chat.NewStreaming(ctx, params, opts...), stream)
	} else {
		var res *sdk.ChatCompletion
		res, err = p.chat.New(ctx, params, opts...)
		if err == nil {
			reply, err = fromCompletion(res)
		}
	}
	if err != nil {
		return nil, p.fail(ctx, "model "+quote(req.Model), &failed, err)
	}
	return reply, nil
}

// Models lists the models GET {base}/models names.
func (p *provider) Models(ctx context.Context) ([]string, error) {
	var failed failure
	page, err := p.models.List(ctx, option.WithMiddleware(failed.record))
	if err != nil {
		err = p.fail(ctx, "listing models", &failed, err)
		if failed.status == http.StatusNotFound {
			return nil, fmt.Errorf("%w (%w)", err, llm.ErrNoModelList)
		}
		return nil, err
	}
	ids := make([]string, 0, len(page.Data))
	for _, m := range page.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// failure is the status and body of a call's error response, kept by a
// middleware because the SDK's error drops the body when it is not
// OpenAI's {"error": {...}} shape (a compatible server's plain text or
// {"error": "..."}).
type failure struct {
	status int
	body   []byte
}

// maxMessage caps how much of a server's error body an error quotes.
const maxMessage = 1000

func (f *failure) record(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	f.status = res.StatusCode
	// The body is behind the response cap already: a server's endless
	// error page fails here with *llm.TooLargeError.
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	f.body = body
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
}

// message is what the server said in its error body: OpenAI's
// error.message, a compatible server's error string or message, or the
// body's text.
func (f *failure) message() string {
	var shaped struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(f.body, &shaped) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(shaped.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(shaped.Error, &s) == nil && s != "":
			msg = s
		default:
			msg = shaped.Message
		}
	}
	if msg == "" {
		msg = string(f.body)
	}
	msg = strings.TrimSpace(msg)
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	return msg
}

// fail wraps err with the provider, what was asked (the model) and what the
// server said, and keeps the key out of it.
func (p *provider) fail(ctx context.Context, what string, f *failure, err error) error {
	if ctx.Err() != nil {
		// A cancelled call reports the cancellation, not the transport's
		// view of it.
		return fmt.Errorf("%s: %s: %w", name, what, ctx.Err())
	}
	if f.status != 0 && f.body != nil {
		// The SDK's own text is only the status, said here already.
		text := fmt.Sprintf("%s: %s: HTTP %d %s", name, what, f.status, http.StatusText(f.status))
		if said := f.message(); said != "" {
			text += ": " + said
		}
		return &wrapped{text: p.scrub(text), err: err}
	}
	return &wrapped{text: p.scrub(fmt.Sprintf("%s: %s: %v", name, what, err)), err: err}
}

func (p *provider) scrub(s string) string { return llm.Scrub(s, p.key) }

// wrapped is an error with its text written here (the key scrubbed from
// it) that still unwraps to the SDK's error, so *llm.TooLargeError and the
// SDK's *Error stay reachable with errors.As.
type wrapped struct {
	text string
	err  error
}

func (w *wrapped) Error() string { return w.text }
func (w *wrapped) Unwrap() error { return w.err }
