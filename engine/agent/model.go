package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chainstudio/studio/engine/credential"
	"github.com/chainstudio/studio/engine/internal/clip"
	"github.com/chainstudio/studio/engine/llm"
	"github.com/chainstudio/studio/engine/pricing"
	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/spend"
	"github.com/chainstudio/studio/engine/tool"
)

// DefaultModelTimeout bounds one model call when the link sets no
// timeout_seconds.
const DefaultModelTimeout = 60 * time.Second

// maxModelResponse caps the body read from a model endpoint.
const maxModelResponse = 16 << 20

// DefaultProvider is the provider of a model block that names none: OpenAI
// and every server speaking its Chat Completions API.
const DefaultProvider = "openai"

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Answer is a model's reply with the tokens the server reported.
type Answer struct {
	Content string
	// Model is the model that answered, as the server names it ("" when it
	// does not say).
	Model string
	// InputTokens and OutputTokens are what the provider counted for the
	// prompt and the reply; Reported is false when it said nothing.
	InputTokens, OutputTokens int64
	Reported                  bool
}

// ModelClient calls a model through its provider (engine/llm), one of the
// kinds the host offers: OpenAI and every OpenAI-compatible server
// (llama.cpp's server, ollama, vLLM, LM Studio, ...), Anthropic or Gemini
// in the studio.
type ModelClient struct {
	// HTTP makes the calls. The studio gives builtin.ModelHTTPClient, behind
	// the address guard; nil is http.DefaultClient, unguarded (tests).
	HTTP *http.Client
	// Providers are the provider kinds calls may go to. A Runtime's client
	// without them calls through its set's (LoadOptions.Providers).
	Providers llm.Kinds
	Getenv    func(string) string // default: os.Getenv
	// Prices price calls for the budgets in cost that ctx carries (spend);
	// nil: a call under such a budget is refused, as unpriced.
	Prices *pricing.Prices
	// Retry is how a call answered 429 or 5xx is tried again (zero: the
	// defaults, DefaultRetry).
	Retry Retry
}

// BudgetMaxTokens caps the reply of a call held to a budget when its model
// sets no max_tokens: a worst case needs a cap, so the cap is sent.
const BudgetMaxTokens = 4096

// Endpoint returns the URL an openai model's requests go to: the url as
// written, or with /chat/completions appended when it ends with /v1.
func Endpoint(url string) string {
	u := strings.TrimRight(url, "/")
	if strings.HasSuffix(u, "/v1") {
		return u + "/chat/completions"
	}
	return url
}

// Complete sends one chat turn and returns the reply's text. Errors name the
// model, its endpoint and what the server said; the context bounds the call.
func (mc *ModelClient) Complete(ctx context.Context, m *Model, messages []Message) (string, error) {
	a, err := mc.Chat(ctx, "", m, messages)
	return a.Content, err
}

// Chat is Complete returning the answer with its token usage. agent names
// the calling agent for tracing. When ctx carries a tool.Tracer the call is
// a span of its own and its trace context travels in the request headers.
func (mc *ModelClient) Chat(ctx context.Context, agent string, m *Model, messages []Message) (Answer, error) {
	t, err := mc.resolveTarget(ctx, m)
	if err != nil {
		return Answer{}, err
	}
	// url is what errors show: the endpoint without its user info and query
	// values, which may hold credentials (http://user:pass@host/v1?api_key=K).
	url := redact.URL(t.endpoint)
	tr := tool.TracerFrom(ctx)
	if tr == nil {
		return mc.chat(ctx, m, messages, t, url)
	}
	ctx, end := tr.ModelCall(ctx, tool.ModelCall{Agent: agent, Provider: t.provider, Model: m.Name, Endpoint: url})
	a, err := mc.chat(ctx, m, messages, t, url)
	end(tool.ModelResult{ResponseModel: a.Model, InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, Err: err})
	return a, err
}

