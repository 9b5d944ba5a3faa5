package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/chainstudio/studio/engine/llm"
)

// toolBlock is a tool_use block being streamed: its input arrives as
// pieces of JSON text (input_json_delta) to be joined.
type toolBlock struct {
	index int64
	id    string
	name  string
	input strings.Builder
}

// chatStream reads the SSE events of a streamed message. Text deltas go to
// stream.Text as they come; with a reply schema it is the schema tool's
// input that is the reply's text, so its pieces are what is streamed (and
// text blocks are not), keeping the streamed pieces equal to Reply.Text.
func (p *provider) chatStream(ctx context.Context, params sdk.MessageNewParams, schemaTool string, stream *llm.Stream) (*llm.Reply, error) {
	s := p.client.Messages.NewStreaming(ctx, params)
	defer s.Close()

	emit := func(delta string) {
		if delta != "" && stream.Text != nil {
			stream.Text(delta)
		}
	}
	var (
		reply   llm.Reply
		text    strings.Builder
		tools   = map[int64]*toolBlock{}
		stop    sdk.StopReason
		stopped bool
	)
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			reply.Model = ev.Message.Model
			if ev.Message.JSON.Usage.Valid() {
				reply.Usage = llm.Usage{InputTokens: ev.Message.Usage.InputTokens, OutputTokens: ev.Message.Usage.OutputTokens, Reported: true}
			}
		case "content_block_start":
			switch cb := ev.ContentBlock; cb.Type {
			case "tool_use":
				tb := &toolBlock{index: ev.Index, id: cb.ID, name: cb.Name}
				tools[ev.Index] = tb
			case "text":
				if schemaTool == "" {
					text.WriteString(cb.Text)
					emit(cb.Text)
				}
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				if schemaTool == "" {
					text.WriteString(ev.Delta.Text)
					emit(ev.Delta.Text)
				}
			case "input_json_delta":
				tb := tools[ev.Index]
				if tb == nil {
					continue
				}
				tb.input.WriteString(ev.Delta.PartialJSON)
				if schemaTool != "" && tb.name == schemaTool {
					emit(ev.Delta.PartialJSON)
				}
			}
		case "message_delta":
			stop = ev.Delta.StopReason
			if ev.JSON.Usage.Valid() {
				// message_delta's counts are the totals so far.
				if ev.Usage.JSON.InputTokens.Valid() && ev.Usage.InputTokens > 0 {
					reply.Usage.InputTokens = ev.Usage.InputTokens
				}
				reply.Usage.OutputTokens = ev.Usage.OutputTokens
				reply.Usage.Reported = true
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if !stopped {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the stream ended before message_stop")
	}

	reply.Text = text.String()
	order := make([]int64, 0, len(tools))
	for i := range tools {
		order = append(order, i)
	}
	slices.Sort(order)
	answered := false
	for _, i := range order {
		tb := tools[i]
		args := rawOr(json.RawMessage(tb.input.String()))
		if schemaTool != "" && tb.name == schemaTool {
			if tb.input.Len() == 0 {
				// Nothing was streamed for it: the reply's text is "{}".
				emit(string(args))
			}
			reply.Text = string(args)
			answered = true
			continue
		}
		reply.ToolCalls = append(reply.ToolCalls, llm.ToolCall{ID: tb.id, Name: tb.name, Arguments: args})
	}
	reply.Stop = stopOf(stop, answered && len(reply.ToolCalls) == 0)
	return &reply, nil
}
