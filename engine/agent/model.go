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
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chainstudio/studio/engine/redact"
	"github.com/chainstudio/studio/engine/tool"
)

// DefaultModelTimeout bounds one model call when the link sets no
// timeout_seconds.
const DefaultModelTimeout = 60 * time.Second

// maxModelResponse caps the body read from a model endpoint.
const maxModelResponse = 16 << 20

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatRequest is the OpenAI chat-completions request body.
type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	// Usage is what the server says the call consumed; servers that do not
	// count leave it out.
	Usage *struct {
		PromptTokens     json.Number `json:"prompt_tokens"`
		CompletionTokens json.Number `json:"completion_tokens"`
	} `json:"usage"`
}

// Answer is a model's reply with the tokens the server reported.
type Answer struct {
	Content string
	// Model is the model that answered, as the server names it ("" when it
	// does not say).
	Model string
	// InputTokens and OutputTokens are usage.prompt_tokens and
	// usage.completion_tokens; Reported is false when the answer had no
	// usage object.
	InputTokens, OutputTokens int64
	Reported                  bool
}

// ModelClient calls OpenAI-compatible chat-completions endpoints (OpenAI,
// llama.cpp's server, ollama, vLLM, LM Studio, ...).
type ModelClient struct {
	HTTP   *http.Client        // default: a client without a timeout (the context bounds each call)
	Getenv func(string) string // default: os.Getenv
}

// Endpoint returns the URL a model's requests go to: the url as written, or
// with /chat/completions appended when it ends with /v1.
func Endpoint(url string) string {
	u := strings.TrimRight(url, "/")
	if strings.HasSuffix(u, "/v1") {
		return u + "/chat/completions"
	}
	return url
}

// Complete sends one chat-completions request and returns
// choices[0].message.content. Errors name the endpoint, the HTTP status and a
// snippet of the body; the context bounds the call.
func (mc *ModelClient) Complete(ctx context.Context, m *Model, messages []Message) (string, error) {
	a, err := mc.Chat(ctx, "", m, messages)
	return a.Content, err
}

// Chat is Complete returning the answer with its token usage. agent names
// the calling agent for tracing. When ctx carries a tool.Tracer the call is
// a span of its own and its trace context travels in the request headers.
func (mc *ModelClient) Chat(ctx context.Context, agent string, m *Model, messages []Message) (Answer, error) {
	endpoint := Endpoint(m.URL)
	// url is what errors show: the endpoint without its user info and query
	// values, which may hold credentials (http://user:pass@host/v1?api_key=K).
	url := redact.URL(endpoint)
	tr := tool.TracerFrom(ctx)
	if tr == nil {
		return mc.chat(ctx, m, messages, endpoint, url)
	}
	ctx, end := tr.ModelCall(ctx, tool.ModelCall{Agent: agent, Model: m.Name, Endpoint: url})
	a, err := mc.chat(ctx, m, messages, endpoint, url)
	end(tool.ModelResult{ResponseModel: a.Model, InputTokens: a.InputTokens, OutputTokens: a.OutputTokens, Err: err})
	return a, err
}

func (mc *ModelClient) chat(ctx context.Context, m *Model, messages []Message, endpoint, url string) (Answer, error) {
	body, err := json.Marshal(chatRequest{Model: m.Name, Messages: messages, Temperature: m.Temperature})
	if err != nil {
		return Answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("model %s at %s: %w", m.Name, url, unwrapURLError(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	tool.InjectTrace(ctx, req.Header)
	if m.APIKeyEnv != "" {
		key := mc.getenv(m.APIKeyEnv)
		if key == "" {
			return Answer{}, fmt.Errorf("model %s: model.api_key_env names %s, which is not set (or empty) in the studio's environment", m.Name, m.APIKeyEnv)
		}
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := mc.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return Answer{}, cause
		}
		return Answer{}, fmt.Errorf("model %s at %s: %w", m.Name, url, unwrapURLError(err))
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, maxModelResponse+1))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return Answer{}, cause
		}
		return Answer{}, fmt.Errorf("model %s at %s: reading the response: %w", m.Name, url, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return Answer{}, fmt.Errorf("model %s at %s answered %s: %s", m.Name, url, res.Status, snippet(raw))
	}
	if len(raw) > maxModelResponse {
		return Answer{}, fmt.Errorf("model %s at %s: the response is over %d bytes", m.Name, url, maxModelResponse)
	}
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return Answer{}, fmt.Errorf("model %s at %s: the response is not chat-completions JSON (%v): %s", m.Name, url, err, snippet(raw))
	}
	if len(cr.Choices) == 0 || cr.Choices[0].Message.Content == nil {
		return Answer{}, fmt.Errorf("model %s at %s: the response has no choices[0].message.content: %s", m.Name, url, snippet(raw))
	}
	a := Answer{Content: *cr.Choices[0].Message.Content, Model: cr.Model}
	if u := cr.Usage; u != nil {
		a.InputTokens, a.OutputTokens = tokens(u.PromptTokens), tokens(u.CompletionTokens)
		a.Reported = true
	}
	return a, nil
}

// tokens reads a usage count; a missing, negative or malformed one is 0 (a
// server's odd usage never fails the answer it came with).
func tokens(n json.Number) int64 {
	v, err := n.Int64()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// unwrapURLError drops net/http's *url.Error wrapper, whose message repeats
// the full request URL (it hides a password, not a user or a query).
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

// snippet is the start of a body for an error message.
func snippet(b []byte) string {
	const max = 300
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty body)"
	}
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