// target is where one call goes and with which key.
type target struct {
	provider string
	kind     llm.Kind
	api      string // the openai wire: chat_completions or responses
	// base is the provider's base URL ("" for its public endpoint).
	base string
	// endpoint is the URL errors and traces name.
	endpoint string
	// pin, when set, is the exact URL an openai call is sent to: a url
	// that is an endpoint rather than a base (an Azure-style path with an
	// api-version query, a gateway's own path).
	pin *neturl.URL
	// key is the credential's key; keyed says a credential gave it (so
	// api_key_env is not read).
	key   string
	keyed bool
	// secret is the credential that gave the key: every request of the
	// call, redirects included, goes only to its allowed hosts.
	secret *tool.Secret
}

// resolveTarget finds the call's provider, URLs and, for a model with a
// credential, the key (resolved through the run's credential store).
func (mc *ModelClient) resolveTarget(ctx context.Context, m *Model) (target, error) {
	t, err := mc.resolveURLs(ctx, m)
	if err != nil || t.secret == nil {
		return t, err
	}
	// Refused before anything is sent; the call's transport checks each
	// request again, redirects included.
	u, err := neturl.Parse(t.endpoint)
	if err != nil {
		return target{}, fmt.Errorf("model %s at %s: %w", m.Name, redact.URL(t.endpoint), unwrapURLError(err))
	}
	if err := t.secret.Allows(u); err != nil {
		return target{}, fmt.Errorf("model %s: %w", m.Name, err)
	}
	return t, nil
}

func (mc *ModelClient) resolveURLs(ctx context.Context, m *Model) (target, error) {
	t := target{provider: m.ProviderOrDefault(), api: m.API}
	k, err := mc.kind(m)
	if err != nil {
		return target{}, err
	}
	t.kind = k
	base := ""
	if m.Credential != "" {
		s, err := modelSecret(ctx, m, k)
		if err != nil {
			return target{}, err
		}
		t.key, t.keyed, t.secret = valueString(s.Values, "api_key"), true, s
		if s.Type == credential.OpenAICompatible {
			base = valueString(s.Values, "base_url")
		}
	}
	if !k.OpenAIWire {
		t.base = m.URL
		t.endpoint = k.Endpoint(t.baseOrDefault(), m.Name, false)
		return t, nil
	}
	if t.api == APIResponses {
		// The Responses API: the url is the base (…/v1), or its
		// /responses endpoint.
		b := m.URL
		if b == "" {
			b = base
		}
		if b == "" {
			return target{}, errNoBaseURL(m)
		}
		t.base = strings.TrimSuffix(strings.TrimRight(b, "/"), "/responses")
		t.endpoint = t.base + "/responses"
		return t, nil
	}
	if m.URL == "" {
		if base == "" {
			return target{}, errNoBaseURL(m)
		}
		t.base, t.endpoint = base, strings.TrimRight(base, "/")+"/chat/completions"
		return t, nil
	}
	t.endpoint = Endpoint(m.URL)
	if t.endpoint != m.URL {
		// A url ending in /v1 is the base the SDK appends /chat/completions to.
		t.base = m.URL
		return t, nil
	}
	// Any other url is the endpoint itself (…/chat/completions, maybe with
	// an api-version query, or a gateway's own path). The SDK would append
	// /chat/completions to a base and drop its query, so the request is
	// pinned to the url as written; the base keeps the SDK on its origin.
	pin, err := neturl.Parse(m.URL)
	if err != nil {
		return target{}, fmt.Errorf("model %s at %s: %w", m.Name, redact.URL(m.URL), unwrapURLError(err))
	}
	b := *pin
	b.RawQuery, b.Fragment, b.RawPath = "", "", ""
	b.Path = strings.TrimSuffix(b.Path, "/chat/completions")
	t.base, t.pin = b.String(), pin
	return t, nil
}

// kind is the provider kind m names, among those mc offers.
func (mc *ModelClient) kind(m *Model) (llm.Kind, error) {
	k, ok := mc.Providers.Get(m.ProviderOrDefault())
	if !ok {
		return llm.Kind{}, fmt.Errorf("model %s: model.provider %q is not a provider this host offers (%s)", m.Name, m.ProviderOrDefault(), strings.Join(mc.Providers.Names(), ", "))
	}
	return k, nil
}

