// Package gemini is the llm.Provider for Google's Gemini API, built on the
// official SDK (google.golang.org/genai) with its Gemini API backend (not
// Vertex AI).
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/chainstudio/studio/engine/llm"
)

// defaultBaseURL is the public endpoint. It is set explicitly, never left
// empty, because an empty base URL lets the SDK take one from
// GOOGLE_GEMINI_BASE_URL (or a process-wide default), which would send the
// key wherever the environment says.
const defaultBaseURL = "https://generativelanguage.googleapis.com/"

// sdkKey is what the SDK is told the key is. The SDK refuses the Gemini API
// backend without a key and, given none, reads GOOGLE_API_KEY or
// GEMINI_API_KEY; a non-empty stand-in stops both. keyTransport replaces the
// header it sets with the real key (or removes it), so the key itself never
// enters the SDK's config or its error messages.
const sdkKey = "key-set-by-transport"

type provider struct {
	client *genai.Client
	key    string // only to scrub it from a server's error message
}

// New builds the Gemini provider. Its requests go through cfg.HTTPClient
// behind llm.LimitedClient; the SDK neither retries nor times out on its
// own (the engine retries nodes, ctx bounds a call), and it takes nothing
// from the environment.
func New(cfg llm.Config) (llm.Provider, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	hc := llm.LimitedClient(cfg.HTTPClient, cfg.ResponseLimit())
	hc.Transport = keyTransport{base: hc.Transport, key: cfg.APIKey}
	base := cfg.BaseURL
	if base == "" {
		base = defaultBaseURL
	}
	one := int32(1)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		Backend:    genai.BackendGeminiAPI,
		APIKey:     sdkKey,
		HTTPClient: hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL: base,
			// One attempt: the engine's node retries are the only ones.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: &one},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini: building the client: %w", err)
	}
	return &provider{client: client, key: cfg.APIKey}, nil
}

// keyTransport puts the key in the x-goog-api-key header, the only place
// the Gemini API reads it from, and sends no key when there is none. It
// also tells the call a body that went past the cap (see capWatch).
type keyTransport struct {
	base http.RoundTripper
	key  string
}

func (t keyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Del("x-goog-api-key")
	if t.key != "" {
		r.Header.Set("x-goog-api-key", t.key)
	}
	res, err := t.base.RoundTrip(r)
	if w, ok := req.Context().Value(capWatchKey{}).(*capWatch); ok && err == nil && res.Body != nil {
		res.Body = &watchedBody{ReadCloser: res.Body, w: w}
	}
	return res, err
}

// capWatch keeps the *llm.TooLargeError a call's body failed with. The
// SDK's stream reader hands on the cut-off last event as bad JSON before
// the read error, and stops there, so the cap would be lost without it.
type capWatch struct {
	mu  sync.Mutex
	err *llm.TooLargeError
}

type capWatchKey struct{}

