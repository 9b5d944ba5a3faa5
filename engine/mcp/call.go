package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chainstudio/studio/engine/internal/clip"
)

// Result is a tool call's output, in the shape chains read:
//
//	{"text": "<every text item, joined by newlines>",
//	 "structured": <the structuredContent, or null>,
//	 "content": [{"type": "text", "text": "…"} |
//	             {"type": "image" or "audio", "mime_type": "…", "bytes": N} |
//	             {"type": "resource", "uri": "…", "mime_type": "…", "text": "…"} |
//	             {"type": "resource_link", "uri": "…", "name": "…", "mime_type": "…"}]}
//
// Images, audio and binary resources keep only their size: a chain has no use
// for the bytes, and they would swell every stored run.
type Result struct {
	Text       string    `json:"text"`
	Structured any       `json:"structured"`
	Content    []Content `json:"content"`
}

// Content is one item of a Result's content.
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Bytes    *int   `json:"bytes,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Value is the result as plain JSON values (maps, slices, strings, float64
// numbers), the form the engine passes between nodes.
func (r Result) Value() map[string]any {
	b, _ := json.Marshal(r) // every field marshals
	var v map[string]any
	_ = json.Unmarshal(b, &v)
	return v
}

// ToolError is a call the server ran and reported as failed (isError).
type ToolError struct {
	Tool string // the tool's id
	Text string // the server's text content
}

func (e *ToolError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("mcp tool %s failed (the server gave no message)", e.Tool)
	}
	return fmt.Sprintf("mcp tool %s failed: %s", e.Tool, clip.String(e.Text, maxErrorText))
}

// maxErrorText bounds the server's text in an error's message (ToolError's
// Text keeps all of it).
const maxErrorText = 4 << 10

// RPCError is a JSON-RPC error the server answered a call with.
type RPCError struct {
	Tool    string
	Code    int64
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("mcp tool %s: the server answered with error %d: %s", e.Tool, e.Code, clip.String(e.Message, maxErrorText))
}

// ErrUnavailable is wrapped by the error of a call to a server that is not
// connected.
var ErrUnavailable = errors.New("the MCP server is unavailable")

// Call calls a tool of the catalog. The server learns when ctx ends (the SDK
// sends notifications/cancelled), so a deadline or cancellation stops its
// work too. The result must fit MaxResultBytes.
func (m *Manager) Call(ctx context.Context, toolID string, args map[string]any) (Result, error) {
	name, toolName, ok := ParseToolID(toolID)
	if !ok {
		return Result{}, fmt.Errorf("%q is not an MCP tool id (mcp:<server>/<tool>)", toolID)
	}
	s := m.byName[name]
	if s == nil {
		return Result{}, fmt.Errorf("mcp tool %s: no MCP server is named %q", toolID, name)
	}
	s.mu.Lock()
	cs, st := s.session, s.status
	_, known := s.byName[toolName]
	dropped, wasDropped := s.dropped[toolName]
	s.mu.Unlock()
	switch {
	case cs == nil || st.State != StateAvailable:
		why := st.Reason
		if why == "" {
			why = st.State
		}
		return Result{}, fmt.Errorf("mcp tool %s: %w: %s", toolID, ErrUnavailable, why)
	case wasDropped:
		return Result{}, fmt.Errorf("mcp tool %s is not in the catalog: %s", toolID, dropped)
	case !known:
		return Result{}, fmt.Errorf("mcp tool %s: server %q lists no tool %q", toolID, name, toolName)
	}
	if args == nil {
		args = map[string]any{}
	}
	params := &sdk.CallToolParams{Name: toolName, Arguments: args}
	token := ""
	if f := progressFunc(ctx); f != nil {
		token = s.progress.add(f)
		defer s.progress.remove(token)
		params.SetProgressToken(token)
	}
	cctx, lim := withBodyLimit(ctx, m.opts.MaxResultBytes+resultSlack)
	res, err := cs.CallTool(cctx, params)
	if token != "" {
		// Notifications read before the result are still on their way to
		// the handler: the caller has them all before it has the result.
		s.progress.drain(ctx, token)
	}
	tooLarge := &LimitError{What: "result", Limit: "MaxResultBytes", Max: m.opts.MaxResultBytes}
	if err != nil {
		var werr *jsonrpc.Error
		switch {
		case lim.tripped.Load() || strings.Contains(err.Error(), "maximum line length"):
			return Result{}, fmt.Errorf("mcp tool %s: %w", toolID, tooLarge)
		case ctx.Err() != nil:
			return Result{}, fmt.Errorf("mcp tool %s: %w", toolID, ctx.Err())
		case errors.As(err, &werr):
			return Result{}, &RPCError{Tool: toolID, Code: werr.Code, Message: werr.Message}
		}
		return Result{}, fmt.Errorf("mcp tool %s: %w", toolID, err)
	}
	if b, err := json.Marshal(res); err != nil || len(b) > m.opts.MaxResultBytes {
		return Result{}, fmt.Errorf("mcp tool %s: %w", toolID, tooLarge)
	}
	out := convert(res)
	if res.IsError {
		return Result{}, &ToolError{Tool: toolID, Text: out.Text}
	}
	return out, nil
}

func convert(res *sdk.CallToolResult) Result {
	out := Result{Structured: res.StructuredContent, Content: make([]Content, 0, len(res.Content))}
	var texts []string
	size := func(n int) *int { return &n }
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			texts = append(texts, c.Text)
			out.Content = append(out.Content, Content{Type: "text", Text: c.Text})
		case *sdk.ImageContent:
			out.Content = append(out.Content, Content{Type: "image", MIMEType: c.MIMEType, Bytes: size(len(c.Data))})
		case *sdk.AudioContent:
			out.Content = append(out.Content, Content{Type: "audio", MIMEType: c.MIMEType, Bytes: size(len(c.Data))})
		case *sdk.EmbeddedResource:
			item := Content{Type: "resource"}
			if r := c.Resource; r != nil {
				item.URI, item.MIMEType, item.Text = r.URI, r.MIMEType, r.Text
				if r.Blob != nil {
					item.Bytes = size(len(r.Blob))
				}
			}
			out.Content = append(out.Content, item)
		case *sdk.ResourceLink:
			out.Content = append(out.Content, Content{Type: "resource_link", URI: c.URI, Name: c.Name, MIMEType: c.MIMEType})
		default:
			out.Content = append(out.Content, Content{Type: "unknown"})
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}