// baseOrDefault is t's base, or its kind's public API when it has none.
func (t target) baseOrDefault() string {
	if t.base == "" {
		return t.kind.DefaultURL
	}
	return t.base
}

// errNoBaseURL is an openai model with neither a url nor a credential that
// gives one.
func errNoBaseURL(m *Model) error {
	return fmt.Errorf("model %s: model.url is required: credential %q gives no base URL (only an %s credential does)", m.Name, m.Credential, credential.OpenAICompatible)
}

// modelSecret resolves the model's credential and checks that its type fits
// the provider.
func modelSecret(ctx context.Context, m *Model, k llm.Kind) (*tool.Secret, error) {
	store := tool.CredentialsFrom(ctx)
	if store == nil {
		return nil, fmt.Errorf("model %s: model.credential %q cannot be resolved: %w", m.Name, m.Credential, tool.ErrNoCredentials)
	}
	s, err := store.Credential(ctx, m.Credential)
	if err != nil {
		return nil, fmt.Errorf("model %s: credential %q: %w", m.Name, m.Credential, err)
	}
	if !slices.Contains(k.CredentialTypes, s.Type) {
		return nil, fmt.Errorf("model %s: credential %q is of type %s, which the %s provider cannot use (it takes %s)",
			m.Name, m.Credential, s.Type, k.Name, strings.Join(k.CredentialTypes, " or "))
	}
	return s, nil
}

func valueString(v map[string]any, name string) string {
	s, _ := v[name].(string)
	return s
}

func (mc *ModelClient) chat(ctx context.Context, m *Model, messages []Message, t target, url string) (Answer, error) {
	req := llm.Request{}
	var system []string
	for _, msg := range messages {
		switch msg.Role {
		case "system":
			system = append(system, msg.Content)
		case "user":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: msg.Content})
		case "assistant":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Text: msg.Content})
		default:
			return Answer{}, fmt.Errorf("model %s at %s: message role %q is not system, user or assistant", m.Name, url, msg.Role)
		}
	}
	req.System = strings.Join(system, "\n\n")
	reply, err := mc.send(ctx, m, req, nil, t, url)
	if err != nil {
		return Answer{}, err
	}
	if reply.Stop == llm.StopRefused && reply.Text == "" {
		return Answer{}, fmt.Errorf("model %s at %s: the provider refused to answer", m.Name, url)
	}
	return Answer{Content: reply.Text, Model: reply.Model, InputTokens: reply.Usage.InputTokens,
		OutputTokens: reply.Usage.OutputTokens, Reported: reply.Usage.Reported}, nil
}

// Turn sends one turn of a conversation (tools, schema and stream as the
// request and stream say; the model, temperature and max_tokens come from
// m) and returns the provider's reply. Errors are those of Chat. agent
// names the calling agent for tracing.
func (mc *ModelClient) Turn(ctx context.Context, agent string, m *Model, req llm.Request, stream *llm.Stream) (*llm.Reply, error) {
	t, err := mc.resolveTarget(ctx, m)
	if err != nil {
		return nil, err
	}
	if stream != nil && !t.kind.OpenAIWire {
		t.endpoint = t.kind.Endpoint(t.baseOrDefault(), m.Name, true)
	}
	url := redact.URL(t.endpoint)
	tr := tool.TracerFrom(ctx)
	if tr == nil {
		return mc.send(ctx, m, req, stream, t, url)
	}
	ctx, end := tr.ModelCall(ctx, tool.ModelCall{Agent: agent, Provider: t.provider, Model: m.Name, Endpoint: url})
	reply, err := mc.send(ctx, m, req, stream, t, url)
	res := tool.ModelResult{Err: err}
	if reply != nil {
		res.ResponseModel, res.InputTokens, res.OutputTokens = reply.Model, reply.Usage.InputTokens, reply.Usage.OutputTokens
	}
	end(res)
	return reply, err
}