func (w *capWatch) tooLarge() *llm.TooLargeError {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

type watchedBody struct {
	io.ReadCloser
	w *capWatch
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tl *llm.TooLargeError
	if errors.As(err, &tl) {
		b.w.mu.Lock()
		b.w.err = tl
		b.w.mu.Unlock()
	}
	return n, err
}

func (p *provider) Chat(ctx context.Context, req llm.Request, stream *llm.Stream) (*llm.Reply, error) {
	contents, err := toContents(req.Messages)
	if err != nil {
		return nil, fmt.Errorf("gemini: model %q: %w", req.Model, err)
	}
	config, err := toConfig(req)
	if err != nil {
		return nil, fmt.Errorf("gemini: model %q: %w", req.Model, err)
	}
	watch := &capWatch{}
	ctx = context.WithValue(ctx, capWatchKey{}, watch)
	fail := func(err error) error {
		if tl := watch.tooLarge(); tl != nil {
			// Whatever the SDK made of the cut-off body, the cause is
			// the cap.
			return &Error{Model: req.Model, Err: tl}
		}
		return p.apiError(req.Model, err)
	}
	if stream == nil {
		resp, err := p.client.Models.GenerateContent(ctx, req.Model, contents, config)
		if err != nil {
			return nil, fail(err)
		}
		var a assembler
		a.add(resp, nil)
		return a.reply(), nil
	}
	var a assembler
	for resp, err := range p.client.Models.GenerateContentStream(ctx, req.Model, contents, config) {
		if err != nil {
			return nil, fail(err)
		}
		a.add(resp, stream.Text)
	}
	if a.finish == "" && !a.blocked {
		// The API's last chunk carries the finish reason; a stream cut in
		// the middle ends cleanly all the same, and what arrived is not
		// the reply.
		return nil, fail(errStreamCut)
	}
	return a.reply(), nil
}

// errStreamCut is a stream that ended before its last chunk.
var errStreamCut = errors.New("the stream ended before the reply was finished (no chunk gave a finishReason)")

func (p *provider) Models(ctx context.Context) ([]string, error) {
	var names []string
	for m, err := range p.client.Models.All(ctx) {
		if err != nil {
			var ae genai.APIError
			if errors.As(err, &ae) && ae.Code == http.StatusNotFound {
				return nil, fmt.Errorf("gemini: listing models: %w (%s)", llm.ErrNoModelList, describe(ae))
			}
			return nil, p.apiError("", err)
		}
		// Chat takes a name with or without the "models/" the list gives.
		names = append(names, strings.TrimPrefix(m.Name, "models/"))
	}
	return names, nil
}

// Error is a failed call: the provider, the model and what the server
// said. It wraps the cause, so errors.As still finds an *llm.TooLargeError
// or a context error under it.
type Error struct {
	Model string
	// Status is the HTTP status the API answered (0 when the call failed
	// before one came).
	Status  int
	Message string
	Err     error
}

func (e *Error) Error() string {
	who := "gemini"
	if e.Model != "" {
		who += fmt.Sprintf(": model %q", e.Model)
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d: %s", who, e.Status, e.Message)
	}
	return fmt.Sprintf("%s: %v", who, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func (p *provider) apiError(model string, err error) error {
	var ae genai.APIError
	if errors.As(err, &ae) {
		return &Error{Model: model, Status: ae.Code, Message: llm.Scrub(describe(ae), p.key), Err: err}
	}
	return &Error{Model: model, Err: err}
}

// describe is the API error's status name and message, the parts of the
// SDK's APIError a person reads.
func describe(ae genai.APIError) string {
	switch {
	case ae.Status != "" && ae.Message != "":
		return ae.Status + ": " + ae.Message
	case ae.Message != "":
		return ae.Message
	case ae.Status != "":
		return ae.Status
	}
	return http.StatusText(ae.Code)
}

// toConfig maps what is not a message: system prompt, tools, sampling and
// the reply schema.
func toConfig(req llm.Request) (*genai.GenerateContentConfig, error) {
	off := false
	config := &genai.GenerateContentConfig{
		// One call is one request: the SDK would otherwise send it again
		// to continue a reply that carries a continuation token.
		AutomaticContinuation: &off,
	}
	if req.System != "" {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if req.Temperature != nil {
		t := float32(*req.Temperature)
		config.Temperature = &t
	}
	if req.MaxTokens > 0 {
		config.MaxOutputTokens = int32(req.MaxTokens)
	}
	if len(req.Tools) > 0 {
		decls := make([]*genai.FunctionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if len(t.InputSchema) > 0 {
				// parametersJsonSchema takes the JSON Schema as it is;
				// the older parameters field takes only an OpenAPI subset.
				var s any
				if err := json.Unmarshal(t.InputSchema, &s); err != nil {
					return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
				}
				d.ParametersJsonSchema = s
			}
			decls = append(decls, d)
		}
		config.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	if len(req.Schema) > 0 {
		// Structured output is native: the API holds the reply to
		// responseJsonSchema when the MIME type is JSON. It names no
		// schema, so SchemaName has no place here.
		var s any
		if err := json.Unmarshal(req.Schema, &s); err != nil {
			return nil, fmt.Errorf("reply schema: %w", err)
		}
		config.ResponseMIMEType = "application/json"
		config.ResponseJsonSchema = s
	}
	return config, nil
}

// toContents maps the conversation onto Gemini's contents: the assistant
// is the "model" role, and tool results are functionResponse parts of a
// "user" turn, one turn for the results that follow each other (the answers
// to one assistant turn's calls).
func toContents(msgs []llm.Message) ([]*genai.Content, error) {
	var out []*genai.Content
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: m.Text}}})
		case llm.RoleAssistant:
			c := &genai.Content{Role: genai.RoleModel}
			if m.Text != "" {
				c.Parts = append(c.Parts, &genai.Part{Text: m.Text})
			}
			for i, tc := range m.ToolCalls {
				var args map[string]any
				if len(tc.Arguments) > 0 {
					if err := json.Unmarshal(tc.Arguments, &args); err != nil {
						return nil, fmt.Errorf("tool call %q: arguments: %w", tc.ID, err)
					}
				}
				part := &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}, ThoughtSignature: tc.Signature}
				if i == 0 && len(part.ThoughtSignature) == 0 {
					part.ThoughtSignature = unsignedCall
				}
				c.Parts = append(c.Parts, part)
			}
			out = append(out, c)
		case llm.RoleTool:
			// The API's convention: a result under "output", a failure
			// under "error".
			key := "output"
			if m.IsError {
				key = "error"
			}
			part := &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: m.ToolCallID, Name: m.ToolName, Response: map[string]any{key: m.Text},
			}}
			if n := len(out); n > 0 && isResults(out[n-1]) {
				out[n-1].Parts = append(out[n-1].Parts, part)
			} else {
				out = append(out, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{part}})
			}
		default:
			return nil, fmt.Errorf("message role %q is not one the provider knows", m.Role)
		}
	}
	return out, nil
}