// send makes one call to t's provider with the model's settings, held to
// the budgets ctx carries (spend.Accounts): the call's worst case is
// reserved on all of them before it is made, or the call is refused with
// an error of code budget_exceeded; the reservation is settled to the
// usage the provider reports, or kept whole when it reports none, and
// given back when the call fails.
func (mc *ModelClient) send(ctx context.Context, m *Model, req llm.Request, stream *llm.Stream, t target, url string) (*llm.Reply, error) {
	accounts := spend.Accounts(ctx)
	if a := spend.ForCredential(ctx, m.Credential); a != nil {
		accounts = append(slices.Clip(accounts), a)
	}
	if len(accounts) == 0 {
		return mc.call(ctx, m, req, stream, t, url)
	}
	capped := *m
	if capped.MaxTokens <= 0 {
		capped.MaxTokens = BudgetMaxTokens
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("model %s: sizing the request for its budget: %w", m.Name, err)
	}
	in, out := spend.InputTokens(len(body)), int64(capped.MaxTokens)
	want := spend.Amount{Tokens: in + out}
	if spend.NeedsCost(accounts) {
		cost, ok := mc.Prices.Cost(m.Name, in, out)
		if !ok {
			return nil, &spend.UnpricedError{Model: m.Name, Flag: "--prices"}
		}
		want.Cost = cost
	}
	hold, err := spend.Reserve(accounts, want)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", m.Name, err)
	}
	reply, err := mc.call(ctx, &capped, req, stream, t, url)
	if err != nil {
		hold.Release()
		return nil, err
	}
	u := reply.Usage
	used := spend.Amount{Tokens: u.InputTokens + u.OutputTokens}
	used.Cost, _ = mc.Prices.Cost(m.Name, u.InputTokens, u.OutputTokens)
	hold.Settle(used, u.Reported)
	return reply, nil
}

// call makes one call to t's provider with the model's settings.
func (mc *ModelClient) call(ctx context.Context, m *Model, req llm.Request, stream *llm.Stream, t target, url string) (*llm.Reply, error) {
	req.Model, req.Temperature, req.MaxTokens = m.Name, m.Temperature, int(m.MaxTokens)
	key := t.key
	if !t.keyed && m.APIKeyEnv != "" {
		key = mc.getenv(m.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("model %s: model.api_key_env names %s, which is not set (or empty) in the studio's environment", m.Name, m.APIKeyEnv)
		}
	}
	p, seen, err := mc.provider(t, key, stream != nil)
	if err != nil {
		return nil, fmt.Errorf("model %s at %s: %s", m.Name, url, clipped(llm.Scrub(err.Error(), key)))
	}
	reply, err, tries := mc.Retry.chat(ctx, p, req, stream, seen)
	whole := false
	if errors.Is(err, errNotStreamed) {
		// The server ignored stream and answered with the whole reply (some
		// OpenAI-compatible servers do). It was made and billed: read it as
		// it came rather than asking again.
		whole = true
		reply, err = replay(ctx, t, key, req, stream, seen)
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return nil, cause
		}
		if why := refusal(err); why != "" {
			return nil, &modelError{text: fmt.Sprintf("model %s at %s: %s", m.Name, url, why), err: err}
		}
		text := clipped(providerText(err, t, key))
		switch {
		case tries.attempts > 1:
			text += fmt.Sprintf(" (answered %d %d times, retried with backoff%s)", tries.status, tries.attempts, tries.stopped)
		case tries.stopped != "":
			text += " (not retried" + tries.stopped + ")"
		}
		if body := seen.start.String(); body != "" && (stream == nil || whole) {
			// The server answered success with a body the provider could
			// not read: what it sent says why.
			text += ": the answer begins " + clipped(llm.Scrub(body, key))
		}
		return nil, &modelError{text: fmt.Sprintf("model %s at %s: %s", m.Name, url, text), err: err}
	}
	return reply, nil
}