// unsignedCall is the thought signature sent on the first call of a
// replayed assistant turn that has none of its own. Thinking models sign
// the calls they make (kept in llm.ToolCall.Signature and sent back as
// they came) and Gemini 3 refuses (HTTP 400) a replayed turn whose first
// call carries no signature; a turn the model did not write here (a
// conversation from elsewhere) goes back with the value the API takes for
// history it did not sign.
var unsignedCall = []byte("skip_thought_signature_validator")

func isResults(c *genai.Content) bool {
	return c.Role == genai.RoleUser && len(c.Parts) > 0 && c.Parts[0].FunctionResponse != nil
}

// assembler builds the reply from one response or a stream's chunks. The
// Gemini API sends each functionCall whole (a streamed call is never split
// over chunks), and a reply's calls may come in different chunks, so calls
// are collected in arrival order; usage and finish reason are the last the
// server sent (each chunk's usage is the running total).
type assembler struct {
	text    strings.Builder
	calls   []llm.ToolCall
	finish  genai.FinishReason
	blocked bool
	model   string
	usage   llm.Usage
}

func (a *assembler) add(resp *genai.GenerateContentResponse, text func(string)) {
	if resp == nil {
		return
	}
	if resp.ModelVersion != "" {
		a.model = resp.ModelVersion
	}
	if u := resp.UsageMetadata; u != nil {
		a.usage = llm.Usage{
			InputTokens:  int64(u.PromptTokenCount),
			OutputTokens: int64(u.CandidatesTokenCount),
			Reported:     true,
		}
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		a.blocked = true
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return
	}
	// One candidate is asked for (candidateCount is left at its default).
	c := resp.Candidates[0]
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if c.Content == nil {
		return
	}
	for _, p := range c.Content.Parts {
		switch {
		case p.FunctionCall != nil:
			args, _ := json.Marshal(p.FunctionCall.Args)
			if p.FunctionCall.Args == nil {
				args = []byte("{}")
			}
			id := p.FunctionCall.ID
			if id == "" {
				// Older API versions give calls no id; results answer
				// this one, unique in the reply.
				id = fmt.Sprintf("call_%d", len(a.calls)+1)
			}
			a.calls = append(a.calls, llm.ToolCall{ID: id, Name: p.FunctionCall.Name, Arguments: args, Signature: p.ThoughtSignature})
		case p.Text != "" && !p.Thought:
			// Thought summaries are the model's reasoning, not its reply.
			a.text.WriteString(p.Text)
			if text != nil {
				text(p.Text)
			}
		}
	}
}

func (a *assembler) reply() *llm.Reply {
	return &llm.Reply{
		Text:      a.text.String(),
		ToolCalls: a.calls,
		Stop:      a.stop(),
		Model:     a.model,
		Usage:     a.usage,
	}
}

func (a *assembler) stop() llm.StopReason {
	if len(a.calls) > 0 {
		// The API finishes a turn of calls with STOP.
		return llm.StopToolCalls
	}
	if a.blocked {
		return llm.StopRefused
	}
	switch a.finish {
	case genai.FinishReasonStop:
		return llm.StopEnd
	case genai.FinishReasonMaxTokens:
		return llm.StopMaxTokens
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return llm.StopRefused
	}
	return llm.StopOther
}