// provider builds t's provider for one call, with the key and mc's client.
func (mc *ModelClient) provider(t target, key string, streamed bool) (llm.Provider, *answerSeen, error) {
	// The address guard is in mc.HTTP (builtin.ModelHTTPClient).
	client := mc.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	hc, seen := withCall(client, t, streamed)
	cfg := llm.Config{BaseURL: t.base, APIKey: key, HTTPClient: hc, MaxResponseBytes: maxModelResponse}
	p, err := t.kind.New(t.api, cfg)
	return p, seen, err
}

// replay has t's provider read the whole answer a streamed call got (kept
// in seen) as the reply, without another request: a JSON object is the
// provider's plain reply; a JSON array is Gemini's chunks as its API sends
// them without alt=sse, read as its stream; anything else is an event
// stream labelled otherwise. A plain reply's text goes to the stream in one
// piece, so that the run shows it as it shows streamed text.
func replay(ctx context.Context, t target, key string, req llm.Request, stream *llm.Stream, seen *answerSeen) (*llm.Reply, error) {
	res, body := seen.whole, seen.wholeBody
	lead := bytes.TrimSpace(body)
	streamed, contentType := true, "text/event-stream"
	switch {
	case len(lead) > 0 && lead[0] == '{':
		streamed, contentType = false, "application/json"
	case len(lead) > 0 && lead[0] == '[':
		var chunks []json.RawMessage
		if err := json.Unmarshal(lead, &chunks); err != nil {
			return nil, fmt.Errorf("the answer is a JSON array that cannot be read: %w", err)
		}
		var sse bytes.Buffer
		for _, c := range chunks {
			sse.WriteString("data: ")
			_ = json.Compact(&sse, c)
			sse.WriteString("\n\n")
		}
		body = sse.Bytes()
	}
	client := &http.Client{Transport: replayTransport{res: res, body: body, contentType: contentType, start: &seen.start}}
	p, err := t.kind.New(t.api, llm.Config{BaseURL: t.base, APIKey: key, HTTPClient: client, MaxResponseBytes: maxModelResponse})
	if err != nil {
		return nil, err
	}
	if !streamed {
		reply, err := p.Chat(ctx, req, nil)
		if err == nil && reply.Text != "" && stream.Text != nil {
			stream.Text(reply.Text)
		}
		return reply, err
	}
	return p.Chat(ctx, req, stream)
}

// replayTransport answers a provider's request with an answer already
// read, making no request.
type replayTransport struct {
	res         *http.Response
	body        []byte
	contentType string
	start       *bodyStart
}

func (t replayTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res := *t.res
	res.Header = t.res.Header.Clone()
	res.Header.Set("Content-Type", t.contentType)
	res.Header.Del("Content-Length")
	res.ContentLength = int64(len(t.body))
	res.Body = &startReader{ReadCloser: io.NopCloser(bytes.NewReader(t.body)), start: t.start}
	res.Request = req
	return &res, nil
}

// withCall returns a client that makes client's requests for one call: with
// the call's trace context in their headers, sent to t.pin when it is set,
// and, for openai, with a successful answer read as JSON whatever its
// Content-Type says (compatible servers and gateways often label their JSON
// text/plain, and the SDK refuses a body not labelled JSON). The start of
// the body is kept for an error that says the answer could not be read,
// and a streamed call's answer that is not an event stream is read whole
// (see replay).
func withCall(client *http.Client, t target, streamed bool) (*http.Client, *answerSeen) {
	cc := *client
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	seen := &answerSeen{}
	cc.Transport = callTransport{base: base, pin: t.pin, json: t.kind.OpenAIWire, streamed: streamed, seen: seen, secret: t.secret}
	return &cc, seen
}

type callTransport struct {
	base     http.RoundTripper
	pin      *neturl.URL
	json     bool
	streamed bool // the call asked for a stream
	seen     *answerSeen
	secret   *tool.Secret // the key's credential, whose allowed hosts bound every request
}

// answerSeen is what a call's transport kept of its successful answer.
type answerSeen struct {
	start bodyStart
	// status and retryAfter are the last answer's when it was not a
	// success: what decides whether the call is tried again.
	status     int
	retryAfter string
	// whole and wholeBody are a streamed call's answer that was not an
	// event stream, its body read to the end.
	whole     *http.Response
	wholeBody []byte
}

// errNotStreamed is a streamed call answered with something other than an
// event stream: a server that ignores stream and sends the whole reply,
// which the transport keeps for replay.
var errNotStreamed = errors.New("the server answered a streamed request with a whole reply")

func (t callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	tool.InjectTrace(r.Context(), r.Header)
	if t.pin != nil {
		u := *t.pin
		r.URL = &u
	}
	if t.secret != nil {
		// The client calls this for the first request and for every
		// redirect it follows, so the key never leaves its allowed hosts.
		if err := t.secret.Allows(r.URL); err != nil {
			return nil, err
		}
	}
	res, err := t.base.RoundTrip(r)
	if err == nil && (res.StatusCode < 200 || res.StatusCode > 299) {
		t.seen.status, t.seen.retryAfter = res.StatusCode, res.Header.Get("Retry-After")
	}
	if err != nil || res.StatusCode < 200 || res.StatusCode > 299 || res.Body == nil {
		return res, err
	}
	if t.streamed && !strings.Contains(res.Header.Get("Content-Type"), "event-stream") {
		// Read here, under the response cap, and handed to replay through
		// the SDK's error path: the SDK's stream reader cannot read it.
		body, err := io.ReadAll(io.LimitReader(res.Body, maxModelResponse+1))
		res.Body.Close()
		if err != nil {
			return nil, err
		}
		if len(body) > maxModelResponse {
			return nil, &llm.TooLargeError{Limit: maxModelResponse}
		}
		t.seen.whole, t.seen.wholeBody = res, body
		return nil, errNotStreamed
	}
	if t.json && !strings.Contains(res.Header.Get("Content-Type"), "json") {
		res.Header.Set("Content-Type", "application/json")
	}
	res.Body = &startReader{ReadCloser: res.Body, start: &t.seen.start}
	return res, nil
}

// bodyStart is the first bytes of a call's successful answer.
type bodyStart struct {
	mu sync.Mutex
	b  []byte
}

const maxBodyStart = 300

func (s *bodyStart) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

type startReader struct {
	io.ReadCloser
	start *bodyStart
}

func (r *startReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.start.mu.Lock()
	if room := maxBodyStart - len(r.start.b); room > 0 {
		r.start.b = append(r.start.b, p[:min(n, room)]...)
	}
	r.start.mu.Unlock()
	return n, err
}

// modelError is a failed call in the agent's words that still unwraps to
// the provider's error (a *llm.TooLargeError stays reachable).
type modelError struct {
	text string
	err  error
}

func (e *modelError) Error() string { return e.text }
func (e *modelError) Unwrap() error { return e.err }

// providerText is the provider's error without the request URL net/http
// repeats in a transport failure (it hides a password, not a user or a
// query) and without the key.
func providerText(err error, t target, key string) string {
	s := err.Error()
	var ue *neturl.Error
	if errors.As(err, &ue) {
		s = strings.ReplaceAll(s, ue.Error(), ue.Err.Error())
	}
	for _, u := range []string{t.endpoint, t.base} {
		if u != "" {
			s = strings.ReplaceAll(s, u, redact.URL(u))
		}
	}
	return llm.Scrub(s, key)
}

// unwrapURLError drops net/http's *url.Error wrapper, whose message repeats
// the full request URL.
func unwrapURLError(err error) error {
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (mc *ModelClient) getenv(name string) string {
	if mc.Getenv != nil {
		return mc.Getenv(name)
	}
	return os.Getenv(name)
}

// clipped bounds a provider's message in an error: a server's error page
// may be long.
func clipped(s string) string { return clip.String(strings.TrimSpace(s), 400) }
